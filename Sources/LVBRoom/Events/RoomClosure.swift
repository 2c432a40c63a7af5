import LVBCore
import LVBCrypto
import LVBGossip

/// The host ends the room: every later event is refused.
///
///     body: (empty)
public struct RoomClosure: EventContent, Equatable {
    public static let kind = EventKind(10, "roomClosed")
    public static let maxBodyLength = 0

    public init() {}

    public func validate() throws(EventError) {}
    public func encode(into w: inout ByteWriter) {}
    public static func decode(_ r: inout RoomEventReader) throws(EventError) -> RoomClosure { RoomClosure() }
}

extension EventKind {
    public static let roomClosed = RoomClosure.kind
}

extension EventBody {
    public static let roomClosed = EventBody(RoomClosure())
}

/// The host's alone.
extension RoomClosure: RoomEventRule {
    func decide(_ e: RoomEvent, in state: RoomState, now: Instant, limited: Bool) -> RoomState.Verdict {
        guard e.author == state.host else { return .rejected(.notHost(Self.kind)) }
        state.close(by: e)
        return .accepted([.roomClosed])
    }
}
