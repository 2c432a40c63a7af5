import LVBCore
import LVBCrypto
import LVBGossip

/// Presence: the author is in the room, as viewer (0) or host (1). Repeated
/// as a heartbeat. `instance` is random per process, so a second process with
/// the same identity is seen as "signed in elsewhere".
///
///     body: instance(8) ‖ role(1)
public struct MemberJoin: EventContent, Equatable {
    public static let kind = EventKind(4, "join")
    public static let maxBodyLength = 8 + 1
    /// Join role: 0 viewer, 1 host.
    static let roleMax: UInt8 = 1
    public var instance: UInt64
    public var role: NodeRole

    public init(instance: UInt64, role: NodeRole) {
        self.instance = instance
        self.role = role
    }

    public func validate() throws(EventError) {
        guard role.rawValue <= Self.roleMax else { throw .badValue("join role \(role.rawValue) is not a room member's (0 viewer, 1 host)") }
    }

    public func encode(into w: inout ByteWriter) {
        w.write(instance)
        w.write(role.rawValue)
    }

    public static func decode(_ r: inout RoomEventReader) throws(EventError) -> MemberJoin {
        let instance = try r.uint64(), raw = try r.uint8()
        guard let role = NodeRole(rawValue: raw), raw <= roleMax else { throw .badValue("join role \(raw) is not a room member's (0 viewer, 1 host)") }
        return MemberJoin(instance: instance, role: role)
    }
}

extension EventKind {
    public static let join = MemberJoin.kind
}

extension EventBody {
    public static func join(instance: UInt64, role: NodeRole) -> EventBody { EventBody(MemberJoin(instance: instance, role: role)) }
}

/// Only the host joins as host; presence orders joins and leaves per author.
extension MemberJoin: RoomEventRule {
    func decide(_ e: RoomEvent, in state: RoomState, now: Instant, limited: Bool) -> RoomState.Verdict {
        if role != .viewer, e.author != state.host { return .rejected(.notHost(Self.kind)) }
        switch state.presence.order(of: e) {
        case .same: return .duplicate
        case .older: return .rejected(.stale)
        case .newer: return .accepted(state.presence.join(e, instance: instance, role: role, now: now))
        }
    }
}

extension MemberJoin {
    /// A join, and the other node a join replaced (same identity, new process).
    static func notice(for change: RoomChange, names: RoomNames) -> RoomNotice? {
        switch change {
        case let .joined(id, role):
            var l = names.line("joined", id)
            l.add("role", role.name)
            return RoomNotice(l, human: "\(names(id)) joined\(role == .host ? " (host)" : "")", tag: "join")
        case let .signedInElsewhere(id, _, _):
            return RoomNotice(names.line("signed_in_elsewhere", id), human: "\(names(id)) signed in from another node", tag: "session")
        default: return nil
        }
    }
}
