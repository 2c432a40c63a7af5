import LVBCore
import LVBCrypto

// Outer packet formats (man/lvbnode-protocol.7 §PACKETS). Every datagram starts
// with a 4-byte header: type, then three zero bytes. Integers after it are
// little-endian, as in WireGuard.
//
//  0               1               2               3
//  +---------------+---------------+---------------+---------------+
//  |     type      |            reserved (zero)                    |
//  +---------------+---------------+---------------+---------------+
//
// Handshake messages end with mac1 (16) and mac2 (16); Noise bytes in between.

/// The packet types on the wire.
public enum PacketType: UInt8, Sendable {
    case ikInitiation = 1
    case ikResponse = 2
    case cookieReply = 3
    case transport = 4
    case xxInitiation = 5
    case xxResponse = 6
    case xxFinal = 7
    case unknownSession = 8
}

/// Sizes of the fixed-layout messages, for parsing and the amplification rule.
public enum MessageSize {
    public static let header = 4
    public static let macs = 2 * macLength
    /// IK message 1: e, s (sealed), payload (sealed identity + timestamp).
    public static let ikInitiationNoise = 32 + 48 + (HandshakePayload.initiatorLength + 16)
    public static let ikInitiation = header + 4 + ikInitiationNoise + macs
    /// IK message 2: e, empty sealed payload.
    public static let ikResponseNoise = 32 + 16
    public static let ikResponse = header + 8 + ikResponseNoise + macs
    /// XX message 2: e, s (sealed), sealed responder identity.
    public static let xxResponseNoise = 32 + 48 + (HandshakePayload.responderLength + 16)
    public static let xxResponse = header + 8 + xxResponseNoise + macs
    /// XX message 1 is padded so that the response is never larger (no amplification).
    public static let xxInitiationPadding = xxResponse - (header + 4 + 32 + macs)
    public static let xxInitiationNoise = 32 + xxInitiationPadding
    public static let xxInitiation = header + 4 + xxInitiationNoise + macs
    /// XX message 3: s (sealed), sealed identity + timestamp.
    public static let xxFinalNoise = 48 + (HandshakePayload.initiatorLength + 16)
    public static let xxFinal = header + 4 + xxFinalNoise + macs
    public static let cookieReply = header + 4 + cookieNonceLength + encryptedCookieLength
    /// Smaller than any transport packet it answers: never an amplifier.
    public static let unknownSession = header + 4
    /// Transport: header, receiver index, counter, then sealed (channel ‖ payload).
    public static let transportHeader = header + 4 + 8
    public static let transportOverhead = transportHeader + 16
    /// Largest plaintext (channel byte included) that fits one datagram.
    public static let maxTransportPlaintext = CoreConstants.maxDatagram - transportOverhead
}

/// A parsed handshake message: indices plus the Noise bytes; `raw` is the whole datagram.
public struct HandshakeMessage {
    public var type: PacketType
    public var senderIndex: UInt32   // 0 for xxFinal, which carries only the receiver's
    public var receiverIndex: UInt32 // 0 for initiations
    public var noise: ArraySlice<UInt8>
    public var raw: ArraySlice<UInt8>
}

/// A parsed transport packet header; `sealed` is where ciphertext ‖ tag lie in
/// the datagram (a range, not a slice, so decrypting in place needs no copy).
public struct TransportPacket {
    public var receiverIndex: UInt32
    public var counter: UInt64
    public var sealed: Range<Int>
}

/// A parsed cookie reply.
public struct CookieReplyMessage {
    public var receiverIndex: UInt32
    public var nonce: ArraySlice<UInt8>
    public var sealed: ArraySlice<UInt8>
}

/// Any datagram the transport understands.
public enum Packet {
    case handshake(HandshakeMessage)
    case transport(TransportPacket)
    case cookieReply(CookieReplyMessage)
    /// "I hold no session under this index": the receiver index of a
    /// transport packet the sender could not place (it restarted, or
    /// forgot the session).
    case unknownSession(UInt32)

