import LVBCore

/// What the studio page asks its node to do: one JSON object per WebSocket
/// text message, `{"cmd": NAME, …}` (lvbnode(1), WEB STUDIO). Ids are node
/// ids or nicknames exactly as the console takes them; texts are checked
/// for length by the room layer like console input.
///
/// The commands of the room and its features (chat, danmaku, like, title,
/// kick, mute, close, link-mic, layout, PK, the quiz, and whatever comes)
/// are declared with their kind or feature, not here: the server is given
/// their names and checks (`StudioServer.roomCommands`) and hands them on as
/// `.room(name, fields)`. The cases below are the page's own business with
/// its node (its camera, the room list, replays).
public enum StudioCommand: Equatable, Sendable {
    /// A command declared by a room event kind or feature, its fields as sent.
    case room(String, JSONValue)
    /// A co-host's page puts its own camera and microphone on stage (true) or takes them off.
    case camera(Bool)
    /// The rooms the node's rendezvous lists, with thumbnails (answered with a `room_list` event).
    case rooms
    /// The quick switch: "next", "prev", or a listed room's id.
    case switchRoom(String)
    /// A live viewer's page: play this replay from its room list (the id as listed); a switch goes back to live.
    case replay(String)
    /// A replay's page (`join REPLAY-ID --web`, or a live viewer's playing one): play from this position (ms from the start).
    case seek(UInt32)
    /// A replay's page: stop where it is, or go on.
    case pause
    case play
    /// A replay's page: play at this rate (0.25 to 4; sound only at 1).
    case speed(Double)

    /// Longest text taken from the page, in bytes (the room layer cuts further).
    public static let maxText = CommandLimits.maxText

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
            case .missing(let f): CommandFieldError.missing(f).description
            case .invalid(let f): CommandFieldError.invalid(f).description
            }
        }

        public init(_ error: CommandFieldError) {
            switch error {
            case .missing(let f): self = .missing(f)
            case .invalid(let f): self = .invalid(f)
            }
        }
    }

    /// Parses one message of the page; a `cmd` among `roomCommands` is
    /// returned as `.room` with its fields unchecked (its declaration checks them).
    public static func parse(_ bytes: some Collection<UInt8>, roomCommands: Set<String> = []) throws(ParseError) -> StudioCommand {
        guard let value = try? JSONValue.parse(bytes), case .object = value else { throw .notJSON }
        guard let cmd = value["cmd"]?.string else { throw .notACommand }
        do {
            return try parse(cmd, value, roomCommands: roomCommands)
        } catch let error as CommandFieldError {
            throw ParseError(error)
        } catch let error as ParseError {
            throw error
        } catch {
            throw .notACommand
        }
    }

    private static func parse(_ cmd: String, _ value: JSONValue, roomCommands: Set<String>) throws -> StudioCommand {
        switch cmd {
        case "camera":
            guard let on = value["on"]?.bool else { throw ParseError.missing("on") }
            return .camera(on)
        case "rooms": return .rooms
        case "switch":
            let to = try value.word("to")
            guard to == "next" || to == "prev" || (to.utf8.count == 26 && to.utf8.allSatisfy(isBase32)) else {
                throw ParseError.invalid("to")
            }
            return .switchRoom(to)
        case "replay":
            let id = try value.word("id")
            guard id.utf8.count == 26, id.utf8.allSatisfy(isBase32) else { throw ParseError.invalid("id") }
            return .replay(id)
        case "seek":
            guard let ms = value["ms"]?.number else { throw ParseError.missing("ms") }
            guard ms >= 0, ms <= Double(UInt32.max), ms.rounded() == ms else { throw ParseError.invalid("ms") }
            return .seek(UInt32(ms))
        case "pause": return .pause
        case "play": return .play
        case "speed":
            guard let x = value["x"]?.number else { throw ParseError.missing("x") }
            guard (0.25...4).contains(x) else { throw ParseError.invalid("x") }
            return .speed(x)
        case let name where roomCommands.contains(name): return .room(name, value)
        default: throw ParseError.unknown(String(cmd.prefix(32)))
        }
    }

    /// A room id's characters (RFC 4648 base32, lower case as ids are printed).
    private static func isBase32(_ c: UInt8) -> Bool { (c >= 97 && c <= 122) || (c >= 50 && c <= 55) }
}
