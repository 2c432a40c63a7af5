import LVBCore
import LVBCrypto
import LVBGossip

// Relay positions travel along the media tree, not through the room's
// gossip (`TreeView`): the room checks and applies the ones a member sends,
// and hands them to the tree, which passes on what its parent sent.
extension RoomNode {
    /// Signed relay positions from `peer` (its own, or ones it passes on):
    /// each checked and applied here, never passed on by gossip. Anything
    /// else, or a position for another room, costs the sender standing.
    func positionsReceived(_ events: [[UInt8]], from peer: NodeID) {
        guard let state, isAdmitted, peer == host || verified.contains(peer) else { return }
        positionBytesIn += events.reduce(0) { $0 + 2 + $1.count }
        var held: [RoomEvent] = []
        for bytes in events {
            guard let e = try? RoomEvent.parse(bytes[...], kinds: RoomEvents.table), e.room == room,
                  e.body.kind == RelayPosition.kind else {
                penalize(peer)
                return
            }
            if e.author != core.nodeID { applyHere(e, from: peer) }
            if state.relays[e.author]?.id == e.id { held.append(e) }
        }
        if !held.isEmpty { onSignal?(.positions(peer, held)) }
    }

    /// Sends `events` to `peer`, as many messages as they take.
    func sendPositions(_ events: [RoomEvent], to peer: NodeID) {
        let limit = core.maxPayload
        for m in PositionsMessage.bundles(events.map(\.encoded), limit: limit) { send(RoomMessage(content: m), to: peer) }
    }
}
