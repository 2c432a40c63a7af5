import LVBCore
import LVBCrypto
import LVBGossip

/// A host's thumbnail of its room (a small JPEG of its latest keyframe),
/// signed so that a rendezvous passing it on cannot swap it
/// (lvbnode-protocol(7), RENDEZVOUS, thumbnails):
///
///     blob      = jpeg ‖ signature (64)
///     signature = SIGN(host, "lvbnode thumbnail v1" ‖ 0x00 ‖ room id (16) ‖ seq (8) ‖ jpeg)
public struct RoomThumbnail: Equatable, Sendable {
    public let room: RoomID
    /// Grows with every thumbnail of the room: an older or equal one is a replay.
    public let seq: UInt64
    public let jpeg: [UInt8]
    public let signature: [UInt8]

    /// Signs `jpeg` as `identity` (the room's host).
    public init(room: RoomID, seq: UInt64, jpeg: [UInt8], signedBy identity: Identity) throws(ThumbnailError) {
        try Self.check(jpeg)
        self.room = room
        self.seq = seq
        self.jpeg = jpeg
        signature = identity.sign(Self.signed(room: room, seq: seq, jpeg: jpeg))
    }

    /// The thumbnail a reassembled blob carries (not verified yet: `verify`).
    public init(room: RoomID, seq: UInt64, blob: [UInt8]) throws(ThumbnailError) {
        guard blob.count > 64, blob.count <= Self.maxBlob else { throw .badLength(blob.count) }
        let jpeg = Array(blob.dropLast(64))
        try Self.check(jpeg)
        self.room = room
        self.seq = seq
        self.jpeg = jpeg
        signature = Array(blob.suffix(64))
    }

    /// The longest blob: the largest JPEG and its signature.
    public static let maxBlob = RendezvousConstants.maxThumbnailBytes + 64

    public var blob: [UInt8] { jpeg + signature }

    /// Whether `host` signed it (the host key of the room's signed announcement).
    public func verify(host: NodeID) -> Bool {
        Identity.verify(signature: signature, message: Self.signed(room: room, seq: seq, jpeg: jpeg), by: host)
    }

    /// The blob cut into pieces of at most `maxPiece` bytes, as few as fit
    /// and of about one size; nil when more than `ThumbnailPiece.maxCount` would be needed.
    public func pieces(maxPiece: Int) -> [ThumbnailPiece]? {
        let blob = self.blob
        guard maxPiece > 0 else { return nil }
        let count = (blob.count + maxPiece - 1) / maxPiece
        guard count <= Int(ThumbnailPiece.maxCount) else { return nil }
        let size = (blob.count + count - 1) / count
        return (0..<count).map { i in
            ThumbnailPiece(index: UInt8(i), count: UInt8(count), bytes: Array(blob[(i * size)..<min(blob.count, (i + 1) * size)]))
        }
    }

    private static func signed(room: RoomID, seq: UInt64, jpeg: [UInt8]) -> [UInt8] {
        var w = ByteWriter(capacity: RendezvousConstants.thumbnailContext.count + 25 + jpeg.count)
        w.write(bytes: RendezvousConstants.thumbnailContext)
        w.write(UInt8(0))
        w.write(bytes: room.bytes)
        w.write(seq)
        w.write(bytes: jpeg)
        return w.bytes
    }

    /// A JPEG starts with its SOI marker; its size is bounded.
    private static func check(_ jpeg: [UInt8]) throws(ThumbnailError) {
        guard jpeg.count >= 4, jpeg.count <= RendezvousConstants.maxThumbnailBytes else { throw .badLength(jpeg.count) }
        guard jpeg[0] == 0xFF, jpeg[1] == 0xD8 else { throw .notJPEG }
    }
}

/// Why a thumbnail or a piece of one was refused (counted, never answered).
public enum ThumbnailError: Error, Equatable, CustomStringConvertible {
    case badLength(Int)
    case notJPEG
    /// A piece disagrees with the others of its thumbnail (count), or repeats one with other bytes.
    case inconsistent
    case badSignature
    /// Not from the room's announced host, or the room is not listed.
    case notTheHost
    /// Not newer than the one kept.
    case replayed

    public var description: String {
        switch self {
        case .badLength(let n): "thumbnail of \(n) bytes is out of bounds"
        case .notJPEG: "thumbnail is not a JPEG"
        case .inconsistent: "thumbnail pieces disagree"
        case .badSignature: "thumbnail signature does not verify"
        case .notTheHost: "thumbnail is not from the room's host"
        case .replayed: "thumbnail is not newer than the one kept"
        }
    }
}

/// One piece of a thumbnail's blob (types 11 and 13): `part` = index << 4 | count.
public struct ThumbnailPiece: Equatable, Sendable {
    public static let maxCount: UInt8 = 15

    public var index: UInt8
    public var count: UInt8
    public var bytes: [UInt8]

    public init(index: UInt8, count: UInt8, bytes: [UInt8]) {
        self.index = index
        self.count = count
        self.bytes = bytes
    }

    func write(into w: inout ByteWriter) {
        w.write(UInt8(index << 4 | count))
        w.write(bytes: bytes)
    }

    /// The piece at the reader, to the end; nil for part 0 with nothing after
    /// it (an answer's "none newer").
    static func read(_ r: inout ByteReader) throws -> ThumbnailPiece? {
        let part = try r.readUInt8()
        let bytes = Array(r.readRest())
        if part == 0 {
            guard bytes.isEmpty else { throw RendezvousMessageError.malformed }
            return nil
        }
        let (index, count) = (part >> 4, part & 0x0F)
        guard count >= 1, index < count, !bytes.isEmpty else { throw RendezvousMessageError.malformed }
        return ThumbnailPiece(index: index, count: count, bytes: bytes)
    }
}

/// A thumbnail's pieces put back together: one (room, seq) at a time,
/// never more than `RoomThumbnail.maxBlob` bytes held.
public struct ThumbnailAssembly {
    public let room: RoomID
    public let seq: UInt64
    public let count: UInt8
    private var parts: [UInt8: [UInt8]] = [:]
    private var bytes = 0

    public init(room: RoomID, seq: UInt64, count: UInt8) {
        self.room = room
        self.seq = seq
        self.count = count
    }

    /// Adds a piece; returns the thumbnail (not verified yet) once every
    /// piece is in. A piece that does not fit throws, and the assembly
    /// should be dropped.
    public mutating func add(_ piece: ThumbnailPiece) throws(ThumbnailError) -> RoomThumbnail? {
        guard piece.count == count, piece.index < count else { throw .inconsistent }
        if let had = parts[piece.index] {
            guard had == piece.bytes else { throw .inconsistent }
            return nil
        }
        guard bytes + piece.bytes.count <= RoomThumbnail.maxBlob else { throw .badLength(bytes + piece.bytes.count) }
        parts[piece.index] = piece.bytes
        bytes += piece.bytes.count
        guard parts.count == Int(count) else { return nil }
        return try RoomThumbnail(room: room, seq: seq, blob: (0..<count).flatMap { parts[$0] ?? [] })
    }
}
