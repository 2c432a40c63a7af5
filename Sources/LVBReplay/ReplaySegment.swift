import LVBCore

/// One frame of a replay as the host sent it: a VP8 frame or an Opus
/// packet, untouched, at its time from the replay's start.
public struct ReplayFrame: Equatable, Sendable {
    public enum Kind: UInt8, Sendable { case video = 1, audio = 2 }
    public var kind: Kind
    public var isKeyframe: Bool
    /// Milliseconds from the replay's start (its first frame's capture time).
    public var ms: UInt32
    public var payload: [UInt8]

    public init(kind: Kind, isKeyframe: Bool = false, ms: UInt32, payload: [UInt8]) {
        self.kind = kind
        self.isKeyframe = isKeyframe && kind == .video
        self.ms = ms
        self.payload = payload
    }
}

/// A segment file: a run of frames, the first picture a keyframe (unless
/// the host sent none for `ReplayConstants.segmentMaxMs`), so playback can
/// start at any segment.
///
///     segment = "LVBRSEG" 0x01 || index (4) || record ...
///     record  = kind (1: 1 video, 2 audio) || flags (1: bit 0 keyframe,
///               video only) || ms (4) || length (4) || payload
///
/// Big-endian. Each track's times never go back; a video payload is at most
/// 256 KiB, an Opus packet at most 1275 bytes; a segment at most
/// `ReplayConstants.segmentMaxBytes`. Its manifest signs its hash.
public enum ReplaySegment {
    static let magic: [UInt8] = Array("LVBRSEG".utf8) + [1]
    static let headerSize = 12
    static let recordHeaderSize = 10
    public static let maxVideoPayload = 256 * 1024
    public static let maxAudioPayload = 1275

    public static func encode(index: UInt32, _ frames: [ReplayFrame]) -> [UInt8] {
        var w = ByteWriter(capacity: headerSize + frames.reduce(0) { $0 + recordHeaderSize + $1.payload.count })
        w.write(bytes: magic)
        w.write(index)
        for f in frames {
            w.write(f.kind.rawValue)
            w.write(UInt8(f.isKeyframe ? 1 : 0))
            w.write(f.ms)
            w.write(UInt32(f.payload.count))
            w.write(bytes: f.payload)
        }
        return w.bytes
    }

    /// The frames of segment `index`; every length and time is checked.
    public static func parse(_ bytes: ArraySlice<UInt8>, index: UInt32) throws(ReplayError) -> [ReplayFrame] {
        guard bytes.count <= ReplayConstants.segmentMaxBytes else { throw .malformed("segment of \(bytes.count) bytes is over the limit") }
        var r = ByteReader(bytes)
        guard let head = try? r.readBytes(magic.count), let number = try? r.readUInt32() else { throw .truncated("segment header") }
        guard Array(head) == magic else { throw .malformed("not a replay segment (bad magic)") }
        guard number == index else { throw .malformed("segment \(number) where \(index) was asked for") }
        var frames: [ReplayFrame] = []
        var last: [ReplayFrame.Kind: UInt32] = [:]
        while !r.isAtEnd {
            guard let k = try? r.readUInt8(), let flags = try? r.readUInt8(), let ms = try? r.readUInt32(),
                  let length = try? r.readUInt32() else { throw .truncated("segment record header") }
            guard let kind = ReplayFrame.Kind(rawValue: k) else { throw .malformed("segment record of unknown kind \(k)") }
            guard flags & ~1 == 0, kind == .video || flags == 0 else { throw .malformed("segment record flags \(flags)") }
            let max = kind == .video ? maxVideoPayload : maxAudioPayload
            guard length > 0, length <= max else { throw .malformed("segment record of \(length) bytes (1 to \(max))") }
            guard let payload = try? r.readBytes(Int(length)) else { throw .truncated("segment record of \(length) bytes") }
            if let before = last[kind], ms < before { throw .malformed("segment record at \(ms) ms after one at \(before) ms") }
            last[kind] = ms
            frames.append(ReplayFrame(kind: kind, isKeyframe: flags == 1, ms: ms, payload: Array(payload)))
        }
        return frames
    }
}

public enum ReplayConstants {
    /// A segment is cut at the first keyframe once it spans this long (with
    /// the host's default 2 s GOP, at every keyframe, whose times wander).
    public static let segmentTargetMs: UInt32 = 1800
    /// ... and at this long, or this many bytes, keyframe or not.
    public static let segmentMaxMs: UInt32 = 10_000
    public static let segmentMaxBytes = 8 << 20
    /// The most segments a manifest lists (20 hours of 2-second segments).
    public static let maxSegments = 36_000
    /// The default disk budget for everything a node holds (`--replay-budget`).
    public static let defaultBudget: Int64 = 2 << 30
    /// Recording does not start with less free space than this on the disk.
    public static let minimumFreeSpace: Int64 = 64 << 20
}