    /// Parses the outer layer; checks type, reserved bytes and exact sizes.
    public static func parse(_ datagram: ArraySlice<UInt8>) throws(TransportError) -> Packet {
        var r = ByteReader(datagram)
        do {
            let typeByte = try r.readUInt8()
            let reserved = try r.readBytes(3)
            guard let type = PacketType(rawValue: typeByte) else { throw TransportError.unknownPacketType(typeByte) }
            guard reserved.allSatisfy({ $0 == 0 }) else { throw TransportError.malformed("reserved bytes not zero") }
            switch type {
            case .transport:
                guard datagram.count >= MessageSize.transportOverhead else { throw TransportError.malformed("short transport packet") }
                let receiver = try r.readUInt32LE()
                let counter = try r.readUInt64LE()
                let rest = r.readRest()
                return .transport(TransportPacket(receiverIndex: receiver, counter: counter, sealed: rest.startIndex..<rest.endIndex))
            case .unknownSession:
                try expectSize(datagram, MessageSize.unknownSession, type)
                return .unknownSession(try r.readUInt32LE())
            case .cookieReply:
                try expectSize(datagram, MessageSize.cookieReply, type)
                let receiver = try r.readUInt32LE()
                let nonce = try r.readBytes(cookieNonceLength)
                let sealed = try r.readBytes(encryptedCookieLength)
                return .cookieReply(CookieReplyMessage(receiverIndex: receiver, nonce: nonce, sealed: sealed))
            case .ikInitiation, .xxInitiation:
                try expectSize(datagram, type == .ikInitiation ? MessageSize.ikInitiation : MessageSize.xxInitiation, type)
                let sender = try r.readUInt32LE()
                return .handshake(HandshakeMessage(type: type, senderIndex: sender, receiverIndex: 0,
                                                   noise: try r.readBytes(r.remaining - MessageSize.macs), raw: datagram))
            case .ikResponse, .xxResponse:
                try expectSize(datagram, type == .ikResponse ? MessageSize.ikResponse : MessageSize.xxResponse, type)
                let sender = try r.readUInt32LE()
                let receiver = try r.readUInt32LE()
                return .handshake(HandshakeMessage(type: type, senderIndex: sender, receiverIndex: receiver,
                                                   noise: try r.readBytes(r.remaining - MessageSize.macs), raw: datagram))
            case .xxFinal:
                try expectSize(datagram, MessageSize.xxFinal, type)
                let receiver = try r.readUInt32LE()
                return .handshake(HandshakeMessage(type: type, senderIndex: 0, receiverIndex: receiver,
                                                   noise: try r.readBytes(r.remaining - MessageSize.macs), raw: datagram))
            }
        } catch let e as TransportError {
            throw e
        } catch {
            throw .malformed("truncated packet")
        }
    }

    private static func expectSize(_ d: ArraySlice<UInt8>, _ size: Int, _ t: PacketType) throws(TransportError) {
        guard d.count == size else { throw .malformed("\(t) must be \(size) bytes, got \(d.count)") }
    }

    /// Builds a handshake datagram with zeroed mac fields (the caller fills them).
    public static func handshake(type: PacketType, sender: UInt32?, receiver: UInt32?, noise: [UInt8]) -> [UInt8] {
        var w = ByteWriter(capacity: 12 + noise.count + MessageSize.macs)
        w.write(type.rawValue)
        w.writeZeros(3)
        if let sender { w.writeLE(sender) }
        if let receiver { w.writeLE(receiver) }
        w.write(bytes: noise)
        w.writeZeros(MessageSize.macs)
        return w.bytes
    }

    public static func unknownSession(index: UInt32) -> [UInt8] {
        var w = ByteWriter(capacity: MessageSize.unknownSession)
        w.write(PacketType.unknownSession.rawValue)
        w.writeZeros(3)
        w.writeLE(index)
        return w.bytes
    }

    public static func cookieReply(receiver: UInt32, nonce: [UInt8], sealed: [UInt8]) -> [UInt8] {
        var w = ByteWriter(capacity: MessageSize.cookieReply)
        w.write(PacketType.cookieReply.rawValue)
        w.writeZeros(3)
        w.writeLE(receiver)
        w.write(bytes: nonce)
        w.write(bytes: sealed)
        return w.bytes
    }
}
