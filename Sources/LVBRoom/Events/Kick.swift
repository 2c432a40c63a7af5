import LVBCore
import LVBCrypto
import LVBGossip

/// The host removes `target` from the room for the room's life.
///
///     body: target(32)
public struct Kick: EventContent, Equatable {
    public static let kind = EventKind(8, "kick")
    public static let maxBodyLength = 32
    public var target: NodeID

    public init(target: NodeID) { self.target = target }

    public func validate() throws(EventError) {}
    public func encode(into w: inout ByteWriter) { w.write(bytes: target.publicKey) }
    public static func decode(_ r: inout RoomEventReader) throws(EventError) -> Kick { Kick(target: try r.nodeID()) }
}

extension EventKind {
    public static let kick = Kick.kind
}

extension EventBody {
    public static func kick(target: NodeID) -> EventBody { EventBody(Kick(target: target)) }
}

/// The host's alone; the host itself cannot be kicked, and a second kick changes nothing.
extension Kick: RoomEventRule {
    func decide(_ e: RoomEvent, in state: RoomState, now: Instant, limited: Bool) -> RoomState.Verdict {
        guard e.author == state.host else { return .rejected(.notHost(Self.kind)) }
        guard target != state.host, state.kicks[target] == nil else { return .accepted([]) }
        state.kicks[target] = e
        _ = state.presence.remove(target)
        return .accepted([.kicked(target)])
    }
}
