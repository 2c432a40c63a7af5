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
        state.forgetPosition(of: target)
        return .accepted([.kicked(target)])
    }
}

extension Kick {
    static func notice(for change: RoomChange, names: RoomNames) -> RoomNotice? {
        guard case .kicked(let id) = change else { return nil }
        return RoomNotice(names.line("kicked", id), human: "\(names(id)) was kicked by the host", tag: "kick")
    }

    static var commands: [RoomCommand] {
        [RoomCommand(console: "/kick NAME|ID", "remove a member from the room (host)") { who in
             guard !who.isEmpty else { return nil }
             return { r in try r.kick(try r.member(named: who)) }
         },
         RoomCommand(page: "kick") { fields throws(CommandFieldError) in
             let who = try fields.word("id")
             return { r in try r.kick(try r.member(named: who)) }
         }]
    }
}

extension RoomNode {
    public func kick(_ target: NodeID) throws(RoomActionError) {
        guard isHost else { throw .hostOnly }
        let event = try publish(.kick(target: target)).get()
        // Tell the target directly too: it may not be our gossip neighbour.
        try? core.send(GossipMessage.repair(event.encoded[...]).bytes, channel: .gossip, to: target)
    }
}
