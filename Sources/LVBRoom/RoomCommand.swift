import LVBCore
import LVBCrypto

/// A user command that acts on the room (posts one of its events): how the
/// console spells it, how the page spells it, and what it does to the room
/// node. Declared by the event kind it posts (`RoomEventRule.commands`), so
/// the console, the page and `/help` learn a new kind's commands from the
/// table (`RoomEvents.commands`).
public struct RoomCommand: Sendable {
    /// What the command does, run on the node's loop.
    public typealias Action = @Sendable (RoomNode) throws -> Void

    /// The console's word with its slash ("/mute"); "" for plain text (chat); nil: the page's only.
    public let word: String?
    /// The console usage ("/danmaku [#RRGGBB] TEXT") and what it does, for `/help`.
    public let usage: String
    public let summary: String
    /// The page's `cmd` (nil: the console's only).
    public let pageName: String?
    private let console: (@Sendable (String) -> Action?)?
    private let page: (@Sendable (any CommandFields) throws(CommandFieldError) -> Action)?

    /// A console command: `parse` turns the text after the word into an
    /// action, or nil when it does not fit (the user hears the usage).
    init(console usage: String, _ summary: String, parse: @escaping @Sendable (String) -> Action?) {
        let first = usage.split(separator: " ").first.map(String.init) ?? ""
        word = first.hasPrefix("/") ? first : ""
        self.usage = usage
        self.summary = summary
        pageName = nil
        console = parse
        page = nil
    }

    /// A page command (`{"cmd": name, …}`): `parse` reads its fields.
    init(page name: String, parse: @escaping @Sendable (any CommandFields) throws(CommandFieldError) -> Action) {
        word = nil
        usage = ""
        summary = ""
        pageName = name
        console = nil
        page = parse
    }

    /// The action for the console text after the word, or the usage as the error.
    public func consoleAction(_ arguments: String) throws(RoomActionError) -> Action {
        guard let action = console?(arguments) else { throw .invalid("usage: \(usage) — \(summary)") }
        return action
    }

    /// The action for a page's fields, or which field is wrong.
    public func pageAction(_ fields: any CommandFields) throws(CommandFieldError) -> Action {
        guard let page else { throw .missing("cmd") }
        return try page(fields)
    }
}

/// How a room change shows to the person at the node: one NDJSON line, its
/// readable form, and the tag the console prints before it ("chat", "join"…).
public struct RoomNotice: Sendable {
    public var line: JSONLine
    public var human: String
    public var tag: String

    public init(_ line: JSONLine, human: String, tag: String) {
        self.line = line
        self.human = human
        self.tag = tag
    }
}

/// What showing a change may ask of the room: a member's display name.
public struct RoomNames {
    private let nick: (NodeID) -> String

    /// `nick`: the member's nickname, or whatever stands for it (its short id).
    public init(_ nick: @escaping (NodeID) -> String) { self.nick = nick }

    public func callAsFunction(_ id: NodeID) -> String { nick(id) }

    /// A line for `event` about member `id`: its id and nickname.
    public func line(_ event: String, _ id: NodeID) -> JSONLine {
        var l = JSONLine(event: event)
        l.add("id", id.text)
        l.add("nick", nick(id))
        return l
    }
}

extension String {
    /// "signed_in_elsewhere" as "signed in elsewhere".
    public func replacingUnderscores() -> String { String(map { $0 == "_" ? " " : $0 }) }

    /// A colour as six hex digits.
    public static func hex6(_ v: UInt32) -> String {
        let hex = String(v, radix: 16)
        return String(repeating: "0", count: Swift.max(0, 6 - hex.count)) + hex
    }
}
