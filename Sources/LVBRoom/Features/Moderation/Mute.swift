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

extension Mute {
    static func notice(for change: RoomChange, names: RoomNames) -> RoomNotice? {
        guard case let .muted(id, muted) = change else { return nil }
        var l = names.line("muted", id)
        l.add("muted", muted)
        return RoomNotice(l, human: "\(names(id)) was \(muted ? "muted" : "unmuted") by the host", tag: "mute")
    }

    static var commands: [RoomCommand] {
        func console(_ usage: String, _ summary: String, muted: Bool) -> RoomCommand {
            RoomCommand(console: usage, summary) { who in
                guard !who.isEmpty else { return nil }
                return { r in try r.mute(try r.member(named: who), muted) }
            }
        }
        return [console("/mute NAME|ID", "silence a member's chat and bullet comments (host)", muted: true),
                console("/unmute NAME|ID", "let a muted member speak again (host)", muted: false),
                RoomCommand(page: "mute") { fields throws(CommandFieldError) in
                    let who = try fields.word("id")
                    guard let muted = fields.has("muted") ? fields.boolField("muted") : true else { throw .invalid("muted") }
                    return { r in try r.mute(try r.member(named: who), muted) }
                }]
    }
}

extension RoomNode {
    public func mute(_ target: NodeID, _ muted: Bool = true) throws(RoomActionError) {
        guard isHost else { throw .hostOnly }
        try publish(.mute(target: target, muted: muted)).get()
    }
}
