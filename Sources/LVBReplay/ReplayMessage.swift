import LVBCore

/// Messages on the replay channel (7) between a node that plays a replay
/// and the nodes that hold it. Files go in chunks of `chunkSize` bytes,
/// each chunk one message, asked for by the player a few at a time.
///
///     request = 1 || replay id (16) || index (4) || first (2) || count (1)
///     chunk   = 2 || replay id (16) || index (4) || chunk (2) || total (4) || data
///     missing = 3 || replay id (16) || index (4)
///
/// `index` names a segment, or 0xFFFFFFFF the manifest. A request asks for
/// chunks first ..< first + count (count 1 to 64); a chunk carries its
/// file's whole length (`total`) and 1 to 1024 bytes (the last chunk may be
/// shorter). `missing`: the sender holds no such file.
public enum ReplayMessage: Equatable, Sendable {
    case request(ReplayID, index: UInt32, first: UInt16, count: UInt8)
    case chunk(ReplayID, index: UInt32, chunk: UInt16, total: UInt32, data: ArraySlice<UInt8>)
    case missing(ReplayID, index: UInt32)

    public static let manifestIndex = UInt32.max
    public static let chunkSize = 1024
    public static let maxRequestChunks: UInt8 = 64
    /// The largest file sent in chunks (a manifest of `ReplayConstants.maxSegments`, or a segment).
    static let maxTotal = max(ReplayConstants.segmentMaxBytes, ReplayLibrary.manifestLimit)

    public var bytes: [UInt8] {
        var w = ByteWriter(capacity: 32)
        switch self {
        case let .request(id, index, first, count):
            w.write(UInt8(1)); w.write(bytes: id.bytes); w.write(index); w.write(first); w.write(count)
        case let .chunk(id, index, chunk, total, data):
            w.write(UInt8(2)); w.write(bytes: id.bytes); w.write(index); w.write(chunk); w.write(total); w.write(bytes: data)
        case let .missing(id, index):
            w.write(UInt8(3)); w.write(bytes: id.bytes); w.write(index)
        }
        return w.bytes
    }

    /// Every field checked: a chunk's data must be what its index and the total say.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws(ReplayError) -> ReplayMessage {
        var r = ByteReader(bytes)
        guard let type = try? r.readUInt8(), let idBytes = try? r.readBytes(16), let index = try? r.readUInt32() else {
            throw .truncated("replay message")
        }
        let id = ReplayID(checked: Array(idBytes))
        switch type {
        case 1:
            guard let first = try? r.readUInt16(), let count = try? r.readUInt8(), r.isAtEnd else { throw .truncated("replay request") }
            guard (1...maxRequestChunks).contains(count) else { throw .malformed("replay request for \(count) chunks (1 to \(maxRequestChunks))") }
            return .request(id, index: index, first: first, count: count)
        case 2:
            guard let chunk = try? r.readUInt16(), let total = try? r.readUInt32() else { throw .truncated("replay chunk") }
            let data = r.readRest()
            guard total > 0, total <= maxTotal else { throw .malformed("replay file of \(total) bytes") }
            let start = Int(chunk) * chunkSize
            guard start < Int(total), data.count == min(chunkSize, Int(total) - start) else {
                throw .malformed("replay chunk \(chunk) of \(data.count) bytes in a file of \(total)")
            }
            return .chunk(id, index: index, chunk: chunk, total: total, data: data)
        case 3:
            guard r.isAtEnd else { throw .malformed("replay missing with trailing bytes") }
            return .missing(id, index: index)
        default:
            throw .malformed("replay message of unknown type \(type)")
        }
    }

    /// Whether a replay-channel payload is a request (for a holder's server).
    public static func isRequest(_ payload: ArraySlice<UInt8>) -> Bool { payload.first == 1 }

    /// Chunks a file of `total` bytes takes.
    public static func chunks(_ total: Int) -> Int { (total + chunkSize - 1) / chunkSize }
}
