import LVBTransport

/// How FuzzReceive delivers one input, chosen by its first byte. Below 0x80
/// (every real packet type) the input is delivered as it is; from 0x80 on —
/// never a valid type — the low bits pick a way past a gate random mutation
/// cannot cross: the live session's index, the peer's keys, or valid MACs.
public enum DeliveryMode: Equatable, Sendable {
    /// The input, unchanged, from the attacker.
    case raw
    /// Bytes 0..<8 become a transport header for the live session's index;
    /// counter and ciphertext stay fuzzed. From the attacker.
    case liveHeaderFromAttacker
    /// As `liveHeaderFromAttacker`, but from the peer's own address.
    case liveHeaderFromPeer
    /// The peer seals a genuine packet: byte 1 picks the channel (low two
    /// bits), bytes 2... are the payload.
    case sealedByPeer
    /// A handshake message of this type built from bytes 1..., with a valid
    /// mac1 (and mac2 once the core has handed out a cookie).
    case handshake(PacketType)

    /// The handshake messages a responder consumes.
    public static let handshakeTypes: [PacketType] = [.ikInitiation, .xxInitiation, .xxFinal]

    public init(selector: UInt8?) {
        guard let s = selector, s >= 0x80 else { self = .raw; return }
        switch s & 3 {
        case 0: self = .liveHeaderFromAttacker
        case 1: self = .liveHeaderFromPeer
        case 2: self = .sealedByPeer
        default: self = .handshake(Self.handshakeTypes[Int((s >> 2) & 0x1F) % Self.handshakeTypes.count])
        }
    }

    /// A first byte that selects this mode (for writing seed inputs).
    public var selector: UInt8 {
        switch self {
        case .raw: 0x00
        case .liveHeaderFromAttacker: 0x80
        case .liveHeaderFromPeer: 0x81
        case .sealedByPeer: 0x82
        case .handshake(let t): 0x83 | UInt8(Self.handshakeTypes.firstIndex(of: t) ?? 0) << 2
        }
    }
}
