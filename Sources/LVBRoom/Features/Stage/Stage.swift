import LVBCore
import LVBCrypto
import LVBGossip

/// Who is on stage, a room feature: the host's stage events (link-mic
/// co-hosts going on and off), the latest for each member kept in the
/// room's state (`StageBook`).
final class Stage: RoomFeature {
    init(node: RoomNode) {}

    static var tickInterval: Duration? { nil }

    static let kinds: [any RoomEventRule.Type] = [StageChange.self]
}

/// The host's latest stage event for each member, in the room's state.
final class StageBook: RoomStatePart {
    var stage: [NodeID: RoomEvent] = [:]

    init() {}

    /// The shown members' stage events go to a late joiner with their joins.
    func retained(members: [Member]) -> (content: [RoomEvent], last: [RoomEvent]) {
        (members.compactMap { stage[$0.id] }, [])
    }
}

extension RoomState {
    var stage: [NodeID: RoomEvent] {
        get { part(StageBook.self).stage }
        set { part(StageBook.self).stage = newValue }
    }

    /// On stage as a link-mic co-host, as the host last said.
    public func isOnStage(_ id: NodeID) -> Bool {
        part(StageBook.self).stage[id]?.body.as(StageChange.self)?.onStage ?? false
    }

    /// Members the host has on stage now.
    public var coHosts: [NodeID] {
        let book = part(StageBook.self)
        return book.stage.keys.filter(isOnStage)
    }
}
