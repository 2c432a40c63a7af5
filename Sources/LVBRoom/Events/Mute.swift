import LVBCore
import LVBCrypto
import LVBGossip

/// The host silences `target`'s chat and bullet comments, or lets it speak again.
///
///     body: target(32) ‖ muted(1: 0 or 1)
public struct Mute: EventContent, Equatable {
    public static let kind = EventKind(9, "mute")
    public static let maxBodyLength = 32 + 1
    public var target: NodeID
    public var muted: Bool

    public init(target: NodeID, muted: Bool) {
        self.target = target
        self.muted = muted
    }

    public func validate() throws(EventError) {}

    public func encode(into w: inout ByteWriter) {
        w.write(bytes: target.publicKey)
        w.write(UInt8(muted ? 1 : 0))
    }

    public static func decode(_ r: inout RoomEventReader) throws(EventError) -> Mute {
        let target = try r.nodeID()
        return Mute(target: target, muted: try r.flag("mute"))
    }
}

extension EventKind {
    public static let mute = Mute.kind
}

extension EventBody {
    public static func mute(target: NodeID, muted: Bool) -> EventBody { EventBody(Mute(target: target, muted: muted)) }
}

/// The host's alone; latest wins per target; the host itself cannot be muted.
extension Mute: RoomEventRule {
    func decide(_ e: RoomEvent, in state: RoomState, now: Instant, limited: Bool) -> RoomState.Verdict {
        guard e.author == state.host else { return .rejected(.notHost(Self.kind)) }
        if let order = RoomState.order(e, after: state.mutes[target]) { return order }
        guard target != state.host else { return .accepted([]) }
        let was = state.isMuted(target)
        state.mutes[target] = e
        return .accepted(was == muted ? [] : [.muted(target, muted)])
    }
}
