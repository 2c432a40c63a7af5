import LVBCore
import LVBCrypto
import LVBTransport

/// Where a node goes when placement offers nothing, and what it keeps of
/// the nodes it left out.
extension TreeAttachment {
    /// A node left out of placement for a while.
    struct Exclusion {
        var until: Instant
        /// Kept for the whole time whatever it publishes (it moved us down).
        var sticky = false
        /// Its position said it was full since it refused us.
        var sawFull = false

        /// Whether a node that refused us has since said it was full, then
        /// that it has a free slot again (a child of its left): worth asking
        /// again before the time is up, or a node whose every candidate once
        /// refused waits out `refusedFor` without a stream. (A refusal often
        /// meets a position that said "free" before the slot was taken.)
        mutating func hasRoomAgain(_ position: RelayPosition?) -> Bool {
            guard !sticky, let position else { return false }
            if position.free <= 0 { sawFull = true }
            return sawFull && position.free > 0
        }
    }

    /// With no candidate at all, one that merely did not answer in time, a
    /// while ago (under loss a subscription and its answers can all be lost,
    /// or our pass reach it late): asked again rather than waiting out
    /// `refusedFor` with no stream. Nodes silenced with a dead parent stay out.
    func askAgain(_ placement: TreePlacement, excluding: Set<NodeID>, now: Instant) -> NodeID? {
        let retry = Set(unanswered.filter { now - $0.value >= RoomConstants.askAgainAfter }.keys)
        guard !retry.isEmpty else { return nil }
        let again = placement.candidates(for: core.nodeID, excluding: excluding, silent: Set(silenced.keys).subtracting(retry), asker: asker)
        guard let next = again.first(where: retry.contains) ?? again.first else { return nil }
        unanswered[next] = nil
        silenced[next] = nil
        return next
    }

    /// With nowhere else to go, the host, at most every `hostAskedEvery`
    /// whatever it said last: a full host sends its directory with its
    /// refusal (our view holds only what our parent passed us, and the
    /// positions of those that turned us away).
    func askHost(now: Instant) -> NodeID? {
        if let last = hostAsked, now - last < RoomConstants.hostAskedEvery { return nil }
        hostAsked = now
        excluded[room.host] = nil
        silenced[room.host] = nil
        return room.host
    }

    /// A node a full one sent us to, when placement has none to offer:
    /// never ourselves, one left out, nor one the view puts below us.
    func redirect(_ placement: TreePlacement, now: Instant) -> NodeID? {
        redirects = redirects.filter { $0.value > now }
        let me = core.nodeID
        return redirects.keys.sorted { $0.text < $1.text }.first {
            excluded[$0] == nil && silenced[$0] == nil && !placement.isBelow($0, me)
        }
    }
}
