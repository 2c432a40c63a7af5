import LVBCore
import LVBCrypto
import LVBGossip

/// A replay's identity: 16 bytes derived from its room, its host and when
/// it started, so nobody can claim another host's replay under its id.
public struct ReplayID: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    public static func derive(room: RoomID, host: NodeID, startedMs: UInt64) -> ReplayID {
        var w = ByteWriter(capacity: 64)
        w.write(bytes: room.bytes)
        w.write(bytes: host.publicKey)
        w.write(startedMs)
        return ReplayID(checked: Blake2b.hash(Array("lvbnode replay id".utf8), w.bytes, length: 16))
    }

    init(checked bytes: [UInt8]) { self.bytes = bytes }

    /// From its text (Base32, 26 characters, as room ids).
    public init(text: String) throws(ReplayError) {
        guard let b = try? Base32.decode(text.lowercased()), b.count == 16 else {
            throw .badID(text)
        }
        bytes = b
    }

    public var text: String { Base32.encode(bytes) }
    public var description: String { text }
}

/// What the host signs about a replay: the room, the host, when it started,
/// how long it is, and each segment's time range, length and hash. Anyone
/// holding it can check every segment, whoever served it.
///
///     manifest = "LVBRMAN" 0x01 || replay id (16) || room id (16) ||
///                host (32) || started (8: Unix ms) || title length (1) ||
///                title || width (2) || height (2) || audio channels (1) ||
///                flags (1: bit 0 ended) || count (4) || segment ... ||
///                signature (64: Ed25519 by host over "lvbnode replay
///                manifest v1" || 0x00 || all before it)
///     segment  = start (4: ms) || duration (4: ms) || length (4) ||
///                flags (1: bit 0 starts with a keyframe) || hash (32:
///                BLAKE2b-256 of the segment file)
///
/// The id must be `ReplayID.derive(room, host, started)`. Width and height
/// 0: no video; channels 0: no audio. Segments follow each other in time.
public struct ReplayManifest: Equatable, Sendable {
    public struct Segment: Equatable, Sendable {
        public var startMs: UInt32
        public var durationMs: UInt32
        public var length: UInt32
        public var startsWithKeyframe: Bool
        public var hash: [UInt8]

        public init(startMs: UInt32, durationMs: UInt32, length: UInt32, startsWithKeyframe: Bool, hash: [UInt8]) {
            self.startMs = startMs
            self.durationMs = durationMs
            self.length = length
            self.startsWithKeyframe = startsWithKeyframe
            self.hash = hash
        }

        public var endMs: UInt32 { startMs + durationMs }
    }

    public var id: ReplayID { ReplayID.derive(room: room, host: host, startedMs: startedMs) }
    public var room: RoomID
    public var host: NodeID
    public var startedMs: UInt64
    public var title: String
    public var width: UInt16, height: UInt16
    public var audioChannels: UInt8
    public var ended: Bool
    public var segments: [Segment]

    public init(room: RoomID, host: NodeID, startedMs: UInt64, title: String, width: UInt16, height: UInt16,
                audioChannels: UInt8, ended: Bool = false, segments: [Segment] = []) {
        self.room = room
        self.host = host
        self.startedMs = startedMs
        self.title = title
        self.width = width
        self.height = height
        self.audioChannels = audioChannels
        self.ended = ended
        self.segments = segments
    }

    public var durationMs: UInt32 { segments.last?.endMs ?? 0 }
    public var totalBytes: Int64 { segments.reduce(0) { $0 + Int64($1.length) } }

    static let magic: [UInt8] = Array("LVBRMAN".utf8) + [1]
    static let segmentSize = 45
    public static let maxTitleBytes = 100

