import LVBCore
import LVBCrypto
import LVBGossip

/// Link-mic: the host put `target` on stage (co-host) or took it off;
/// `reason` says why it ended (`StageReason`), 0 when it started.
///
///     body: target(32) ‖ on(1: 0 or 1) ‖ reason(1: 0 when on, 1...4 when off)
public struct StageChange: EventContent, Equatable {
    public static let kind = EventKind(11, "stage")
    public static let maxBodyLength = 32 + 1 + 1
    public var target: NodeID
    public var onStage: Bool
    public var reason: UInt8

    public init(target: NodeID, onStage: Bool, reason: UInt8) {
        self.target = target
        self.onStage = onStage
        self.reason = reason
    }

    public func validate() throws(EventError) {
        if onStage {
            guard reason == 0 else { throw .badValue("stage reason \(reason) given with on stage (must be 0)") }
        } else {
            guard StageReason(rawValue: reason) != nil else { throw .badValue("stage end reason \(reason) is unknown") }
        }
    }

    public func encode(into w: inout ByteWriter) {
        w.write(bytes: target.publicKey)
        w.write(UInt8(onStage ? 1 : 0))
        w.write(reason)
    }

    public static func decode(_ r: inout RoomEventReader) throws(EventError) -> StageChange {
        let target = try r.nodeID()
        let on = try r.flag("stage")
        return StageChange(target: target, onStage: on, reason: try r.uint8())
    }
}

extension EventKind {
    public static let stage = StageChange.kind
}

extension EventBody {
    public static func stage(target: NodeID, onStage: Bool, reason: UInt8) -> EventBody {
        EventBody(StageChange(target: target, onStage: onStage, reason: reason))
    }
}

/// The host's alone; latest wins per target; the host is never its own guest.
extension StageChange: RoomEventRule {
    func decide(_ e: RoomEvent, in state: RoomState, now: Instant, limited: Bool) -> RoomState.Verdict {
        guard e.author == state.host else { return .rejected(.notHost(Self.kind)) }
        if let order = RoomState.order(e, after: state.stage[target]) { return order }
        guard target != state.host else { return .accepted([]) }
        let was = state.isOnStage(target)
        state.stage[target] = e
        return .accepted(was == onStage ? [] : [.stage(target, onStage: onStage, reason: StageReason(rawValue: reason))])
    }
}

extension StageChange {
    /// The room-wide line (the guest's own `linkmic_off` comes from its link-mic side).
    static func notice(for change: RoomChange, names: RoomNames) -> RoomNotice? {
        guard case let .stage(id, onStage, reason) = change else { return nil }
        if onStage {
            return RoomNotice(names.line("linkmic_started", id), human: "\(names(id)) is on stage (co-host)", tag: "linkmic")
        }
        let why = reason?.description ?? "ended"
        var l = names.line("linkmic_ended", id)
        l.add("reason", why)
        return RoomNotice(l, human: "\(names(id)) left the stage (\(why.replacingUnderscores()))", tag: "linkmic")
    }
}
