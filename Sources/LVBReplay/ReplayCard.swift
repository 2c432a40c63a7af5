import LVBCore
import LVBCrypto
import LVBGossip

/// What a replay is, apart from its segments: the manifest's header.
public struct ReplayInfo: Equatable, Sendable {
    public var room: RoomID
    public var host: NodeID
    public var startedMs: UInt64
    public var title: String
    public var width: UInt16, height: UInt16
    public var audioChannels: UInt8
    public var ended: Bool
    /// The live was a private room's (a password or invites): its replay
    /// is never served to others nor listed, only kept by its host.
    public var isPrivate = false

    public var id: ReplayID { ReplayID.derive(room: room, host: host, startedMs: startedMs) }

    static let magic: [UInt8] = Array("LVBRMAN".utf8) + [2]
    public static let maxTitleBytes = 100

    func write(_ w: inout ByteWriter) {
        let titleBytes = Array(title.utf8.prefix(Self.maxTitleBytes))
        w.write(bytes: Self.magic)
        w.write(bytes: id.bytes)
        w.write(bytes: room.bytes)
        w.write(bytes: host.publicKey)
        w.write(startedMs)
        w.write(UInt8(titleBytes.count))
        w.write(bytes: titleBytes)
        w.write(width)
        w.write(height)
        w.write(audioChannels)
        w.write(UInt8(ended ? 1 : 0) | UInt8(isPrivate ? 2 : 0))
    }

    /// Reads and checks a header, its id against its room, host and start.
    static func read(_ r: inout ByteReader) throws(ReplayError) -> ReplayInfo {
        guard let head = try? r.readBytes(magic.count), Array(head) == magic else { throw .malformed("not a replay manifest (bad magic)") }
        guard let idBytes = try? r.readBytes(16), let roomBytes = try? r.readBytes(16), let hostBytes = try? r.readBytes(32),
              let started = try? r.readUInt64(), let titleLength = try? r.readUInt8(),
              let titleBytes = try? r.readBytes(Int(titleLength)), let width = try? r.readUInt16(), let height = try? r.readUInt16(),
              let channels = try? r.readUInt8(), let flags = try? r.readUInt8()
        else { throw .truncated("replay manifest header") }
        guard titleLength <= maxTitleBytes, let title = String(validating: titleBytes, as: UTF8.self) else {
            throw .malformed("replay title is not UTF-8 of at most \(maxTitleBytes) bytes")
        }
        guard (width == 0) == (height == 0), channels <= 2, flags & ~3 == 0 else {
            throw .malformed("replay tracks \(width)x\(height), \(channels) channels, flags \(flags)")
        }
        guard let room = try? RoomID(bytes: Array(roomBytes)), let host = try? NodeID(publicKey: Array(hostBytes)) else {
            throw .malformed("replay manifest room or host")
        }
        var info = ReplayInfo(room: room, host: host, startedMs: started, title: title, width: width, height: height,
                              audioChannels: channels, ended: flags & 1 == 1)
        info.isPrivate = flags & 2 == 2
        guard Array(idBytes) == info.id.bytes else { throw .forged("replay manifest id does not match its room, host and start") }
        return info
    }
}

/// A replay as a room list shows it, signed by its host: the manifest's
/// header, its segment count and duration, and the hash of its entries,
/// with the manifest's own signature (it covers exactly these).
///
///     card = header || count (4) || duration (4) || entries hash (32) || signature (64)
public struct ReplayCard: Equatable, Sendable {
    public let info: ReplayInfo
    public let count: UInt32
    public let durationMs: UInt32
    public let entriesHash: [UInt8]
    public let signature: [UInt8]

    static let signingContext: [UInt8] = Array("lvbnode replay manifest v2".utf8) + [0]

    public var id: ReplayID { info.id }

    /// Checks the host's signature.
    init(info: ReplayInfo, count: UInt32, durationMs: UInt32, entriesHash: [UInt8], signature: [UInt8]) throws(ReplayError) {
        self.info = info
        self.count = count
        self.durationMs = durationMs
        self.entriesHash = entriesHash
        self.signature = signature
        let message = Self.signingContext + Self.summary(info, count: count, durationMs: durationMs) + entriesHash
        guard Identity.verify(signature: signature, message: message, by: info.host) else {
            throw .forged("replay manifest not signed by its host \(info.host.short)")
        }
    }

    /// The header, count and duration: how a manifest starts.
    static func summary(_ info: ReplayInfo, count: UInt32, durationMs: UInt32) -> [UInt8] {
        var w = ByteWriter(capacity: 192)
        info.write(&w)
        w.write(count)
        w.write(durationMs)
        return w.bytes
    }

    public var encoded: [UInt8] {
        Self.summary(info, count: count, durationMs: durationMs) + entriesHash + signature
    }

    public static let maxEncoded = 8 + 16 + 16 + 32 + 8 + 1 + ReplayInfo.maxTitleBytes + 6 + 8 + 32 + 64

    public static func parse(_ bytes: ArraySlice<UInt8>) throws(ReplayError) -> ReplayCard {
        guard bytes.count <= maxEncoded else { throw .malformed("replay card of \(bytes.count) bytes") }
        var r = ByteReader(bytes)
        let info = try ReplayInfo.read(&r)
        guard let count = try? r.readUInt32(), let duration = try? r.readUInt32(), let hash = try? r.readBytes(32),
              let signature = try? r.readBytes(64), r.isAtEnd else { throw .truncated("replay card") }
        guard count <= ReplayConstants.maxSegments else { throw .malformed("replay card of \(count) segments") }
        return try ReplayCard(info: info, count: count, durationMs: duration, entriesHash: Array(hash), signature: Array(signature))
    }
}
