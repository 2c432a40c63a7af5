/// Hex helpers for logs, tests and fixtures.
public enum Hex {
    public static func encode<C: Collection>(_ data: C) -> String where C.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(data.count * 2)
        for b in data {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    public static func decode(_ text: String) throws(CoreError) -> [UInt8] {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { throw .badEncoding("odd-length hex") }
        var out = [UInt8]()
        out.reserveCapacity(chars.count / 2)
        func nibble(_ c: UInt8) throws(CoreError) -> UInt8 {
            switch c {
            case 48...57: return c - 48
            case 97...102: return c - 87
            case 65...70: return c - 55
            default: throw .badEncoding("not hex")
            }
        }
        var i = 0
        while i < chars.count {
            out.append(try nibble(chars[i]) << 4 | nibble(chars[i + 1]))
            i += 2
        }
        return out
    }
}
