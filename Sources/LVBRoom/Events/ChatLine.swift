import LVBCore
import LVBCrypto
import LVBGossip

/// A chat line: 1...500 UTF-8 bytes of text (`EventText`'s rules).
///
///     body: text
public struct ChatLine: EventContent, Equatable {
    public static let kind = EventKind(1, "chat")
    public static let maxLength = 500
    public static let maxBodyLength = maxLength
    public var text: String

    public init(text: String) { self.text = text }

    public func validate() throws(EventError) { try EventText.check(text, field: "chat", max: Self.maxLength) }
    public func encode(into w: inout ByteWriter) { w.write(bytes: text.utf8) }
    public static func decode(_ r: inout RoomEventReader) throws(EventError) -> ChatLine {
        ChatLine(text: try EventText.decode(r.rest()))
    }
}

extension EventKind {
    public static let chat = ChatLine.kind
}

extension EventBody {
    public static func chat(text: String) -> EventBody { EventBody(ChatLine(text: text)) }
}

/// Anyone not muted, within the chat rate; kept in the chat history.
extension ChatLine: RoomEventRule {
    func decide(_ e: RoomEvent, in state: RoomState, now: Instant, limited: Bool) -> RoomState.Verdict {
        state.post(e, now: now, limited: limited, change: .chat(e))
    }
}

extension ChatLine {
    static func notice(for change: RoomChange, names: RoomNames) -> RoomNotice? {
        guard case .chat(let e) = change, let text = e.body.as(ChatLine.self)?.text else { return nil }
        var l = names.line("chat", e.author)
        l.add("text", text)
        l.add("time", Int(e.timestamp))
        return RoomNotice(l, human: "\(names(e.author)): \(text)", tag: "chat")
    }

    /// Plain console text is chat; the page's `{"cmd":"chat","text":…}` takes text as typed (a "/" in it is chat too).
    static var commands: [RoomCommand] {
        [RoomCommand(console: "TEXT", "send a chat message to the room") { text in { try $0.chat(text) } },
         RoomCommand(page: "chat") { fields throws(CommandFieldError) in
             let text = try fields.text("text")
             return { try $0.chat(text) }
         }]
    }
}

extension RoomNode {
    public func chat(_ text: String) throws(RoomActionError) { try publish(.chat(text: text)).get() }
}
