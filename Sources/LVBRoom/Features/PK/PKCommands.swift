import LVBCore
import LVBGossip

/// What a host asks of PK, from the console (`/pk …`) or the page
/// (`{"cmd":"pk","do":…}`): typed, so the console and the page mean the
/// same thing by it.
public enum PKCommand: Equatable, Sendable {
    /// Ask the room `target` (its 26-character id, or N as `/rooms` numbers it) for a PK of `minutes`.
    case ask(String, minutes: UInt8)
    case accept
    case reject(reason: String)
    /// End the PK, or withdraw this host's request.
    case end

    /// How long a PK lasts when the ask names no length, in minutes.
    public static let defaultMinutes: UInt8 = 5

    /// `ROOM-ID|N [MINUTES]`, `accept`, `reject [REASON]`, `end` (nil: none of these).
    public init?(console text: String) {
        let args = text.split(separator: " ", maxSplits: 1).map(String.init)
        guard let first = args.first else { return nil }
        let more = args.count > 1 ? args[1] : ""
        switch first.lowercased() {
        case "accept": self = .accept
        case "reject": self = .reject(reason: more)
        case "end": self = .end
        default:
            if more.isEmpty { self = .ask(first, minutes: Self.defaultMinutes); return }
            guard let minutes = UInt8(more), PKMessage.minutes.contains(minutes) else { return nil }
            self = .ask(first, minutes: minutes)
        }
    }

    /// `{"do":"ask","room":ID,"minutes":N}`, `{"do":"accept"}`, `{"do":"reject","reason":…}`, `{"do":"end"}`.
    public init(page fields: any CommandFields) throws(CommandFieldError) {
        switch try fields.word("do") {
        case "ask":
            let room = try fields.word("room")
            guard RoomID(text: room) != nil else { throw .invalid("room") }
            let range = Int(PKMessage.minutes.lowerBound)...Int(PKMessage.minutes.upperBound)
            self = .ask(room, minutes: UInt8(try fields.count("minutes", in: range, fallback: Int(Self.defaultMinutes))))
        case "accept": self = .accept
        case "reject": self = .reject(reason: try fields.optionalText("reason"))
        case "end": self = .end
        default: throw .invalid("do")
        }
    }

    /// Does it on `node` (the ask through the node's way to other rooms, `PKAsking`).
    func run(on node: LiveNode) throws {
        switch self {
        case let .ask(target, minutes):
            guard node.room.isHost else { throw RoomActionError.hostOnly }
            guard let asker = node.roles.lazy.compactMap({ $0 as? any PKAsking }).first else {
                throw RoomActionError.refused("a PK finds the other room through the rendezvous: start the host with --rendezvous IP:PORT")
            }
            try asker.ask(target, minutes: minutes)
        case .accept: try node.room.acceptPK()
        case .reject(let reason): try node.room.rejectPK(reason: reason)
        case .end: try node.room.endPK()
        }
    }
}

/// The node's way to another room's host for a PK (the rendezvous's
/// `PKDialler`): finds the room `target` names and asks its host.
public protocol PKAsking: LiveRole {
    func ask(_ target: String, minutes: UInt8) throws(RoomActionError)
}

extension PK {
    static let commands: [RoomCommand] = [
        RoomCommand(node: "/pk ROOM-ID|N [MINUTES] | accept | reject [REASON] | end",
                    "PK with another room's host, found through the rendezvous: ask for MINUTES (1 to 60, 5), answer, end (host)") { text in
            guard let command = PKCommand(console: text) else { return nil }
            return { try command.run(on: $0) }
        },
        RoomCommand(nodePage: "pk") { fields throws(CommandFieldError) in
            let command = try PKCommand(page: fields)
            return { try command.run(on: $0) }
        },
    ]
}
