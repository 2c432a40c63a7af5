/// Errors raised by LVBCore's parsers and helpers.
public enum CoreError: Error, Equatable, CustomStringConvertible {
    /// A read needed more bytes than the input had left.
    case truncated(needed: Int, remaining: Int)
    /// The input had bytes left over after a complete message.
    case trailingBytes(Int)
    /// An address was not `ip:port`, `[ipv6]:port` or `localhost:port`.
    case badAddress(String)
    /// Text was not valid base32 of the expected length.
    case badEncoding(String)

    public var description: String {
        switch self {
        case let .truncated(needed, remaining): "truncated input: needed \(needed) bytes, \(remaining) left"
        case let .trailingBytes(n): "\(n) unexpected trailing bytes"
        case let .badAddress(s): "bad address '\(s)': use IP:PORT, [IPv6]:PORT or localhost:PORT"
        case let .badEncoding(s): "bad encoding: \(s)"
        }
    }
}
