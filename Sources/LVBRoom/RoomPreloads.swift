import LVBCore
import LVBCrypto
import LVBGossip
import LVBMedia
import LVBTransport

/// A viewer's rooms other than the one it is in, as a role of its node: the
/// rooms next to it kept ready for a quick switch (`RoomPreload`, by room
/// id), and the rooms it switched away from while their leave goes out. A
/// preloaded room's messages are its own (`claims`): the room the node is in
/// does not see them. A room left behind hears the acknowledgements of our
/// leave until every member acknowledged it or `leaveWait` passed; then the
/// sessions only it needed end.
final class RoomPreloads: LiveRole {
    var ready: [RoomID: RoomPreload] = [:]
    /// Rooms this node switched away from, while their leave goes out (bounded by `until`).
    var departing: [(room: RoomNode, until: Instant)] = []

    private unowned let node: LiveNode

    init(node: LiveNode) { self.node = node }

    func claims(_ event: TransportEvent) -> Bool { ready.values.contains { $0.claims(event, current: node.room) } }

    func handle(_ event: NodeEvent) {
        guard case .transport(let event) = event else { return }
        guard case let .message(_, channel, payload) = event else {
            for preload in ready.values { preload.handle(event) }
            if case .gone = event { for d in departing { d.room.handle(event) } }
            return
        }
        // An acknowledgement of our leave may be for a room we switched away from.
        if channel == .room, !departing.isEmpty, (try? RoomMessage.parse(payload))?.as(LeaveAck.self) != nil {
            for d in departing { d.room.handle(event) }
        }
        ready.values.first { $0.claims(event, current: node.room) }?.handle(event)
    }

    func tick() {
        for (id, preload) in ready {
            preload.tick()
            if preload.isReady, !preload.reported {
                preload.reported = true
                node.report(.preloaded(id))
            }
        }
        tickDeparting()
    }

    /// Whether a session with `peer` serves a preload or a room we are leaving.
    func needs(_ peer: NodeID) -> Bool {
        ready.values.contains { $0.host == peer } || departing.contains { $0.room.hears(peer) }
    }

    func needsSession(with peer: NodeID) -> Bool { needs(peer) }

    private func tickDeparting() {
        guard !departing.isEmpty else { return }
        let now = node.clock.now()
        for d in departing { d.room.tick() }
        let done = departing.filter { $0.room.leaveSettled || now >= $0.until }.map(\.room)
        guard !done.isEmpty else { return }
        departing.removeAll { d in done.contains { $0 === d.room } }
        for old in done {
            old.shutdown()
            let peers = Set(Array(old.verified) + [old.host] + (old.state?.known.map(\.id) ?? []))
            for peer in peers where peer != node.core.nodeID && !node.isNeeded(peer) { node.core.disconnect(peer) }
        }
    }
}
