/// What the studio page asks its node to do: one JSON object per WebSocket
/// text message, `{"cmd": NAME, …}` (lvbnode(1), WEB STUDIO). Ids are node
/// ids or nicknames exactly as the console takes them; texts are checked
/// for length by the room layer like console input.
public enum StudioCommand: Equatable, Sendable {
    case chat(String)
    case danmaku(String, color: UInt32)
    case like(count: Int)
    case linkMic(message: String)
    /// Viewer: leave the stage or withdraw the request (nil); host: take that guest off.
    case hangUp(String?)
    case accept(String)
    case reject(String, reason: String)
    case kick(String)
    case mute(String, muted: Bool)
    case layout(String)
    case title(String)
    case close
    case viewers
    /// A co-host's page puts its own camera and microphone on stage (true) or takes them off.
    case camera(Bool)
    /// The rooms the node's rendezvous lists, with thumbnails (answered with a `room_list` event).
    case rooms
    /// The quick switch: "next", "prev", or a listed room's id.
    case switchRoom(String)

    /// Most likes one command sends (the console's `/like N` limit).
    public static let maxLikes = 100
    /// Longest text taken from the page, in bytes (the room layer cuts further).
    public static let maxText = 1024

    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case notJSON
        case notACommand
        case unknown(String)
        case missing(String)
        case invalid(String)

        public var description: String {
            switch self {
            case .notJSON: "not a JSON object"
            case .notACommand: "no \"cmd\" field"
            case .unknown(let c): "unknown command \"\(c)\""
            case .missing(let f): "missing field \"\(f)\""
            case .invalid(let f): "invalid field \"\(f)\""
            }
        }
    }

    /// Parses one message of the page.
    public static func parse(_ bytes: some Collection<UInt8>) throws(ParseError) -> StudioCommand {
        guard let value = try? JSONValue.parse(bytes), case .object = value else { throw .notJSON }
        guard let cmd = value["cmd"]?.string else { throw .notACommand }
        switch cmd {
        case "chat": return .chat(try text(value, "text"))
        case "danmaku":
            var color: UInt32 = 0xFFFFFF
            if let c = value["color"] {
                guard let s = c.string, let parsed = parseColor(s) else { throw .invalid("color") }
                color = parsed
            }
            return .danmaku(try text(value, "text"), color: color)
        case "like":
            guard let n = value["count"] else { return .like(count: 1) }
            guard let count = n.number, count >= 1, count <= Double(maxLikes), count == count.rounded() else { throw .invalid("count") }
            return .like(count: Int(count))
        case "linkmic": return .linkMic(message: try optionalText(value, "text"))
        case "hangup":
            if let id = value["id"] {
                guard let s = id.string, isWord(s) else { throw .invalid("id") }
                return .hangUp(s)
            }
            return .hangUp(nil)
        case "accept": return .accept(try word(value, "id"))
        case "reject": return .reject(try word(value, "id"), reason: try optionalText(value, "reason"))
        case "kick": return .kick(try word(value, "id"))
        case "mute":
            guard let muted = (value["muted"] ?? .bool(true)).bool else { throw .invalid("muted") }
            return .mute(try word(value, "id"), muted: muted)
        case "layout":
            let l = try word(value, "layout")
            guard ["pip", "split", "grid"].contains(l) else { throw .invalid("layout") }
            return .layout(l)
        case "title": return .title(try text(value, "text"))
        case "close": return .close
        case "viewers": return .viewers
        case "camera":
            guard let on = value["on"]?.bool else { throw .missing("on") }
            return .camera(on)
        case "rooms": return .rooms
        case "switch":
            let to = try word(value, "to")
            guard to == "next" || to == "prev" || (to.utf8.count == 26 && to.utf8.allSatisfy(isBase32)) else { throw .invalid("to") }
            return .switchRoom(to)
        default: throw .unknown(String(cmd.prefix(32)))
        }
    }

    /// `#RRGGBB` (or without the `#`).
    public static func parseColor(_ s: String) -> UInt32? {
        let hex = s.hasPrefix("#") ? s.dropFirst() : s[...]
        guard hex.count == 6, hex.allSatisfy(\.isHexDigit) else { return nil }
        return UInt32(hex, radix: 16)
    }

    private static func text(_ v: JSONValue, _ key: String) throws(ParseError) -> String {
        guard let field = v[key] else { throw .missing(key) }
        guard let s = field.string, s.utf8.count <= maxText else { throw .invalid(key) }
        guard s.contains(where: { !$0.isWhitespace }) else { throw .invalid(key) }
        return s
    }

    private static func optionalText(_ v: JSONValue, _ key: String) throws(ParseError) -> String {
        guard let field = v[key] else { return "" }
        guard let s = field.string, s.utf8.count <= maxText else { throw .invalid(key) }
        return s
    }

    /// A node id or nickname: one word, as the console takes it.
    private static func word(_ v: JSONValue, _ key: String) throws(ParseError) -> String {
        guard let field = v[key] else { throw .missing(key) }
        guard let s = field.string, isWord(s) else { throw .invalid(key) }
        return s
    }

    /// A room id's characters (RFC 4648 base32, lower case as ids are printed).
    private static func isBase32(_ c: UInt8) -> Bool { (c >= 97 && c <= 122) || (c >= 50 && c <= 55) }

    private static func isWord(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 128 && !s.contains(where: { $0.isWhitespace || $0.isNewline })
    }
}
