import LVBCore
import LVBCrypto

/// The kind byte of a room event, naming the layout of its body, and the
/// kind's name (for messages; two kinds are equal when their bytes are).
public struct EventKind: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public let name: String

    public init(_ rawValue: UInt8, _ name: String) {
        self.rawValue = rawValue
        self.name = name
    }

    public static func == (a: EventKind, b: EventKind) -> Bool { a.rawValue == b.rawValue }
    public func hash(into h: inout Hasher) { h.combine(rawValue) }
    public var description: String { name }
}

/// One kind of room event as the wire carries it: its kind byte, its body's
/// layout (the body fills the event's body field exactly) and every limit
/// on it, which `RoomEvent.make` checks before encoding and
/// `RoomEvent.parse` after decoding, so both accept exactly the same bodies.
/// What a kind means to a room is its owner's (LVBRoom's room events); the
/// gossip layer frames, signs, checks and forwards events of the kinds in
/// the `EventKindTable` it is given.
public protocol EventContent: Sendable {
    static var kind: EventKind { get }
    /// The most bytes a body of this kind takes (at most `RoomEventFormat.maxBodyLength`).
    static var maxBodyLength: Int { get }
    /// Enforces every limit.
    func validate() throws(EventError)
    /// Appends the body; only for a body that passed `validate`.
    func encode(into w: inout ByteWriter)
    /// Reads a body from `r` (the caller checks nothing is left, then validates).
    static func decode(_ r: inout RoomEventReader) throws(EventError) -> Self
    /// Whether `other` is the same body.
    func isSame(as other: any EventContent) -> Bool
}

extension EventContent where Self: Equatable {
    public func isSame(as other: any EventContent) -> Bool { (other as? Self) == self }
}

/// The content of a room event: a value of one registered kind.
public struct EventBody: Equatable, Sendable {
    public let content: any EventContent

    public init(_ content: some EventContent) { self.content = content }

    public var kind: EventKind { type(of: content).kind }

    /// The content as `type`, when it is of that kind.
    public func `as`<C: EventContent>(_ type: C.Type) -> C? { content as? C }

    public static func == (a: EventBody, b: EventBody) -> Bool { a.content.isSame(as: b.content) }

    /// Enforces every limit; `make` calls it before encoding, `parse` after decoding.
    public func validate() throws(EventError) { try content.validate() }

    func encode(into w: inout ByteWriter) { content.encode(into: &w) }
}

/// The kinds a node reads, by kind byte. An event of a kind not in it is
/// refused (`EventError.unknownKind`) like any malformed one.
public struct EventKindTable: Sendable {
    private let kinds: [UInt8: any EventContent.Type]

    /// `kinds` must name distinct kind bytes whose bodies fit the format.
    public init(_ kinds: [any EventContent.Type]) {
        var table: [UInt8: any EventContent.Type] = [:]
        for kind in kinds {
            precondition(table[kind.kind.rawValue] == nil, "event kind \(kind.kind.rawValue) registered twice")  // invariant: a constant table
            precondition(kind.maxBodyLength <= RoomEventFormat.maxBodyLength, "event kind \(kind.kind) is larger than the format allows")
            table[kind.kind.rawValue] = kind
        }
        self.kinds = table
    }

    /// The kind with byte `raw`, if this table has it.
    public func kind(_ raw: UInt8) -> EventKind? { kinds[raw]?.kind }

    /// Decodes a body of kind `raw` that must fill `bytes` exactly, then validates it.
    func decode(kind raw: UInt8, _ bytes: ArraySlice<UInt8>) throws(EventError) -> EventBody {
        guard let type = kinds[raw] else { throw .unknownKind(raw) }
        var r = RoomEventReader(bytes)
        let body = EventBody(try type.decode(&r))
        try r.expectEnd()
        try body.validate()
        return body
    }
}
