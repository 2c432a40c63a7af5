import LVBCore
import LVBCrypto

/// One piece of a relayed session datagram: a rendezvous's relay (its
/// messages 9 and 10) and a member's (introduce channel, messages 3 and 4)
/// carry a sealed datagram, which with their header can outgrow one session
/// payload, in one or two pieces.
public struct RelayPiece: Equatable, Sendable {
    /// A datagram goes in at most this many pieces.
    public static let maxCount: UInt8 = 2
    /// Bytes a relay message adds in front of its piece, type byte included.
    public static let header = 1 + 32 + 2 + 1

    public var id: UInt16
    public var index: UInt8
    public var count: UInt8
    public var bytes: [UInt8]

    public init(id: UInt16, index: UInt8, count: UInt8, bytes: [UInt8]) {
        self.id = id
        self.index = index
        self.count = count
        self.bytes = bytes
    }

    /// `datagram` cut into pieces whose messages fit `maxPayload`; nil when even two do not.
    public static func split(_ datagram: [UInt8], id: UInt16, maxPayload: Int) -> [RelayPiece]? {
        let room = maxPayload - header
        guard room > 0 else { return nil }
        if datagram.count <= room { return [RelayPiece(id: id, index: 0, count: 1, bytes: datagram)] }
        let half = (datagram.count + 1) / 2
        guard half <= room else { return nil }
        return [RelayPiece(id: id, index: 0, count: 2, bytes: Array(datagram[..<half])),
                RelayPiece(id: id, index: 1, count: 2, bytes: Array(datagram[half...]))]
    }
}

extension RelayPiece {
    /// A relay message's body after its type byte: peer (32) ‖ id (2) ‖
    /// part (1, index << 4 | count) ‖ piece (to the end).
    public func write(peer: NodeID, into w: inout ByteWriter) {
        w.write(bytes: peer.publicKey)
        w.write(id)
        w.write(UInt8(index << 4 | count))
        w.write(bytes: bytes)
    }

    /// Reads what `write(peer:into:)` wrote, to the end of the message; nil
    /// when the peer is no key, the piece empty or its part out of range.
    public static func read(_ r: inout ByteReader) throws(CoreError) -> (peer: NodeID, piece: RelayPiece)? {
        guard let peer = try? NodeID(publicKey: Array(try r.readBytes(32))) else { return nil }
        let id = try r.readUInt16(), part = try r.readUInt8()
        let bytes = Array(r.readRest())
        let (index, count) = (part >> 4, part & 0x0F)
        guard !bytes.isEmpty, (1...maxCount).contains(count), index < count else { return nil }
        return (peer, RelayPiece(id: id, index: index, count: count, bytes: bytes))
    }
}
