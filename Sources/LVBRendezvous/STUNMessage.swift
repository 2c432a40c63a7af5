import LVBCore

/// One STUN attribute (RFC 8489 §14) as it stood on the wire: its value and
/// the padding that followed it (any bytes; kept so a message re-encodes
/// byte for byte and its FINGERPRINT still holds).
public struct STUNAttribute: Equatable, Sendable {
    public var type: UInt16
    public var value: [UInt8]
    public var padding: [UInt8]

    /// A new attribute, padded with zeros to a multiple of 4 bytes.
    public init(type: UInt16, value: [UInt8]) {
        self.type = type
        self.value = value
        padding = [UInt8](repeating: 0, count: (4 - value.count % 4) % 4)
    }

    init(type: UInt16, value: [UInt8], padding: [UInt8]) {
        self.type = type
        self.value = value
        self.padding = padding
    }

    /// Comprehension-required attributes (below 0x8000) must be understood.
    public var isComprehensionRequired: Bool { type < RendezvousConstants.Attribute.comprehensionOptionalFrom }
}

/// A STUN message (RFC 8489 §5):
///
///      0                   1                   2                   3
///      0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
///     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
///     |0 0|     STUN Message Type     |         Message Length        |
///     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
///     |                         Magic Cookie                          |
///     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
///     |                     Transaction ID (96 bits)                  |
///     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
///
/// then attributes, each type (16) ‖ length (16) ‖ value, padded to 4 bytes.
public struct STUNMessage: Equatable, Sendable {
    public var type: UInt16
    public var transactionID: [UInt8]
    public var attributes: [STUNAttribute]

    public init(type: UInt16, transactionID: [UInt8], attributes: [STUNAttribute] = []) {
        self.type = type
        self.transactionID = transactionID
        self.attributes = attributes
    }

    /// Whether a datagram is STUN rather than an lvbnode session packet
    /// (RFC 7983-style demultiplexing on one port): top two bits zero, the
    /// magic cookie in bytes 4–7, a length that fits the datagram.
    public static func looksLikeSTUN(_ bytes: ArraySlice<UInt8>) -> Bool {
        guard bytes.count >= RendezvousConstants.stunHeaderSize, bytes.count % 4 == 0 else { return false }
        let b = bytes.startIndex
        guard bytes[b] & 0xC0 == 0, UInt32(bigEndianBytes: bytes[(b + 4)..<(b + 8)]) == RendezvousConstants.magicCookie else { return false }
        return Int(bytes[b + 2]) << 8 | Int(bytes[b + 3]) == bytes.count - RendezvousConstants.stunHeaderSize
    }

    /// Parses one message; checks its FINGERPRINT if it has one (§14.7:
    /// then it must be the last attribute). Every length is checked against
    /// what remains before it is used.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws(STUNError) -> STUNMessage {
        let header = RendezvousConstants.stunHeaderSize
        guard bytes.count >= header else { throw .truncated }
        let b = bytes.startIndex
        guard bytes[b] & 0xC0 == 0,
              UInt32(bigEndianBytes: bytes[(b + 4)..<(b + 8)]) == RendezvousConstants.magicCookie else { throw .notSTUN }
        let length = Int(bytes[b + 2]) << 8 | Int(bytes[b + 3])
        guard length % 4 == 0, length == bytes.count - header else { throw .badLength }
        var message = STUNMessage(type: UInt16(bytes[b]) << 8 | UInt16(bytes[b + 1]),
                                  transactionID: Array(bytes[(b + 8)..<(b + header)]))
        var at = b + header
        while at < bytes.endIndex {
            guard bytes.endIndex - at >= 4 else { throw .attributeOverrun }
            let type = UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1])
            let valueLength = Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
            let padded = (valueLength + 3) & ~3
            guard bytes.endIndex - (at + 4) >= padded else { throw .attributeOverrun }
            let value = bytes[(at + 4)..<(at + 4 + valueLength)]
            if type == RendezvousConstants.Attribute.fingerprint {
                guard valueLength == 4, at + 8 == bytes.endIndex,
                      UInt32(bigEndianBytes: value) == CRC32.checksum(bytes[b..<at]) ^ RendezvousConstants.fingerprintXOR
                else { throw .badFingerprint }
            }
            message.attributes.append(STUNAttribute(type: type, value: Array(value),
                                                    padding: Array(bytes[(at + 4 + valueLength)..<(at + 4 + padded)])))
            at += 4 + padded
        }
        return message
    }

    /// The first attribute of `type`, if any.
    public func attribute(_ type: UInt16) -> STUNAttribute? { attributes.first { $0.type == type } }

    /// The message on the wire, attributes as they are (a FINGERPRINT among
    /// them is written as it stands; use `encoded(fingerprint: true)` for a new one).
    public var encoded: [UInt8] { encode(attributes) }

    /// The message with a FINGERPRINT computed over it and appended (§14.7).
    public func encoded(fingerprint: Bool) -> [UInt8] {
        let plain = attributes.filter { $0.type != RendezvousConstants.Attribute.fingerprint }
        guard fingerprint else { return encode(plain) }
        // The length field already counts the FINGERPRINT when the CRC is taken.
        var bytes = encode(plain, extraLength: 8)
        let crc = CRC32.checksum(bytes) ^ RendezvousConstants.fingerprintXOR
        var w = ByteWriter(capacity: 8)
        w.write(RendezvousConstants.Attribute.fingerprint)
        w.write(UInt16(4))
        w.write(crc)
        bytes += w.bytes
        return bytes
    }

    private func encode(_ attributes: [STUNAttribute], extraLength: Int = 0) -> [UInt8] {
        let body = attributes.reduce(0) { $0 + 4 + $1.value.count + $1.padding.count }
        var w = ByteWriter(capacity: RendezvousConstants.stunHeaderSize + body + extraLength)
        w.write(type)
        w.write(UInt16(truncatingIfNeeded: body + extraLength))
        w.write(RendezvousConstants.magicCookie)
        w.write(bytes: transactionID)
        for a in attributes {
            w.write(a.type)
            w.write(UInt16(truncatingIfNeeded: a.value.count))
            w.write(bytes: a.value)
            w.write(bytes: a.padding)
        }
        return w.bytes
    }
}

extension UInt32 {
    /// Four bytes, big-endian (callers check the count).
    init(bigEndianBytes b: ArraySlice<UInt8>) {
        var v: UInt32 = 0
        for byte in b.prefix(4) { v = v << 8 | UInt32(byte) }
        self = v
    }
}
