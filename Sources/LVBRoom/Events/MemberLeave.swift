import LVBCore
import LVBCrypto
import LVBGossip

/// The author left: 0 left, 1 timeout (reserved: a leaver never sends it),
/// 2 signed in elsewhere, 3 kicked.
///
///     body: reason(1)
public struct MemberLeave: EventContent, Equatable {
    public static let kind = EventKind(5, "leave")
    public static let maxBodyLength = 1
    static let reasonMax: UInt8 = 3
    public var reason: UInt8

    public init(reason: UInt8) { self.reason = reason }

    public func validate() throws(EventError) {
        guard reason <= Self.reasonMax else { throw .badValue("leave reason \(reason) is unknown") }
    }

    public func encode(into w: inout ByteWriter) { w.write(reason) }
    public static func decode(_ r: inout RoomEventReader) throws(EventError) -> MemberLeave { MemberLeave(reason: try r.uint8()) }
}

extension EventKind {
    public static let leave = MemberLeave.kind
}

extension EventBody {
    public static func leave(reason: UInt8) -> EventBody { EventBody(MemberLeave(reason: reason)) }
}

/// Presence orders joins and leaves per author.
extension MemberLeave: RoomEventRule {
    func decide(_ e: RoomEvent, in state: RoomState, now: Instant, limited: Bool) -> RoomState.Verdict {
        switch state.presence.order(of: e) {
        case .same: return .duplicate
        case .older: return .rejected(.stale)
        case .newer:
            state.forgetPosition(of: e.author)
            return .accepted(state.presence.leave(e, reason: reason))
        }
    }
}

extension MemberLeave {
    /// The names of the reasons, as the `left` line gives them.
    public static let reasons = ["left", "timeout", "signed_in_elsewhere", "kicked"]

    /// A member gone, whether it said so (this kind) or went quiet (a presence timeout).
    static func notice(for change: RoomChange, names: RoomNames) -> RoomNotice? {
        guard case let .left(id, reason) = change else { return nil }
        var l = names.line("left", id)
        let why = reasons[Int(min(reason, reasonMax))]
        l.add("reason", why)
        return RoomNotice(l, human: "\(names(id)) left (\(why.replacingUnderscores()))", tag: "leave")
    }
}
