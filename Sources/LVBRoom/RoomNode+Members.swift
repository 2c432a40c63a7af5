import LVBCore
import LVBCrypto
import LVBGossip

// Members' own events that reach this node straight (a roster, a leaving
// message, positions along the media tree), and how far a member's coming
// and going is told.
extension RoomNode {
    /// `events` parsed, if every one is `peer`'s own, for this room.
    func ownEvents(_ events: [[UInt8]], from peer: NodeID) -> [RoomEvent]? {
        let parsed = events.compactMap { try? RoomEvent.parse($0[...], kinds: RoomEvents.table) }
        guard parsed.count == events.count, parsed.allSatisfy({ $0.id.author == peer && $0.room == room }) else { return nil }
        return parsed
    }

    /// Applies a member's event here without passing it on; a refusal for
    /// misbehaviour costs the sender standing.
    func applyHere(_ e: RoomEvent, from peer: NodeID) {
        guard let state else { return }
        switch state.apply(e) {
        case .accepted(let changes): changes.forEach(report)
        case .duplicate: break
        case .rejected(let why):
            rejectedEvents += 1
            if why.isMisbehaviour { penalize(peer) }
        }
    }

    /// Whether the whole room hears of `id` coming and going: the host and
    /// the joiners the host listed (on the host, its own list, which a
    /// census shows a moment later). A relay's leave reaches those that
    /// hold a session with it (its parent, its children, the host); other
    /// members' views drop its position when it is no longer passed down
    /// (`TreeView`). A leave the host hears from one it listed goes on to
    /// the whole room, whether or not its author knew.
    func isListedRoomWide(_ id: NodeID) -> Bool {
        guard let state else { return false }
        if id == host { return true }
        return isHost ? state.listed.contains(id) : state.census?.joiners.contains(id) == true
    }
}
