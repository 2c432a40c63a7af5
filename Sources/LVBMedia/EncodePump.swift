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
        /// Pictures mixed with guests (link-mic) and the time the mixing took, encodes of returns included.
        public var mixedFrames = 0
        public var mixNanos: UInt64 = 0
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
    func addMix(nanos: UInt64) {
        box.withLock {
            $0.mixedFrames += 1
            $0.mixNanos += nanos
        }
    }
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
    /// Host with co-hosts on stage: mixes each picture and block before it is
    /// encoded; set before `start`. With nobody on stage it costs one lock.
    public var mixer: StageMixer?
    /// A picture or packet of the stream returned to the guest keyed by its
    /// video SSRC (the mix without that guest), on the encoder's thread.
    public var onReturnVideo: ((UInt32, EncodedMediaFrame) -> Void)?
    public var onReturnAudio: ((UInt32, RTPPacket) -> Void)?
    /// A JPEG thumbnail of the picture just encoded as a keyframe (the mixed
    /// one while guests are on stage), at most once per `thumbnailInterval`,
    /// on the encoder's thread (a room list shows it); set before `start`.
    public var onThumbnail: (([UInt8]) -> Void)?
    public var thumbnailInterval: Duration = .seconds(10)
    private var lastThumbnail: Instant?

    private let clock: Clock
    private let scheduler: EncodeScheduler
    private let stopped = Atomic(false)
    private var video: (source: VideoSource, encoder: VideoStreamEncoder)?
    private var audio: (source: AudioSource, encoder: AudioStreamEncoder)?
    private let frameInterval: Duration
    private let setup: (fps: Int, gopSeconds: Double, bitrateKbps: Int, maxPacketSize: Int)
    private let random: RandomSource
    /// Return streams' encoders, each touched only on its medium's thread.
    private var returnVideo: [UInt32: VideoStreamEncoder] = [:]
    private var returnAudio: [UInt32: AudioStreamEncoder] = [:]
    private let returnControls = Mutex<[UInt32: EncoderControl]>([:])

    /// Creates the encoders for `setup`'s sources (a codec that cannot be set
    /// up throws here, before anything runs).
    public init(setup: PublisherSetup, videoSSRC: UInt32, audioSSRC: UInt32, maxPacketSize: Int,
                clock: Clock, random: RandomSource, scheduler: EncodeScheduler) throws(MediaError) {
        self.clock = clock
        self.scheduler = scheduler
        control = EncoderControl(kbps: setup.bitrateKbps)
        self.setup = (setup.fps, setup.gopSeconds, setup.bitrateKbps, maxPacketSize)
        self.random = random
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

    /// What the node's loop tells the encoder of the stream returned to a guest.
    public func returnControl(_ guest: UInt32) -> EncoderControl {
        returnControls.withLock { c in
            if let existing = c[guest] { return existing }
            let made = EncoderControl(kbps: Self.returnKbps(setup.bitrateKbps))
            c[guest] = made
            return made
        }
    }

    /// The guest left the stage: its return stream's control goes.
    public func forgetReturn(_ guest: UInt32) { _ = returnControls.withLock { $0.removeValue(forKey: guest) } }

    /// A guest hears and sees the room at a lower rate than the audience (a smaller picture).
    public static func returnKbps(_ kbps: Int) -> Int { max(MixConstants.returnMinKbps, kbps / 2) }

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
        var picture = frame, keyframe = wanted.keyframe
        let mixStart = clock.now()
        if let mix = try mixer?.mixVideo(frame) {
            picture = mix.main
            keyframe = keyframe || mix.keyframe
            try encodeReturns(mix.returns, slot: n, captureTime: ntp)
            counters.addMix(nanos: (clock.now() - mixStart).nanosecondsClamped.magnitude)
        } else if !returnVideo.isEmpty {
            returnVideo.removeAll()
        }
        // RTP time is the picture's slot, so it grows by exactly one frame interval per slot.
        guard let encoded = try encoder.encode(picture, mediaTime: frameInterval * n, captureTime: ntp,
                                               forceKeyframe: keyframe) else { return true }
        counters.addFrame(bytes: encoded.bytes, keyframe: encoded.isKeyframe,
                          nanos: (clock.now() - captured).nanosecondsClamped.magnitude, kbps: encoder.bitrateKbps)
        onVideo?(encoded)
        if encoded.isKeyframe { thumbnail(of: picture, at: captured) }
        return true
    }

    /// A thumbnail of a keyframe's picture when one is due; a picture that
    /// cannot be made small enough is skipped (the next keyframe tries again).
    private func thumbnail(of picture: I420Frame, at now: Instant) {
        guard let onThumbnail, lastThumbnail.map({ now - $0 >= thumbnailInterval }) ?? true else { return }
        lastThumbnail = now
        if let jpeg = try? JPEGThumbnail.make(from: picture) { onThumbnail(jpeg) }
    }

    private func encodeAudio(slot n: Int) throws(MediaError) -> Bool {
        guard let (source, encoder) = audio, let pcm = try source.next() else { return false }
        // The block's first sample was captured 20 ms before it was complete.
        let ntp = NTPTime.from(clock.wallTime()) &- (UInt64(1) << 32) / 50
        let mediaTime = MediaConstants.audioFrameDuration * n
        var block = pcm
        if let mix = mixer?.mixAudio(pcm) {
            block = mix.main
            var kept: [UInt32: AudioStreamEncoder] = [:]
            for (guest, minus) in mix.returns {
                guard let audioSSRC = mixer?.audioSSRC(of: guest) else { continue }
                let returnEncoder: AudioStreamEncoder
                if let existing = returnAudio[guest] { returnEncoder = existing } else {
                    returnEncoder = try AudioStreamEncoder(ssrc: audioSSRC, random: random)
                }
                kept[guest] = returnEncoder
                onReturnAudio?(guest, try returnEncoder.encode(minus, mediaTime: mediaTime, captureTime: ntp))
            }
            returnAudio = kept
        } else if !returnAudio.isEmpty {
            returnAudio.removeAll()
        }
        let packet = try encoder.encode(block, mediaTime: mediaTime, captureTime: ntp)
        counters.addAudio(bytes: packet.payload.count)
        onAudio?(packet)
        return true
    }

    /// Encodes each guest's mix-minus picture into the stream returned to it;
    /// encoders of guests no longer on stage are let go.
    private func encodeReturns(_ pictures: [(guest: UInt32, frame: I420Frame)], slot n: Int, captureTime: UInt64) throws(MediaError) {
        var kept: [UInt32: VideoStreamEncoder] = [:]
        for (guest, picture) in pictures {
            let control = returnControl(guest)
            let wanted = control.take()
            let encoder: VideoStreamEncoder
            if let existing = returnVideo[guest] { encoder = existing } else {
                encoder = try VideoStreamEncoder(width: picture.width, height: picture.height, fps: setup.fps, bitrateKbps: wanted.kbps,
                                                 gopSeconds: setup.gopSeconds, ssrc: guest, maxPacketSize: setup.maxPacketSize, random: random)
            }
            kept[guest] = encoder
            if wanted.kbps != encoder.bitrateKbps { try? encoder.setBitrate(kbps: wanted.kbps) }
            if let encoded = try encoder.encode(picture, mediaTime: frameInterval * n, captureTime: captureTime,
                                                forceKeyframe: wanted.keyframe) {
                onReturnVideo?(guest, encoded)
            }
        }
        returnVideo = kept
    }
}
