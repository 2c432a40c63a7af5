import LVBCore
import LVBMedia
import LVBRoom
import LVBTransport
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// What the node's loop tells the encoder thread: a keyframe is wanted
/// (PLI, a joiner without a GOP) and the rate control's target.
final class EncoderControl: @unchecked Sendable {
    private let state: NIOLockedValueBox<(keyframe: Bool, kbps: Int)>
    init(kbps: Int) { state = NIOLockedValueBox((false, kbps)) }
    func update(keyframe: Bool, kbps: Int) { state.withLockedValue { $0 = ($0.keyframe || keyframe, kbps) } }
    func take() -> (keyframe: Bool, kbps: Int) {
        state.withLockedValue { s in defer { s.keyframe = false }; return s }
    }
}

/// Counters the pumps keep for `stats` lines (read on any thread).
final class PumpCounters: @unchecked Sendable {
    private let box = NIOLockedValueBox((frames: 0, keyframes: 0, videoBytes: 0, audioBytes: 0, encodeNanos: UInt64(0), targetKbps: 0))
    func addFrame(bytes: Int, keyframe: Bool, nanos: UInt64, kbps: Int) {
        box.withLockedValue { $0.frames += 1; $0.videoBytes += bytes; $0.encodeNanos += nanos; $0.targetKbps = kbps; if keyframe { $0.keyframes += 1 } }
    }
    func addAudio(bytes: Int) { box.withLockedValue { $0.audioBytes += bytes } }
    var snapshot: (frames: Int, keyframes: Int, videoBytes: Int, audioBytes: Int, encodeNanos: UInt64, targetKbps: Int) { box.withLockedValue { $0 } }
}

/// Runs the host's sources and encoders on their own threads, one per
/// medium, on a fixed schedule (frame n is due at start + n / fps), and hands
/// each encoded frame to the node's loop for fan-out. Capture time is taken
/// when a picture or 20 ms block is ready, before encoding, so glass-to-glass
/// figures include the encoder.
final class MediaPump: @unchecked Sendable {
    let counters = PumpCounters()
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
    private let stopped = NIOLockedValueBox(false)
    private let log = Log.logger("media")
    private let onEnded: @Sendable (String) -> Void

    init(onEnded: @escaping @Sendable (String) -> Void) { self.onEnded = onEnded }

    func start(setup: HostMediaSetup, node: UDPNode, media: HostMedia, random: RandomSource) throws(MediaError) {
        let clock = SystemClock.shared
        let start = clock.now()
        let maxPacket = MessageSize.maxTransportPlaintext - 1
        var loops = group.makeIterator()
        if let source = setup.video, let videoLoop = loops.next() {
            let encoder = try VideoStreamEncoder(width: setup.width, height: setup.height, fps: setup.fps, bitrateKbps: setup.bitrate,
                                                 gopSeconds: setup.gop, ssrc: media.broadcaster.videoSSRC,
                                                 maxPacketSize: maxPacket, random: random)
            let control = EncoderControl(kbps: setup.bitrate)
            let interval = Duration.nanoseconds(1_000_000_000 / Int64(setup.fps))
            let body = UnsafeTransfer((source, encoder))
            schedule(on: videoLoop, start: start, interval: interval, index: 0) { [counters] (index: Int) throws(MediaError) -> Bool in
                let (source, encoder) = body.value
                guard let frame = try source.next() else { return false }
                let captured = clock.now()
                let ntp = NTPTime.from(clock.wallTime())
                let wanted = control.take()
                if wanted.kbps != encoder.bitrateKbps { try? encoder.setBitrate(kbps: wanted.kbps) }
                // RTP time is the frame's slot (start + n / fps), so it
                // grows by exactly one frame interval per slot.
                guard let encoded = try encoder.encode(frame, mediaTime: interval * index, captureTime: ntp,
                                                       forceKeyframe: wanted.keyframe) else { return true }
                counters.addFrame(bytes: encoded.bytes, keyframe: encoded.isKeyframe,
                                  nanos: (clock.now() - captured).nanosecondsClamped.magnitude, kbps: encoder.bitrateKbps)
                let transfer = UnsafeTransfer(encoded)
                node.execute { _ in
                    media.broadcaster.publishVideo(transfer.value)
                    control.update(keyframe: media.broadcaster.takeKeyframeRequest(), kbps: media.broadcaster.targetVideoKbps)
                }
                return true
            }
        }
        if let source = setup.audio, let audioLoop = loops.next() {
            let encoder = try AudioStreamEncoder(ssrc: media.broadcaster.audioSSRC, random: random)
            let body = UnsafeTransfer((source, encoder))
            schedule(on: audioLoop, start: start, interval: .milliseconds(20), index: 0) { [counters] (index: Int) throws(MediaError) -> Bool in
                let (source, encoder) = body.value
                guard let pcm = try source.next() else { return false }
                // The block's first sample was captured 20 ms before it was complete.
                let wall = clock.wallTime()
                let ntp = NTPTime.from(wall) &- (UInt64(1) << 32) / 50
                let packet = try encoder.encode(pcm, mediaTime: .milliseconds(20 * Int64(index)), captureTime: ntp)
                counters.addAudio(bytes: packet.payload.count)
                let transfer = UnsafeTransfer(packet)
                node.execute { _ in media.broadcaster.publishAudio(transfer.value) }
                return true
            }
        }
    }

    /// Runs `step(n)` at start + n × interval until it returns false, throws,
    /// or the pump stops. A late step runs at once; steps never pile up.
    private func schedule(on loop: EventLoop, start: Instant, interval: Duration, index: Int,
                          step: @escaping (Int) throws(MediaError) -> Bool) {
        let due = start + interval * index
        let now = SystemClock.shared.now()
        let delay = TimeAmount.nanoseconds(due > now ? Int64(due.nanoseconds - now.nanoseconds) : 0)
        loop.scheduleTask(in: delay) { [self] in
            guard !stopped.withLockedValue({ $0 }) else { return }
            do {
                guard try step(index) else {
                    onEnded("input ended")
                    return
                }
            } catch {
                onEnded("\(error)")
                return
            }
            // Skip slots already missed rather than bursting to catch up.
            var next = index + 1
            let after = SystemClock.shared.now()
            while start + interval * (next + 1) <= after { next += 1 }
            schedule(on: loop, start: start, interval: interval, index: next, step: step)
        }
    }

    /// Stops scheduling steps. Waits up to half a second for the threads to
    /// finish: a source blocked reading a silent pipe must not hold the exit.
    func stop() async {
        stopped.withLockedValue { $0 = true }
        let done = NIOLockedValueBox(false)
        group.shutdownGracefully { _ in done.withLockedValue { $0 = true } }
        for _ in 0..<50 where !done.withLockedValue({ $0 }) {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }
}

/// Moves a value the compiler cannot prove sendable to the one thread that
/// uses it (each source and encoder lives on exactly one loop).
struct UnsafeTransfer<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
