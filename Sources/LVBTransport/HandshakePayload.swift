import LVBCore
import LVBCrypto

/// The plaintext payloads carried inside Noise handshake messages.
///
/// Initiator (IK message 1, XX message 3): Ed25519 public key (32) ‖ TAI64N (12).
/// Responder (XX message 2): Ed25519 public key (32). IK message 2: empty.
/// The Ed25519 key must convert to the Noise static key the message carried:
/// that binds the session to the node's signing identity.
public enum HandshakePayload {
    public static let initiatorLength = 32 + 12
    public static let responderLength = 32

    public static func initiator(id: NodeID, timestamp: TAI64N) -> [UInt8] {
        id.publicKey + timestamp.bytes
    }

    public static func parseInitiator(_ p: [UInt8], remoteStatic: [UInt8]?) throws(TransportError) -> (NodeID, TAI64N) {
        guard p.count == initiatorLength else { throw .malformed("initiator payload length \(p.count)") }
        let id = try boundIdentity(Array(p[0..<32]), remoteStatic: remoteStatic)
        return (id, TAI64N(bytes: p[32...]))
    }

    public static func parseResponder(_ p: [UInt8], remoteStatic: [UInt8]?) throws(TransportError) -> NodeID {
        guard p.count == responderLength else { throw .malformed("responder payload length \(p.count)") }
        return try boundIdentity(p, remoteStatic: remoteStatic)
    }

    private static func boundIdentity(_ key: [UInt8], remoteStatic: [UInt8]?) throws(TransportError) -> NodeID {
        guard let id = try? NodeID(publicKey: key) else { throw .malformed("invalid identity key") }
        guard let remoteStatic, constantTimeEqual(id.noiseStaticKey, remoteStatic) else { throw .identityMismatch }
        return id
    }
}

/// The initiation timestamp (12 bytes, big-endian: 2^62 + Unix seconds, then
/// nanoseconds), as WireGuard uses to defeat replays of message 1. It has a
/// TAI64N label's layout but not TAI's offset from UTC (lvbnode-protocol(7),
/// Timestamps). Only its order matters: a responder accepts strictly newer ones.
public struct TAI64N: Comparable, Sendable {
    public var seconds: UInt64
    public var nanoseconds: UInt32

    public init(seconds: UInt64, nanoseconds: UInt32) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
    }

    public init(_ wall: WallTime) {
        self.init(seconds: wall.seconds &+ (1 << 62), nanoseconds: wall.nanoseconds)
    }

    init(bytes: ArraySlice<UInt8>) {
        var r = ByteReader(bytes)
        seconds = (try? r.readUInt64()) ?? 0
        nanoseconds = (try? r.readUInt32()) ?? 0
    }

    public var bytes: [UInt8] {
        var w = ByteWriter(capacity: 12)
        w.write(seconds)
        w.write(nanoseconds)
        return w.bytes
    }

    public static func < (a: TAI64N, b: TAI64N) -> Bool { (a.seconds, a.nanoseconds) < (b.seconds, b.nanoseconds) }

    /// The next representable instant after `self`.
    public var successor: TAI64N {
        nanoseconds >= 999_999_999 ? TAI64N(seconds: seconds + 1, nanoseconds: 0) : TAI64N(seconds: seconds, nanoseconds: nanoseconds + 1)
    }
}
