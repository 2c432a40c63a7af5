import LVBCore
import LVBCrypto

/// Presence timing out, a room feature: about once a second
/// (`RoomConstants.presenceSweep`) this node counts itself as heard, and the
/// room's state lets go of what went quiet (`RoomState.expirePresence`:
/// watched members silent too long, stale relay positions, and what its
/// parts let run out, a gift combo resting).
final class PresenceSweep: RoomFeature {
    private unowned let node: RoomNode
    private var last: Instant

    init(node: RoomNode) {
        self.node = node
        last = node.clock.now()
    }

    func tick(now: Instant) {
        guard now - last >= RoomConstants.presenceSweep, let state = node.state else { return }
        last = now
        _ = state.noteActivity(from: node.core.nodeID)
        state.expirePresence().forEach(node.report)
    }
}
