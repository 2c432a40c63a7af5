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
