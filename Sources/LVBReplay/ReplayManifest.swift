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
///     manifest  = header || count (4) || duration (4) || entry ... || signature (64)
///     header    = "LVBRMAN" 0x02 || replay id (16) || room id (16) || host (32)
///                 || started (8: Unix ms) || title length (1) || title
///                 || width (2) || height (2) || audio channels (1)
///                 || flags (1: bit 0 ended, bit 1 private: never served nor listed)
///     entry     = start (4: ms) || duration (4: ms) || length (4)
///                 || flags (1: bit 0 starts with a keyframe) || hash (32: BLAKE2b-256 of the segment file)
///     signature = SIGN(host, "lvbnode replay manifest v2" || 0x00 || header
///                 || count || duration || BLAKE2b-256(entry ...))
///
/// So the signature also covers the replay's card (`ReplayCard`: the header,
/// count, duration and the entries' hash), which a room list carries without
/// the entries. The id must be `ReplayID.derive(room, host, started)`; width
/// and height 0: no video; channels 0: no audio. Segments follow each other
/// in time and the duration is where the last one ends.
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

    public var info: ReplayInfo
    public var segments: [Segment]

    public init(room: RoomID, host: NodeID, startedMs: UInt64, title: String, width: UInt16, height: UInt16,
                audioChannels: UInt8, ended: Bool = false, isPrivate: Bool = false, segments: [Segment] = []) {
        info = ReplayInfo(room: room, host: host, startedMs: startedMs, title: title, width: width, height: height,
                          audioChannels: audioChannels, ended: ended, isPrivate: isPrivate)
        self.segments = segments
    }

    public var id: ReplayID { info.id }
    public var room: RoomID { info.room }
    public var host: NodeID { info.host }
    public var startedMs: UInt64 { info.startedMs }
    public var title: String { info.title }
    public var width: UInt16 { info.width }
    public var height: UInt16 { info.height }
    public var audioChannels: UInt8 { info.audioChannels }
    public var ended: Bool {
        get { info.ended }
        set { info.ended = newValue }
    }

    public var durationMs: UInt32 { segments.last?.endMs ?? 0 }
    public var totalBytes: Int64 { segments.reduce(0) { $0 + Int64($1.length) } }

    static let segmentSize = 45

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
        let entries = entryBytes()
        let summary = ReplayCard.summary(info, count: UInt32(segments.count), durationMs: durationMs)
        return summary + entries + identity.sign(ReplayCard.signingContext + summary + Blake2b.hash(entries, length: 32))
    }

    private func entryBytes() -> [UInt8] {
        var w = ByteWriter(capacity: segments.count * Self.segmentSize)
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
    /// segments, the duration and the host's signature; and its card.
    public static func parseWithCard(_ bytes: ArraySlice<UInt8>) throws(ReplayError) -> (ReplayManifest, ReplayCard) {
        guard bytes.count > 64 else { throw .truncated("replay manifest") }
        var r = ByteReader(bytes.dropLast(64))
        let info = try ReplayInfo.read(&r)
        guard let count = try? r.readUInt32(), let duration = try? r.readUInt32() else { throw .truncated("replay manifest header") }
        let entriesStart = r.offset
        guard count <= ReplayConstants.maxSegments, r.remaining == Int(count) * segmentSize else {
            throw .malformed("replay manifest of \(count) segments has \(r.remaining) bytes for them")
        }
        var segments: [Segment] = []
        segments.reserveCapacity(Int(count))
        for _ in 0..<count {
            guard let start = try? r.readUInt32(), let length = try? r.readUInt32(), let size = try? r.readUInt32(),
                  let f = try? r.readUInt8(), let hash = try? r.readBytes(32) else { throw .truncated("replay manifest segment") }
            guard f & ~1 == 0, size > ReplaySegment.headerSize, size <= ReplayConstants.segmentMaxBytes,
                  start >= (segments.last?.endMs ?? 0), UInt64(start) + UInt64(length) <= UInt64(UInt32.max) else {
                throw .malformed("replay manifest segment \(segments.count) (\(start) ms, \(length) ms, \(size) bytes)")
            }
            segments.append(Segment(startMs: start, durationMs: length, length: size, startsWithKeyframe: f == 1, hash: Array(hash)))
        }
        let m = ReplayManifest(info: info, segments: segments)
        guard m.durationMs == duration else { throw .malformed("replay manifest says \(duration) ms, its segments \(m.durationMs) ms") }
        let entriesHash = Blake2b.hash(Array(bytes[(bytes.startIndex + entriesStart)..<(bytes.endIndex - 64)]), length: 32)
        let card = try ReplayCard(info: info, count: count, durationMs: duration, entriesHash: entriesHash, signature: Array(bytes.suffix(64)))
        return (m, card)
    }

    public static func parse(_ bytes: ArraySlice<UInt8>) throws(ReplayError) -> ReplayManifest { try parseWithCard(bytes).0 }

    init(info: ReplayInfo, segments: [Segment]) {
        self.info = info
        self.segments = segments
    }

    /// Checks a segment's bytes against the hash this manifest signed.
    public func check(segment index: Int, _ bytes: [UInt8]) throws(ReplayError) {
        guard segments.indices.contains(index) else { throw .malformed("segment \(index) of \(segments.count)") }
        guard bytes.count == Int(segments[index].length), Blake2b.hash(bytes, length: 32) == segments[index].hash else {
            throw .forged("segment \(index) of replay \(id.text) does not match its manifest's hash")
        }
    }
}
