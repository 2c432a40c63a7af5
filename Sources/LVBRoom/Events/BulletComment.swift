import LVBCore
import LVBCrypto
import LVBGossip

/// A bullet comment (danmaku): text 1...100 bytes; colour 0xRRGGBB
/// (≤ 0xFFFFFF); lane 0...15 (0 = any).
///
///     body: color(4) ‖ lane(1) ‖ text
public struct BulletComment: EventContent, Equatable {
    public static let kind = EventKind(2, "danmaku")
    public static let maxLength = 100
    public static let maxColor: UInt32 = 0xFF_FFFF
    public static let lanes: UInt8 = 16
    public static let maxBodyLength = 4 + 1 + maxLength
    public var text: String
    public var color: UInt32
    public var lane: UInt8

    public init(text: String, color: UInt32, lane: UInt8) {
        self.text = text
        self.color = color
        self.lane = lane
    }

    public func validate() throws(EventError) {
        try EventText.check(text, field: "danmaku", max: Self.maxLength)
        guard color <= Self.maxColor else { throw .badValue("danmaku color \(color) is above 0xFFFFFF") }
        guard lane < Self.lanes else { throw .badValue("danmaku lane \(lane) is above 15") }
    }

    public func encode(into w: inout ByteWriter) {
        w.write(color)
        w.write(lane)
        w.write(bytes: text.utf8)
    }

    public static func decode(_ r: inout RoomEventReader) throws(EventError) -> BulletComment {
        let color = try r.uint32()
        let lane = try r.uint8()
        return BulletComment(text: try EventText.decode(r.rest()), color: color, lane: lane)
    }
}

extension EventKind {
    public static let danmaku = BulletComment.kind
}

extension EventBody {
    public static func danmaku(text: String, color: UInt32, lane: UInt8) -> EventBody {
        EventBody(BulletComment(text: text, color: color, lane: lane))
    }
}

/// As a chat line: anyone not muted, within the chat rate, kept in the chat history.
extension BulletComment: RoomEventRule {
    func decide(_ e: RoomEvent, in state: RoomState, now: Instant, limited: Bool) -> RoomState.Verdict {
        state.post(e, now: now, limited: limited, change: .posted(e))
    }
}

extension BulletComment {
    static func notice(for change: RoomChange, names: RoomNames) -> RoomNotice? {
        guard let (e, comment) = posted(change) else { return nil }
        var l = names.line("danmaku", e.author)
        l.add("text", comment.text)
        l.add("color", "#" + String.hex6(comment.color))
        l.add("lane", Int(comment.lane))
        return RoomNotice(l, human: "\(names(e.author)) ≫ \(comment.text)", tag: "danmaku")
    }

    static var commands: [RoomCommand] {
        [RoomCommand(console: "/danmaku [#RRGGBB] TEXT", "a bullet comment (optional colour)") { rest in
             var text = rest
             var color: UInt32 = 0xFFFFFF
             if rest.hasPrefix("#"), let space = rest.firstIndex(of: " "), let c = CommandLimits.color(String(rest[..<space])) {
                 color = c
                 text = String(rest[rest.index(after: space)...])
             }
             guard !text.isEmpty else { return nil }
             return { [text, color] in try $0.danmaku(text, color: color) }
         },
         RoomCommand(page: "danmaku") { fields throws(CommandFieldError) in
             var color: UInt32 = 0xFFFFFF
             if fields.has("color") {
                 guard let c = fields.stringField("color").flatMap(CommandLimits.color) else { throw .invalid("color") }
                 color = c
             }
             let text = try fields.text("text")
             return { [color] in try $0.danmaku(text, color: color) }
         }]
    }
}

extension RoomNode {
    public func danmaku(_ text: String, color: UInt32 = 0xFFFFFF, lane: UInt8 = 0) throws(RoomActionError) {
        try publish(.danmaku(text: text, color: color, lane: lane)).get()
    }
}
