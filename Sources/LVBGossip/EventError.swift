/// Why a room event could not be created or parsed; every case is a reason to
/// drop an event from the network (count it, log it at debug) and never to stop.
public enum EventError: Error, Equatable, CustomStringConvertible {
    /// The event, or a body or field inside it, ended before a complete value.
    case truncated
    /// Bytes were left over after the signature, or after a fixed-size body.
    case trailingBytes
    /// The first byte is not a format version this node reads (only 1).
    case badVersion(UInt8)
    /// The kind byte names no kind this node reads (`EventKindTable`).
    case unknownKind(UInt8)
    /// A room id was not exactly 16 bytes.
    case badRoomID
    /// The author's 32 bytes are not a usable Ed25519 public key.
    case badAuthor
    /// A text field is longer than `max` UTF-8 bytes.
    case textTooLong(field: String, max: Int)
    /// A text field is empty or only whitespace.
    case emptyText
    /// A text field is not valid UTF-8.
    case invalidUTF8
    /// A text field holds a control character (C0, DEL, C1, U+2028 or U+2029).
    case controlCharacters
    /// A number, flag, node id or profile/room-info field breaks its rule; says which.
    case badValue(String)
    /// The signature is not the author's over this room and these bytes.
    case badSignature

    public var description: String {
        switch self {
        case .truncated: "room event is truncated"
        case .trailingBytes: "room event has unexpected trailing bytes"
        case let .badVersion(v): "room event version \(v) is not supported (this node reads version 1)"
        case let .unknownKind(k): "room event kind \(k) is unknown"
        case .badRoomID: "room id must be 16 bytes"
        case .badAuthor: "room event author is not a valid node key"
        case let .textTooLong(field, max): "\(field) is too long: at most \(max) UTF-8 bytes"
        case .emptyText: "text is empty or only whitespace"
        case .invalidUTF8: "text is not valid UTF-8"
        case .controlCharacters: "text contains control characters or line separators"
        case let .badValue(what): "bad value: \(what)"
        case .badSignature: "room event signature does not verify"
        }
    }
}
