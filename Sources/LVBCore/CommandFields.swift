/// The fields of a command as a page sends them: one JSON object's members,
/// read by name. The studio server's JSON value conforms; commands declared
/// by other modules (a room event kind's page command) read it through this.
public protocol CommandFields {
    func stringField(_ key: String) -> String?
    func numberField(_ key: String) -> Double?
    func boolField(_ key: String) -> Bool?
    /// Whether the object has `key` at all (of any type).
    func has(_ key: String) -> Bool
}

/// A field of a command that is absent or not what the command takes.
public enum CommandFieldError: Error, Equatable, CustomStringConvertible {
    case missing(String)
    case invalid(String)

    public var description: String {
        switch self {
        case .missing(let f): "missing field \"\(f)\""
        case .invalid(let f): "invalid field \"\(f)\""
        }
    }
}

/// The field rules every command shares, so a page command is checked the
/// same way wherever it is declared.
extension CommandFields {
    /// A text that must be there and not blank.
    public func text(_ key: String) throws(CommandFieldError) -> String {
        guard has(key) else { throw .missing(key) }
        guard let s = stringField(key), s.utf8.count <= CommandLimits.maxText else { throw .invalid(key) }
        guard s.contains(where: { !$0.isWhitespace }) else { throw .invalid(key) }
        return s
    }

    /// A text that may be left out (then empty).
    public func optionalText(_ key: String) throws(CommandFieldError) -> String {
        guard has(key) else { return "" }
        guard let s = stringField(key), s.utf8.count <= CommandLimits.maxText else { throw .invalid(key) }
        return s
    }

    /// A node id or nickname: one word, as the console takes it.
    public func word(_ key: String) throws(CommandFieldError) -> String {
        guard has(key) else { throw .missing(key) }
        guard let s = stringField(key), CommandLimits.isWord(s) else { throw .invalid(key) }
        return s
    }

    /// An optional word (nil when left out).
    public func optionalWord(_ key: String) throws(CommandFieldError) -> String? {
        guard has(key) else { return nil }
        guard let s = stringField(key), CommandLimits.isWord(s) else { throw .invalid(key) }
        return s
    }

    /// A whole number in `range`, `fallback` when left out.
    public func count(_ key: String, in range: ClosedRange<Int>, fallback: Int) throws(CommandFieldError) -> Int {
        guard has(key) else { return fallback }
        guard let n = numberField(key), n == n.rounded(), n >= Double(range.lowerBound), n <= Double(range.upperBound) else {
            throw .invalid(key)
        }
        return Int(n)
    }
}

public enum CommandLimits {
    /// Longest text taken from the page, in bytes (the room layer cuts further).
    public static let maxText = 1024

    /// One word of at most 128 bytes: no spaces or line breaks.
    public static func isWord(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 128 && !s.contains(where: { $0.isWhitespace || $0.isNewline })
    }

    /// `#RRGGBB` (or without the `#`).
    public static func color(_ s: String) -> UInt32? {
        let hex = s.hasPrefix("#") ? s.dropFirst() : s[...]
        guard hex.count == 6, hex.allSatisfy(\.isHexDigit) else { return nil }
        return UInt32(hex, radix: 16)
    }
}
