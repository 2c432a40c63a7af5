import LVBCore
import Synchronization

/// Where encode steps run: threads in the binary (`ThreadEncodeScheduler` in
/// LVBRoom), the virtual clock in tests — the pump itself never sleeps.
public protocol EncodeScheduler: AnyObject {
    /// Calls `step(n)` for slot n at `start + n × interval` (n = 0, 1, …) until
    /// it returns false. A late step runs at once; slots already missed are
    /// skipped, never burst to catch up. Each repetition runs on one thread.
    func repeating(from start: Instant, every interval: Duration, _ step: @escaping (Int) -> Bool)
}

/// What the node's loop tells an encoder: a keyframe is wanted (PLI, a
/// subscriber with nothing to start from) and the rate control's target.
public final class EncoderControl: Sendable {
    private let state: Mutex<(keyframe: Bool, kbps: Int)>
    public init(kbps: Int) { state = Mutex((false, kbps)) }
    public func update(keyframe: Bool, kbps: Int) { state.withLock { $0 = ($0.keyframe || keyframe, kbps) } }
    public func take() -> (keyframe: Bool, kbps: Int) {
        state.withLock { s in
            defer { s.keyframe = false }
            return s
        }
    }
}

/// The encoders' counters for `stats` lines (read from any thread).
public final class PumpCounters: Sendable {
    public struct Snapshot: Sendable {
        public var frames = 0, keyframes = 0, videoBytes = 0, audioBytes = 0
        public var encodeNanos: UInt64 = 0
        public var targetKbps = 0
        public init() {}
    }
    private let box = Mutex(Snapshot())
    public init() {}
    func addFrame(bytes: Int, keyframe: Bool, nanos: UInt64, kbps: Int) {
        box.withLock {
            $0.frames += 1
            $0.videoBytes += bytes
            $0.encodeNanos += nanos
            $0.targetKbps = kbps
            if keyframe { $0.keyframes += 1 }
        }
    }
    func addAudio(bytes: Int) { box.withLock { $0.audioBytes += bytes } }
    public var snapshot: Snapshot { box.withLock { $0 } }
}

/// Runs a publisher's sources through its encoders on a fixed slot schedule
/// (picture n is due at start + n / fps, sound every 20 ms), one repetition
/// per medium on the scheduler. Capture time is taken when a picture or 20 ms
/// block is ready, before encoding, so glass-to-glass figures include the
/// encoder. Encoded output goes to `onVideo`/`onAudio` on the encoder's thread;
/// the owner hops it to the node's loop.
public final class EncodePump: @unchecked Sendable {
    public let counters = PumpCounters()
    public let control: EncoderControl
    /// An encoded picture (on the encoder's thread).
    public var onVideo: ((EncodedMediaFrame) -> Void)?
    /// An encoded 20 ms audio packet (on the encoder's thread).
    public var onAudio: ((RTPPacket) -> Void)?
    /// A source ended or failed: the reason (on the encoder's thread).
    public var onEnded: ((String) -> Void)?

    private let clock: Clock
    private let scheduler: EncodeScheduler
    private let stopped = Atomic(false)
    private var video: (source: VideoSource, encoder: VideoStreamEncoder)?
    private var audio: (source: AudioSource, encoder: AudioStreamEncoder)?
    private let frameInterval: Duration

    /// Creates the encoders for `setup`'s sources (a codec that cannot be set
    /// up throws here, before anything runs).
    public init(setup: PublisherSetup, videoSSRC: UInt32, audioSSRC: UInt32, maxPacketSize: Int,
                clock: Clock, random: RandomSource, scheduler: EncodeScheduler) throws(MediaError) {
        self.clock = clock
        self.scheduler = scheduler
        control = EncoderControl(kbps: setup.bitrateKbps)
        frameInterval = .nanoseconds(1_000_000_000 / Int64(max(1, setup.fps)))
        if let source = setup.video {
            let encoder = try VideoStreamEncoder(width: setup.width, height: setup.height, fps: setup.fps,
                                                 bitrateKbps: setup.bitrateKbps, gopSeconds: setup.gopSeconds,
                                                 ssrc: videoSSRC, maxPacketSize: maxPacketSize, random: random)
            video = (source, encoder)
        }
        if let source = setup.audio {
            audio = (source, try AudioStreamEncoder(ssrc: audioSSRC, random: random))
        }
    }

    /// Starts both media on the scheduler.
    public func start() {
        let start = clock.now()
        if video != nil {
            scheduler.repeating(from: start, every: frameInterval) { [self] n in run { () throws(MediaError) in try encodeVideo(slot: n) } }
        }
        if audio != nil {
            scheduler.repeating(from: start, every: MediaConstants.audioFrameDuration) { [self] n in run { () throws(MediaError) in try encodeAudio(slot: n) } }
        }
    }

    /// Stops at the next step; nothing is encoded after it returns.
    public func stop() { stopped.store(true, ordering: .relaxed) }

    private func run(_ step: () throws(MediaError) -> Bool) -> Bool {
        guard !stopped.load(ordering: .relaxed) else { return false }
        do {
            guard try step() else {
                onEnded?("input ended")
                return false
            }
            return true
        } catch {
            onEnded?("\(error)")
            return false
        }
    }

    private func encodeVideo(slot n: Int) throws(MediaError) -> Bool {
        guard let (source, encoder) = video, let frame = try source.next() else { return false }
        let captured = clock.now()
        let ntp = NTPTime.from(clock.wallTime())
        let wanted = control.take()
        if wanted.kbps != encoder.bitrateKbps { try? encoder.setBitrate(kbps: wanted.kbps) }
        // RTP time is the picture's slot, so it grows by exactly one frame interval per slot.
        guard let encoded = try encoder.encode(frame, mediaTime: frameInterval * n, captureTime: ntp,
                                               forceKeyframe: wanted.keyframe) else { return true }
        counters.addFrame(bytes: encoded.bytes, keyframe: encoded.isKeyframe,
                          nanos: (clock.now() - captured).nanosecondsClamped.magnitude, kbps: encoder.bitrateKbps)
        onVideo?(encoded)
        return true
    }

    private func encodeAudio(slot n: Int) throws(MediaError) -> Bool {
        guard let (source, encoder) = audio, let pcm = try source.next() else { return false }
        // The block's first sample was captured 20 ms before it was complete.
        let ntp = NTPTime.from(clock.wallTime()) &- (UInt64(1) << 32) / 50
        let packet = try encoder.encode(pcm, mediaTime: MediaConstants.audioFrameDuration * n, captureTime: ntp)
        counters.addAudio(bytes: packet.payload.count)
        onAudio?(packet)
        return true
    }
}
