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

extension RoomClosure {
    static func notice(for change: RoomChange, names: RoomNames) -> RoomNotice? {
        guard case .roomClosed = change else { return nil }
        return RoomNotice(JSONLine(event: "room_closed"), human: "the host closed the room", tag: "closed")
    }

    static var commands: [RoomCommand] {
        [RoomCommand(console: "/close", "end the room for everyone (host)") { rest in
             guard rest.isEmpty else { return nil }
             return { try $0.closeRoom() }
         },
         RoomCommand(page: "close") { _ throws(CommandFieldError) in { try $0.closeRoom() } }]
    }
}

extension RoomNode {
    public func closeRoom() throws(RoomActionError) {
        guard isHost else { throw .hostOnly }
        for feature in features.all { feature.leaving() }
        let event = try publish(.roomClosed).get()
        // Everyone must hear this one: tell every session directly as well.
        let repair = GossipMessage.repair(event.encoded[...]).bytes
        for p in core.peers where p.established { try? core.send(repair, channel: .gossip, to: p.id) }
    }
}
