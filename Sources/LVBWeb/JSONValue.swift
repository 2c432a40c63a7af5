import LVBCore

/// A JSON value (RFC 8259) as the studio page sends it: the commands are
/// small objects, so this parser is strict and bounded rather than fast. It
/// takes no Foundation (the binary stays one static file without it).
public enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Deepest nesting accepted: a command is one object with flat fields.
    public static let maxDepth = 8

    public enum ParseError: Error, Equatable {
        case unexpectedEnd
        case unexpected(UInt8, at: Int)
        case tooDeep
        case badEscape(at: Int)
        case badNumber(at: Int)
        case badUTF8
        case trailingData(at: Int)
    }

    /// Parses one JSON text (whitespace around it allowed, nothing else).
    public static func parse(_ bytes: some Collection<UInt8>) throws(ParseError) -> JSONValue {
        var p = Parser(bytes: Array(bytes))
        let value = try p.value(depth: 0)
        p.skipWhitespace()
        guard p.at == p.bytes.count else { throw .trailingData(at: p.at) }
        return value
    }

    /// `s` as a JSON string literal, quotes included (the node's output and
    /// its answers to the page; control characters escaped).
    public static func quote(_ s: String) -> String { JSONLine.quote(s) }

    public subscript(key: String) -> JSONValue? {
        if case .object(let o) = self { return o[key] }
        return nil
    }

    public var string: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    public var number: Double? {
        if case .number(let n) = self { return n }
        return nil
    }

    public var bool: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }
}

/// A command's fields as the page sent them (a non-object has none).
extension JSONValue: CommandFields {
    public func stringField(_ key: String) -> String? { self[key]?.string }
    public func numberField(_ key: String) -> Double? { self[key]?.number }
    public func boolField(_ key: String) -> Bool? { self[key]?.bool }
    public func has(_ key: String) -> Bool { self[key] != nil }
}

private struct Parser {
    let bytes: [UInt8]
    var at = 0

    mutating func skipWhitespace() {
        while at < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[at]) { at += 1 }
    }

    mutating func next() throws(JSONValue.ParseError) -> UInt8 {
        guard at < bytes.count else { throw .unexpectedEnd }
        defer { at += 1 }
        return bytes[at]
    }

    mutating func expect(_ word: String) throws(JSONValue.ParseError) {
        for b in word.utf8 {
            let start = at
            guard try next() == b else { throw .unexpected(bytes[start], at: start) }
        }
    }

    mutating func value(depth: Int) throws(JSONValue.ParseError) -> JSONValue {
        guard depth <= JSONValue.maxDepth else { throw .tooDeep }
        skipWhitespace()
        guard at < bytes.count else { throw .unexpectedEnd }
        switch bytes[at] {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "n"): try expect("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        case let b: throw .unexpected(b, at: at)
        }
    }

    mutating func object(depth: Int) throws(JSONValue.ParseError) -> JSONValue {
        at += 1
        var out: [String: JSONValue] = [:]
        skipWhitespace()
        if at < bytes.count, bytes[at] == UInt8(ascii: "}") {
            at += 1
            return .object(out)
        }
        while true {
            skipWhitespace()
            guard at < bytes.count else { throw .unexpectedEnd }
            guard bytes[at] == UInt8(ascii: "\"") else { throw .unexpected(bytes[at], at: at) }
            let key = try string()
            skipWhitespace()
            let colon = at
            guard try next() == UInt8(ascii: ":") else { throw .unexpected(bytes[colon], at: colon) }
            out[key] = try value(depth: depth + 1)
            skipWhitespace()
            let sep = at
            switch try next() {
            case UInt8(ascii: ","): continue
            case UInt8(ascii: "}"): return .object(out)
            default: throw .unexpected(bytes[sep], at: sep)
            }
        }
    }

    mutating func array(depth: Int) throws(JSONValue.ParseError) -> JSONValue {
        at += 1
        var out: [JSONValue] = []
        skipWhitespace()
        if at < bytes.count, bytes[at] == UInt8(ascii: "]") {
            at += 1
            return .array(out)
        }
        while true {
            out.append(try value(depth: depth + 1))
            skipWhitespace()
            let sep = at
            switch try next() {
            case UInt8(ascii: ","): continue
            case UInt8(ascii: "]"): return .array(out)
            default: throw .unexpected(bytes[sep], at: sep)
            }
        }
    }

    mutating func hex4() throws(JSONValue.ParseError) -> UInt32 {
        var v: UInt32 = 0
        for _ in 0..<4 {
            let start = at
            let b = try next()
            let digit: UInt8
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = b - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = b - UInt8(ascii: "A") + 10
            default: throw .badEscape(at: start)
            }
            v = v << 4 | UInt32(digit)
        }
        return v
    }

    mutating func string() throws(JSONValue.ParseError) -> String {
        at += 1
        var utf8: [UInt8] = []
        while true {
            let start = at
            let b = try next()
            switch b {
            case UInt8(ascii: "\""):
                guard let s = String(validating: utf8, as: UTF8.self) else { throw .badUTF8 }
                return s
            case UInt8(ascii: "\\"):
                let e = try next()
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(e)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800..<0xDC00).contains(scalar) {
                        // A surrogate pair: the low half must follow.
                        try expect("\\u")
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw .badEscape(at: start) }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let s = Unicode.Scalar(scalar) else { throw .badEscape(at: start) }
                    utf8.append(contentsOf: String(Character(s)).utf8)
                default: throw .badEscape(at: start)
                }
            case 0..<0x20: throw .unexpected(b, at: start)
            default: utf8.append(b)
            }
        }
    }

    mutating func number() throws(JSONValue.ParseError) -> Double {
        let start = at
        while at < bytes.count, "+-0123456789.eE".utf8.contains(bytes[at]) { at += 1 }
        let text = String(decoding: bytes[start..<at], as: UTF8.self)
        // Double(String) is lenient ("1e", "+1"); JSON is not.
        guard text.first != "+", let last = text.last, last.isNumber, let v = Double(text), v.isFinite else {
            throw .badNumber(at: start)
        }
        return v
    }
}
