/// The text rules of room events, shared by `make` (on the author's strings)
/// and `parse` (on bytes from the network), so both accept exactly the same text.
///
/// Text is valid UTF-8 (no overlong forms, surrogates or values past U+10FFFF),
/// holds no control character — C0 U+0000...U+001F, DEL U+007F, C1
/// U+0080...U+009F — nor U+2028/U+2029 (they break lines in UIs and logs),
/// and is not only whitespace. Whitespace is the Unicode White_Space set left
/// after those exclusions, listed here so every implementation agrees:
/// U+0020, U+00A0, U+1680, U+2000...U+200A, U+202F, U+205F, U+3000.
public enum EventText {
    /// Checks `text` against the rules and a limit of `max` UTF-8 bytes.
    public static func check(_ text: String, field: String, max: Int) throws(EventError) {
        let count = text.utf8.count
        guard count > 0 else { throw .emptyText }
        guard count <= max else { throw .textTooLong(field: field, max: max) }
        var onlyWhitespace = true
        for scalar in text.unicodeScalars {
            if isControl(scalar.value) { throw .controlCharacters }
            if onlyWhitespace && !isWhitespace(scalar.value) { onlyWhitespace = false }
        }
        guard !onlyWhitespace else { throw .emptyText }
    }

    /// Checks a URL or reference: 1...`max` bytes of printable ASCII
    /// (0x20...0x7E), not only spaces.
    public static func checkASCII(_ text: String, field: String, max: Int) throws(EventError) {
        let count = text.utf8.count
        guard count > 0 else { throw .emptyText }
        guard count <= max else { throw .textTooLong(field: field, max: max) }
        var onlySpaces = true
        for byte in text.utf8 {
            if byte < 0x20 || byte == 0x7F { throw .controlCharacters }
            guard byte < 0x80 else { throw .badValue("\(field) must be printable ASCII") }
            if byte != 0x20 { onlySpaces = false }
        }
        guard !onlySpaces else { throw .emptyText }
    }

    /// The string whose UTF-8 is exactly `bytes`, or `invalidUTF8`. The other
    /// rules are left to `check`, so parse and make raise the same errors.
    public static func decode(_ bytes: ArraySlice<UInt8>) throws(EventError) -> String {
        var decoder = UTF8()
        var iterator = bytes.makeIterator()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return String(decoding: bytes, as: UTF8.self)
            case .error: throw .invalidUTF8
            }
        }
    }

    public static func isControl(_ v: UInt32) -> Bool {
        v < 0x20 || (0x7F...0x9F).contains(v) || v == 0x2028 || v == 0x2029
    }

    static func isWhitespace(_ v: UInt32) -> Bool {
        switch v {
        case 0x20, 0xA0, 0x1680, 0x2000...0x200A, 0x202F, 0x205F, 0x3000: true
        default: false
        }
    }
}
