import DequeModule
import LVBCore
import LVBCrypto

/// What the owner should do about a peer after it forwarded something invalid.
public enum StandingAction: Equatable, Sendable {
    /// Nothing yet.
    case none
    /// Ignore the peer's gossip for `RoomConstants.throttleDuration` (`isThrottled` says until when).
    case throttle
    /// Close the session with the peer.
    case disconnect
}

/// Per-peer standing: a peer that forwards invalid events (bad signature,
/// wrong room, moderation from a non-host, rate-limit abuse — see
/// `RoomState.RoomRejection.isMisbehaviour`) loses it. `throttleAfterInvalid`
/// (5) within `throttleWindow` (10 s) throttles the peer for
/// `throttleDuration` (30 s); `disconnectAfterInvalid` (20) within
/// `disconnectWindow` (60 s) disconnects it. Memory per peer is bounded by the
/// largest threshold; idle peers are swept.
public final class Standing {
    private struct Record {
        /// The most recent invalid events, newest last, at most `disconnectAfterInvalid`.
        var invalid = Deque<Instant>()
        var throttledUntil: Instant?
    }

    private let clock: Clock
    private var records: [NodeID: Record] = [:]
    private var sweepAt = RoomConstants.sweepThreshold
    /// Invalid events recorded, over all peers (for stats).
    public private(set) var invalidCount = 0
    /// Sessions the owner is to close, and when: a peer that lost its
    /// standing at once, a kicked member after a grace (the kick still
    /// reaches it). Queued, never done where decided: the owner may be inside
    /// the gossip layer's `receive`, and a disconnect reports `.gone` back into it.
    private var disconnects: [NodeID: Instant] = [:]

    public init(clock: Clock) {
        self.clock = clock
    }

    /// Call when `peer` forwarded an invalid event; returns what to do about it.
    public func recordInvalid(from peer: NodeID) -> StandingAction {
        let now = clock.now()
        invalidCount += 1
        var record = records[peer] ?? Record()
        record.invalid.append(now)
        if record.invalid.count > RoomConstants.disconnectAfterInvalid { record.invalid.removeFirst() }
        defer {
            records[peer] = record
            if records.count >= sweepAt { sweep(now: now) }
        }

        if Self.count(record.invalid, within: RoomConstants.disconnectWindow, now: now) >= RoomConstants.disconnectAfterInvalid {
            return .disconnect
        }
        if Self.count(record.invalid, within: RoomConstants.throttleWindow, now: now) >= RoomConstants.throttleAfterInvalid {
            record.throttledUntil = now + RoomConstants.throttleDuration
            return .throttle
        }
        return .none
    }

    /// Queues the session with `peer` to be closed at `due`.
    public func disconnect(_ peer: NodeID, at due: Instant) { disconnects[peer] = due }

    /// The peers whose session is due to be closed now (each once).
    public func dueDisconnects(now: Instant) -> [NodeID] {
        // Every tick of every node: nothing made while nothing is queued.
        guard !disconnects.isEmpty else { return [] }
        var due: [NodeID] = []
        for (peer, at) in disconnects where now >= at { due.append(peer) }
        for peer in due { disconnects[peer] = nil }
        return due
    }

    /// Whether `peer`'s gossip is to be ignored now.
    public func isThrottled(_ peer: NodeID) -> Bool {
        guard let until = records[peer]?.throttledUntil else { return false }
        return clock.now() < until
    }

    /// Forgets `peer` (for example after disconnecting it and deciding to start afresh).
    public func forget(_ peer: NodeID) {
        records[peer] = nil
    }

    /// Invalid events in the window ending now (the deque is in time order).
    private static func count(_ times: Deque<Instant>, within window: Duration, now: Instant) -> Int {
        var n = 0
        for t in times.reversed() {
            guard now - t < window else { break }
            n += 1
        }
        return n
    }

    /// Drops peers with nothing in the longest window and no throttle running.
    private func sweep(now: Instant) {
        records = records.filter { _, r in
            if let until = r.throttledUntil, now < until { return true }
            guard let last = r.invalid.last else { return false }
            return now - last < RoomConstants.disconnectWindow
        }
        sweepAt = max(RoomConstants.sweepThreshold, records.count * 2)
    }
}
