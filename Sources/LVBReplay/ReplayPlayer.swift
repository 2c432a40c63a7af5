import LVBCore
import LVBMedia

/// Plays a replay from the segments it is given, on an injected clock: each
/// frame at its time (scaled by the speed), decoded (VP8, Opus) and handed
/// to the outputs the way a live stream's are (`ReceivedVideoFrame`,
/// `ReceivedAudioFrame`: the sinks record, write Y4M/WAV and serve a page
/// alike). A seek starts at the segment holding the time (or the keyframe
/// segment before it), decodes the pictures before the time without showing
/// them, and shows the first at or after it at once. Waiting for a segment
/// holds the play position (a stall, reported), never skips. Sound plays at
/// speed 1 only. Lives on the node's loop; call `tick` every few ms.
public final class ReplayPlayer {
    public enum Event: Equatable, Sendable {
        /// The first picture after play or a seek: how long it took, and its time in the replay.
        case firstFrame(afterMs: Double, atMs: UInt32)
        /// Waiting for segment `index` (the play position holds).
        case waiting(Int)
        /// Playing again after waiting this long for a segment.
        case resumed(afterMs: Double)
        /// The end of a replay whose live ended.
        case ended
    }

    public var onEvent: ((Event) -> Void)?
    public var onVideo: ((ReceivedVideoFrame, _ ms: UInt32) -> Void)?
    public var onAudio: ((ReceivedAudioFrame, _ ms: UInt32) -> Void)?
    /// A video frame decoded on the way from a keyframe to a seek's target,
    /// not shown (a page's decoder needs it too): its bytes, whether it is
    /// a keyframe, its time.
    public var onCatchUp: ((_ payload: [UInt8], _ isKeyframe: Bool, _ ms: UInt32) -> Void)?
    public private(set) var manifest: ReplayManifest
    public private(set) var isPlaying = false
    public private(set) var speed = 1.0
    /// Segments fetched ahead of the play position.
    public var ahead = 4

    private let clock: Clock
    private var loaded: [Int: [ReplayFrame]] = [:]
    /// The next frame to play: segment and index in it.
    private var cursor = (segment: 0, frame: 0)
    /// Where the play position was at `anchor.at`.
    private var anchor: (ms: UInt32, at: Instant)
    /// Frames before this time are decoded, not shown (after a seek).
    private var showFrom: UInt32 = 0
    /// When play or the last seek was asked for, until its first picture.
    private var askedAt: Instant?
    private var stalledOn: Int?
    private var stalledAt: Instant?
    private var finished = false
    private var video: VP8Decoder?
    private var audio: OpusDecoder?
    private let startNTP: UInt64

    public init(manifest: ReplayManifest, clock: Clock) {
        self.manifest = manifest
        self.clock = clock
        anchor = (0, clock.now())
        let start = WallTime(seconds: manifest.startedMs / 1000, nanoseconds: UInt32(manifest.startedMs % 1000) * 1_000_000)
        startNTP = NTPTime.from(start)
        video = try? VP8Decoder()
        audio = try? OpusDecoder(channels: max(1, Int(manifest.audioChannels)))
    }

    /// A newer manifest of the same replay (one still growing).
    public func update(_ newer: ReplayManifest) {
        guard newer.id == manifest.id, newer.segments.count >= manifest.segments.count else { return }
        manifest = newer
    }

    /// Segment `index`'s bytes, already checked against the manifest.
    public func add(_ index: Int, _ bytes: [UInt8]) {
        guard let frames = try? ReplaySegment.parse(bytes[...], index: UInt32(index)) else { return }
        loaded[index] = frames
        // Only the segments around the play position are kept.
        for key in loaded.keys where key < cursor.segment - 1 || key > cursor.segment + ahead + 1 { loaded[key] = nil }
    }

