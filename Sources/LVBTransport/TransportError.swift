/// Why the transport rejected a datagram or a request. Network-caused cases
/// are counted and dropped, never thrown past the transport.
public enum TransportError: Error, Equatable, CustomStringConvertible {
    /// The first byte is not a known packet type.
    case unknownPacketType(UInt8)
    /// The packet's layout or a field is wrong; the text says which.
    case malformed(String)
    /// A handshake payload's identity does not match its Noise static key.
    case identityMismatch
    /// The Noise handshake rejected the message.
    case handshakeFailed(String)
    /// A payload is larger than one datagram can carry.
    case payloadTooLarge(Int)
    /// No session with that peer is established.
    case noSession

    public var description: String {
        switch self {
        case let .unknownPacketType(t): "unknown packet type \(t)"
        case let .malformed(why): "malformed packet: \(why)"
        case .identityMismatch: "handshake identity does not match its static key"
        case let .handshakeFailed(why): "handshake failed: \(why)"
        case let .payloadTooLarge(n): "payload of \(n) bytes exceeds the datagram limit"
        case .noSession: "no session with that peer"
        }
    }
}
