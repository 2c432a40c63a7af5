/// RFC 4648 base32 in lower case without padding: printable, case-insensitive
/// on input, and free of characters that shells or URLs treat specially.
public enum Base32 {
    private static let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)
    private static let decodeTable: [Int8] = {
        var t = [Int8](repeating: -1, count: 256)
        for (i, c) in alphabet.enumerated() {
            t[Int(c)] = Int8(i)
            t[Int(c) - 32 + (c >= 97 ? 0 : 32)] = Int8(i)  // upper case too (digits map to themselves)
        }
        return t
    }()

    public static func encode<C: Collection>(_ data: C) -> String where C.Element == UInt8 {
        var out = [UInt8]()
        out.reserveCapacity((data.count * 8 + 4) / 5)
        var buffer: UInt32 = 0
        var bits = 0
        for byte in data {
            buffer = (buffer << 8) | UInt32(byte)
            bits += 8
            while bits >= 5 {
                out.append(alphabet[Int((buffer >> UInt32(bits - 5)) & 31)])
                bits -= 5
            }
        }
        if bits > 0 { out.append(alphabet[Int((buffer << UInt32(5 - bits)) & 31)]) }
        return String(decoding: out, as: UTF8.self)
    }

    public static func decode(_ text: String) throws(CoreError) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(text.utf8.count * 5 / 8)
        var buffer: UInt32 = 0
        var bits = 0
        for c in text.utf8 {
            let v = decodeTable[Int(c)]
            guard v >= 0 else { throw .badEncoding("character '\(Character(Unicode.Scalar(c)))' is not base32") }
            buffer = (buffer << 5) | UInt32(v)
            bits += 5
            if bits >= 8 {
                out.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits - 8)))
                bits -= 8
            }
        }
        // Leftover bits must be zero padding, or the text was cut or altered.
        guard bits < 5, buffer & ((1 << UInt32(bits)) - 1) == 0 else {
            throw .badEncoding("length or final character is wrong")
        }
        return out
    }
}