    /// The segment that holds `ms` (the last one for a time past the end).
    public func segment(at ms: UInt32) -> Int? {
        guard !segments.isEmpty else { return nil }
        var lo = 0, hi = segments.count - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if segments[mid].startMs <= ms { lo = mid } else { hi = mid - 1 }
        }
        return lo
    }

    /// The manifest's bytes, signed by `identity` (the host's).
    public func signed(by identity: Identity) -> [UInt8] {
        let body = unsignedBytes()
        return body + identity.sign(Self.signingContext + body)
    }

    /// What the signature covers comes after this, so no other signed thing of ours reads as a manifest.
    static let signingContext: [UInt8] = Array("lvbnode replay manifest v1".utf8) + [0]

    func unsignedBytes() -> [UInt8] {
        let titleBytes = Array(title.utf8.prefix(Self.maxTitleBytes))
        var w = ByteWriter(capacity: 128 + segments.count * Self.segmentSize)
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
        w.write(UInt8(ended ? 1 : 0))
        w.write(UInt32(segments.count))
        for s in segments {
            w.write(s.startMs)
            w.write(s.durationMs)
            w.write(s.length)
            w.write(UInt8(s.startsWithKeyframe ? 1 : 0))
            w.write(bytes: s.hash)
        }
        return w.bytes
    }

    /// Parses and verifies a manifest: every field, the id, the order of the
    /// segments and the host's signature.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws(ReplayError) -> ReplayManifest {
        guard bytes.count > 64 else { throw .truncated("replay manifest") }
        let body = bytes.dropLast(64), signature = Array(bytes.suffix(64))
        var r = ByteReader(body)
        guard let head = try? r.readBytes(magic.count), Array(head) == magic else { throw .malformed("not a replay manifest (bad magic)") }
        guard let idBytes = try? r.readBytes(16), let roomBytes = try? r.readBytes(16), let hostBytes = try? r.readBytes(32),
              let started = try? r.readUInt64(), let titleLength = try? r.readUInt8(),
              let titleBytes = try? r.readBytes(Int(titleLength)), let width = try? r.readUInt16(), let height = try? r.readUInt16(),
              let channels = try? r.readUInt8(), let flags = try? r.readUInt8(), let count = try? r.readUInt32()
        else { throw .truncated("replay manifest header") }
        guard titleLength <= maxTitleBytes, let title = String(validating: titleBytes, as: UTF8.self) else {
            throw .malformed("replay title is not UTF-8 of at most \(maxTitleBytes) bytes")
        }
        guard (width == 0) == (height == 0), channels <= 2, flags & ~1 == 0 else {
            throw .malformed("replay tracks \(width)x\(height), \(channels) channels, flags \(flags)")
        }
        guard count <= ReplayConstants.maxSegments, r.remaining == Int(count) * segmentSize else {
            throw .malformed("replay manifest of \(count) segments has \(r.remaining) bytes for them")
        }
        guard let room = try? RoomID(bytes: Array(roomBytes)), let host = try? NodeID(publicKey: Array(hostBytes)) else {
            throw .malformed("replay manifest room or host")
        }
        var segments: [Segment] = []
        segments.reserveCapacity(Int(count))
        for _ in 0..<count {
            guard let start = try? r.readUInt32(), let duration = try? r.readUInt32(), let length = try? r.readUInt32(),
                  let f = try? r.readUInt8(), let hash = try? r.readBytes(32) else { throw .truncated("replay manifest segment") }
            guard f & ~1 == 0, length > ReplaySegment.headerSize, length <= ReplayConstants.segmentMaxBytes,
                  start >= (segments.last?.endMs ?? 0), UInt64(start) + UInt64(duration) <= UInt64(UInt32.max) else {
                throw .malformed("replay manifest segment \(segments.count) (\(start) ms, \(duration) ms, \(length) bytes)")
            }
            segments.append(Segment(startMs: start, durationMs: duration, length: length, startsWithKeyframe: f == 1, hash: Array(hash)))
        }
        let m = ReplayManifest(room: room, host: host, startedMs: started, title: title, width: width, height: height,
                               audioChannels: channels, ended: flags == 1, segments: segments)
        guard Array(idBytes) == m.id.bytes else { throw .forged("replay manifest id does not match its room, host and start") }
        guard Identity.verify(signature: signature, message: signingContext + body, by: host) else {
            throw .forged("replay manifest not signed by its host \(host.short)")
        }
        return m
    }

    /// Checks a segment's bytes against the hash this manifest signed.
    public func check(segment index: Int, _ bytes: [UInt8]) throws(ReplayError) {
        guard segments.indices.contains(index) else { throw .malformed("segment \(index) of \(segments.count)") }
        guard bytes.count == Int(segments[index].length), Blake2b.hash(bytes, length: 32) == segments[index].hash else {
            throw .forged("segment \(index) of replay \(id.text) does not match its manifest's hash")
        }
    }
}
