import LVBCore
import LVBCrypto

/// A user command: how the console spells it, how the page spells it, and
/// what it does. Declared by the event kind it posts (`RoomEventRule.commands`)
/// or the feature it belongs to (`RoomFeature.commands`), so the console,
/// the page and `/help` learn a new kind's or feature's commands from the
/// table (`RoomEvents.commands`); the node's own few (`/peers`, `/stats`…)
/// are declared the same way where the console lives.
public struct RoomCommand: Sendable {
    /// What a room command does to the room node, run on the node's loop.
    public typealias Action = @Sendable (RoomNode) throws -> Void
    /// What a node command does (its media, its roles), run on the node's loop.
    public typealias NodeAction = @Sendable (LiveNode) throws -> Void

    /// The console's word with its slash ("/mute"); "" for plain text (chat); nil: the page's only.
    public let word: String?
    /// The console usage ("/danmaku [#RRGGBB] TEXT") and what it does, for `/help`.
    public let usage: String
    public let summary: String
    /// The page's `cmd` (nil: the console's only).
    public let pageName: String?
    private let console: (@Sendable (String) -> Bound?)?
    private let page: (@Sendable (any CommandFields) throws(CommandFieldError) -> Bound)?

    /// A console command on the room: `parse` turns the text after the word
    /// into an action, or nil when it does not fit (the user hears the usage).
    init(console usage: String, _ summary: String, parse: @escaping @Sendable (String) -> Action?) {
        self.init(usage, summary) { text in parse(text).map(Bound.room) }
    }

    /// A page command on the room (`{"cmd": name, …}`): `parse` reads its fields.
    init(page name: String, parse: @escaping @Sendable (any CommandFields) throws(CommandFieldError) -> Action) {
        self.init(page: name) { fields throws(CommandFieldError) in Bound.room(try parse(fields)) }
    }

    /// A console command on the node (`usage` starts with its word).
    public init(node usage: String, _ summary: String, parse: @escaping @Sendable (String) -> NodeAction?) {
        self.init(usage, summary) { text in parse(text).map(Bound.node) }
    }

    /// A page command on the node.
    public init(nodePage name: String, parse: @escaping @Sendable (any CommandFields) throws(CommandFieldError) -> NodeAction) {
        self.init(page: name) { fields throws(CommandFieldError) in Bound.node(try parse(fields)) }
    }

    private init(_ usage: String, _ summary: String, console: @escaping @Sendable (String) -> Bound?) {
        let first = usage.split(separator: " ").first.map(String.init) ?? ""
        word = first.hasPrefix("/") ? first : ""
        self.usage = usage
        self.summary = summary
        pageName = nil
        self.console = console
        page = nil
    }

    private init(page name: String, _ page: @escaping @Sendable (any CommandFields) throws(CommandFieldError) -> Bound) {
        word = nil
        usage = ""
        summary = ""
        pageName = name
        console = nil
        self.page = page
    }

    /// The action for the console text after the word, or the usage as the error.
    public func consoleAction(_ arguments: String) throws(RoomActionError) -> Bound {
        guard let action = console?(arguments) else { throw .invalid("usage: \(usage) — \(summary)") }
        return action
    }

    /// The action for a page's fields, or which field is wrong.
    public func pageAction(_ fields: any CommandFields) throws(CommandFieldError) -> Bound {
        guard let page else { throw .missing("cmd") }
        return try page(fields)
    }

    /// A command with its arguments read: run it on the node (or, for a
    /// room command, on a room node alone).
    public enum Bound: Sendable {
        case room(Action)
        case node(NodeAction)

        public func callAsFunction(_ node: LiveNode) throws {
            switch self {
            case .room(let action): try action(node.room)
            case .node(let action): try action(node)
            }
        }

        public func callAsFunction(_ room: RoomNode) throws {
            switch self {
            case .room(let action): try action(room)
            case .node: throw RoomActionError.refused("this command acts on the whole node (its media, its roles), not on a room alone")
            }
        }
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