    /// The play position, in ms from the replay's start.
    public var positionMs: UInt32 {
        guard isPlaying, stalledOn == nil else { return anchor.ms }
        let elapsed = (clock.now() - anchor.at).seconds * speed * 1000
        return UInt32(clamping: Int64(Double(anchor.ms) + elapsed))
    }

    /// The segments to fetch, most urgent first.
    public var wanted: [Int] {
        let last = manifest.segments.count - 1
        guard last >= 0 else { return [] }
        return Array(cursor.segment...min(last, cursor.segment + ahead)).filter { loaded[$0] == nil }
    }

    public func play() {
        guard !isPlaying else { return }
        anchor = (positionMs, clock.now())
        isPlaying = true
        if askedAt == nil { askedAt = clock.now() }
    }

    public func pause() {
        guard isPlaying else { return }
        anchor = (positionMs, clock.now())
        isPlaying = false
    }

    /// 0.25 to 4.
    public func setSpeed(_ value: Double) {
        anchor = (positionMs, clock.now())
        speed = min(4, max(0.25, value))
    }

    /// Moves the play position to `ms` (clamped to the replay).
    public func seek(to ms: UInt32) {
        let target = min(ms, manifest.durationMs)
        guard var s = manifest.segment(at: target) else { return }
        while s > 0, !manifest.segments[s].startsWithKeyframe { s -= 1 }
        cursor = (s, 0)
        showFrom = target
        anchor = (target, clock.now())
        askedAt = clock.now()
        finished = false
        stalledOn = nil
        stalledAt = nil
        // The decoder starts afresh at the keyframe.
        video = try? VP8Decoder()
    }

    /// Plays what is due.
    public func tick() {
        guard isPlaying, !finished else { return }
        var due = positionMs
        while true {
            guard manifest.segments.indices.contains(cursor.segment) else {
                if manifest.ended, !finished { finished = true; isPlaying = false; onEvent?(.ended) }
                return
            }
            guard let frames = loaded[cursor.segment] else {
                if stalledOn != cursor.segment {
                    anchor = (due, clock.now())
                    stalledOn = cursor.segment
                    stalledAt = stalledAt ?? clock.now()
                    onEvent?(.waiting(cursor.segment))
                }
                return
            }
            if stalledOn != nil {
                stalledOn = nil
                anchor = (anchor.ms, clock.now())
                due = positionMs
                if let since = stalledAt { onEvent?(.resumed(afterMs: (clock.now() - since).seconds * 1000)) }
                stalledAt = nil
            }
            guard cursor.frame < frames.count else {
                cursor = (cursor.segment + 1, 0)
                continue
            }
            let f = frames[cursor.frame]
            // Frames before the seek's target are due at once; the rest at their time.
            guard f.ms < showFrom || f.ms <= due else { return }
            cursor.frame += 1
            deliver(f)
        }
    }

    private func deliver(_ f: ReplayFrame) {
        let now = clock.now()
        let capture = startNTP &+ (UInt64(f.ms) << 32) / 1000
        switch f.kind {
        case .video:
            guard let image = (try? video?.decode(f.payload)) ?? nil else { return }
            guard f.ms >= showFrom else {
                onCatchUp?(f.payload, f.isKeyframe, f.ms)
                return
            }
            onVideo?(ReceivedVideoFrame(image: image, encoded: f.payload, isKeyframe: f.isKeyframe, rtpTimestamp: f.ms &* 90,
                                        captureTime: capture, arrival: now), f.ms)
            if let asked = askedAt {
                askedAt = nil
                onEvent?(.firstFrame(afterMs: (now - asked).seconds * 1000, atMs: f.ms))
            }
        case .audio:
            guard f.ms >= showFrom, speed == 1, let pcm = try? audio?.decode(f.payload) else { return }
            onAudio?(ReceivedAudioFrame(pcm: pcm, encoded: f.payload, rtpTimestamp: f.ms &* 48, captureTime: capture,
                                        concealed: false, arrival: now), f.ms)
        }
    }
}
