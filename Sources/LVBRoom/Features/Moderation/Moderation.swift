import LVBCore
import LVBCrypto
import LVBGossip

/// The host's moderation, a room feature: kicks (a member out for the
/// room's life, its later events refused) and mutes (its chat, bullet
/// comments and gifts refused), kept in the room's state (`ModerationBook`).
final class Moderation: RoomFeature {
    init(node: RoomNode) {}

    static var tickInterval: Duration? { nil }

    static let kinds: [any RoomEventRule.Type] = [Kick.self, Mute.self]
}

/// The host's kicks and latest mute of each target, in the room's state.
final class ModerationBook: RoomStatePart {
    var kicks: [NodeID: RoomEvent] = [:]
    var mutes: [NodeID: RoomEvent] = [:]

    init() {}

    /// A kicked author's every later event is refused.
    func refuses(_ e: RoomEvent) -> RoomState.RoomRejection? { kicks[e.author] == nil ? nil : .authorKicked }

    /// The latest `snapshotModeration` kicks and mutes go last in a late
    /// joiner's snapshot: a chat this node accepted before a kick or mute is
    /// accepted by the joiner too, whatever the authors' clock skew.
    func retained(members: [Member]) -> (content: [RoomEvent], last: [RoomEvent]) {
        ([], Array((Array(kicks.values) + Array(mutes.values)).sorted(by: RoomEvent.historyOrder).suffix(RoomConstants.snapshotModeration)))
    }
}

extension RoomState {
    var kicks: [NodeID: RoomEvent] {
        get { part(ModerationBook.self).kicks }
        set { part(ModerationBook.self).kicks = newValue }
    }

    var mutes: [NodeID: RoomEvent] {
        get { part(ModerationBook.self).mutes }
        set { part(ModerationBook.self).mutes = newValue }
    }

    public func isMuted(_ id: NodeID) -> Bool {
        part(ModerationBook.self).mutes[id]?.body.as(Mute.self)?.muted ?? false
    }

    public func isKicked(_ id: NodeID) -> Bool { part(ModerationBook.self).kicks[id] != nil }
}
