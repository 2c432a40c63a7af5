import LVBCore
import LVBCrypto
import LVBMedia
import LVBTransport

/// Whom a node blames for media its origin did not seal (lvbnode(1), WHEN A
/// PARENT LIES), sans-IO. The node that fed it the refused media is
/// suspected; it is blamed `RoomConstants.blameGrace` later unless it said
/// in the meantime that its own parent lied to it (`RelaySignal.upstreamRefused`:
/// an honest relay forwards before it checks, so its children see the same
/// lie at the same moment). Such a notice excuses what comes in the
/// `excuseWindow` after it, for `maxExcuse` at most in a row: an honest
/// relay has left its lying parent by then, and a liar that keeps excusing
/// itself is blamed like any other. A liar gains nothing from excuses that
/// a relay dropping packets does not have: nothing unsealed is ever shown.
struct MediaTrust {
    private var suspects: [NodeID: (since: Instant, failure: SealFailure)] = [:]
    /// Each feeder's run of notices: the first and the latest.
    private var notices: [NodeID: (first: Instant, last: Instant)] = [:]
    private(set) var refusals = 0
    private(set) var excused = 0

    /// Media `feeder` sent was refused for `failure`.
    mutating func refused(from feeder: NodeID, _ failure: SealFailure, now: Instant) {
        refusals += 1
        if isExcused(feeder, now: now) {
            excused += 1
            return
        }
        if suspects[feeder] == nil { suspects[feeder] = (now, failure) }
    }

    /// `peer` says what its parent sent it failed the seals.
    mutating func notice(from peer: NodeID, now: Instant) {
        if let run = notices[peer], now - run.last <= RoomConstants.excuseWindow {
            notices[peer] = (run.first, now)
        } else {
            notices[peer] = (now, now)
        }
        // It explains what we suspected it of just before (its notice left after the media).
        if let s = suspects[peer], now - s.since <= RoomConstants.blameGrace, isExcused(peer, now: now) {
            suspects[peer] = nil
            excused += 1
        }
    }

    /// A refusal at `now` is excused by a run of notices (each within
    /// `excuseWindow` of the one before) whose last came at most
    /// `excuseWindow` before it, and whose first at most `maxExcuse` before
    /// it: excuses end `maxExcuse` after a run's first notice, however many follow.
    private func isExcused(_ peer: NodeID, now: Instant) -> Bool {
        guard let run = notices[peer] else { return false }
        return now - run.last <= RoomConstants.excuseWindow && now - run.first <= RoomConstants.maxExcuse
    }

    /// The feeders to blame now: suspected a grace ago, and not excused since.
    mutating func blamed(now: Instant) -> [(NodeID, SealFailure)] {
        var out: [(NodeID, SealFailure)] = []
        for (peer, s) in suspects where now - s.since >= RoomConstants.blameGrace {
            suspects[peer] = nil
            out.append((peer, s.failure))
        }
        notices = notices.filter { now - $0.value.last <= RoomConstants.excuseWindow }
        return out
    }
}
