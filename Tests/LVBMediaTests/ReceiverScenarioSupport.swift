import LVBCore
import LVBTestSupport
import Testing
@testable import LVBMedia


/// One direction of a simulated link: random loss, a base delay and uniform
/// jitter per packet (so packets also reorder).
struct SimulatedLink {
    let loss: Double
    let delay: Duration
    let jitter: Duration
    let rng: SeededRandom
    private var inFlight: [(at: Instant, order: Int, bytes: [UInt8])] = []
    private var order = 0

    init(loss: Double, delay: Duration, jitter: Duration, seed: UInt64) {
        self.loss = loss
        self.delay = delay
        self.jitter = jitter
        self.rng = SeededRandom(seed: seed)
    }

    mutating func send(_ bytes: [UInt8], now: Instant) {
        guard rng.unit() >= loss else { return }
        let extra = Duration.nanoseconds(Int64(rng.unit() * Double(jitter.nanosecondsClamped)))
        inFlight.append((now + delay + extra, order, bytes))
        order += 1
    }

    mutating func deliver(now: Instant) -> [[UInt8]] {
        let due = inFlight.filter { $0.at <= now }.sorted { ($0.at, $0.order) < ($1.at, $1.order) }
        inFlight.removeAll { $0.at <= now }
        return due.map(\.bytes)
    }

    var nextDelivery: Instant? { inFlight.map(\.at).min() }
}

/// Hands out scripted values, so the library's encoder starts its RTP
/// sequence numbers, timestamps and PictureIDs where the test wants them
/// (close to wrapping).
final class ScriptedRandom: RandomSource {
    private var values: [UInt64]
    init(_ values: [UInt64]) { self.values = values }
    func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        var v = values.isEmpty ? 0 : values.removeFirst()
        withUnsafeBytes(of: &v) { raw in for i in buffer.indices { buffer[i] = raw[i % 8] } }
    }
}

/// The host's video path, the library's own: `VideoStreamEncoder` (VP8 at
/// 30 fps, 2 s GOP, PictureID packetizer, capture-time extension) feeding a
/// `MediaOrigin` whose fan-out answers NACKs from its send history and whose
/// origin turns PLIs into keyframes. Subscriber 0 is the receiver under test.
final class TestVideoSender {
    static let ssrc: UInt32 = 0x5EED_0001
    let source: SyntheticVideo
    let encoder: VideoStreamEncoder
    let origin: MediaOrigin<Int>
    private var sent: [[UInt8]] = []
    /// A keyframe asked for outside RTCP (a test's shortcut).
    var keyframeRequested = false
    var keyframes = 0, packets = 0, bytes = 0
    var retransmissions: Int { origin.fanOut.stats.retransmissions }
    var plis: Int { origin.stats.plisReceived }

    init(clock: Clock, maxPayloadSize: Int = 1100) throws {
        source = try SyntheticVideo(width: 320, height: 180)
        // PictureID 32 700, sequence 64 000 and timestamp 0xFFF0_0000: all wrap within a run.
        encoder = try VideoStreamEncoder(width: 320, height: 180, fps: 30, bitrateKbps: 400, gopSeconds: 2, ssrc: Self.ssrc,
                                         maxPacketSize: maxPayloadSize + MediaConstants.rtpOverhead,
                                         random: ScriptedRandom([32_700, 64_000, 0xFFF0_0000]))
        origin = MediaOrigin(clock: clock, videoSSRC: Self.ssrc, audioSSRC: Self.ssrc + 1, maxVideoKbps: 400)
        origin.send = { [unowned self] _, _, bytes in sent.append(bytes) }
        origin.receiveRTCP(RTCPPacket.receiverReport(try RTCPReceiverReport(ssrc: 1)).serialized()[...], from: 0)
        sent.removeAll()
    }

    /// Encodes frame `number` captured at `wall`; returns what went on the wire.
    func capture(_ number: Int, wall: WallTime) throws -> [[UInt8]] {
        let force = origin.takeKeyframeRequest() || keyframeRequested
        keyframeRequested = false
        guard let frame = try encoder.encode(source.frame(number: number), mediaTime: .nanoseconds(Int64(number) * 1_000_000_000 / 30),
                                             captureTime: NTPTime.from(wall), forceKeyframe: force) else { return [] }
        if frame.isKeyframe { keyframes += 1 }
        bytes += frame.bytes
        packets += frame.packets.count
        origin.publishVideo(frame)
        return take()
    }

    /// The viewer's RTCP: NACKed packets come back from the history, a PLI asks for a keyframe.
    func handleFeedback(_ bytes: [UInt8]) throws -> [[UInt8]] {
        origin.receiveRTCP(bytes[...], from: 0)
        return take()
    }

    /// Timers: sender reports (they share the simulated wire).
    func tick() -> [[UInt8]] {
        origin.tick()
        return take()
    }

    private func take() -> [[UInt8]] {
        defer { sent.removeAll() }
        return sent
    }
}

/// The host's audio path, the library's own `AudioStreamEncoder` (Opus
/// 20 ms mono with in-band FEC, RTP per RFC 7587, capture-time extension),
/// started close to wrapping its sequence number and timestamp.
final class TestAudioSender {
    static let ssrc: UInt32 = 0x5EED_0002
    static let timestampBase: UInt32 = 0xFFFE_0000
    let encoder: AudioStreamEncoder
    var source: SyntheticAudio

    init() throws {
        encoder = try AudioStreamEncoder(ssrc: Self.ssrc, bitrate: 32_000, random: ScriptedRandom([65_000, UInt64(Self.timestampBase)]))
        source = try SyntheticAudio()
    }

    static func number(_ timestamp: UInt32) -> Int { Int(Int32(bitPattern: timestamp &- timestampBase)) / 960 }

    func capture(_ number: Int, wall: WallTime) throws -> [UInt8] {
        try encoder.encode(source.next20ms(), mediaTime: MediaConstants.audioFrameDuration * number,
                           captureTime: NTPTime.from(wall)).serialized()
    }
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded(.up)))]
}

func rounded(_ x: Double) -> Double { (x * 10).rounded() / 10 }

/// What a simulated video run observed.
struct VideoRun {
    var decoded: [Int] = []
    /// Each released frame's `afterLoss`, beside `decoded`.
    var afterLoss: [Bool] = []
    var unreadable = 0
    var released: [Instant] = []
    /// Release time minus the frame's arrival (the jitter buffer's share), ms.
    var bufferDelays: [Double] = []
    /// Release time minus capture time minus the link's base delay, ms.
    var addedDelays: [Double] = []
    var framesSent = 0
    /// Times `nextWakeup` pointed at or before the poll just made (an owner would spin).
    var stuckWakeups = 0
    var stats = VideoReceiverStats()
    var sender: TestVideoSender?
}

/// Runs sender → link → receiver → link → sender on a test clock, stepping
/// 1–5 ms (or to the next event, whichever is sooner).
func runVideo(seconds: Int, loss: Double, delay: Duration, jitter: Duration, seed: UInt64,
                      maxPayloadSize: Int = 1100) throws -> VideoRun {
    let clock = ManualClock()
    let receiver = try VideoReceiver(clock: clock, ssrc: 0xC0FF_EE01)
    receiver.rtt = delay * 2 + jitter
    let sender = try TestVideoSender(clock: clock, maxPayloadSize: maxPayloadSize)
    var down = SimulatedLink(loss: loss, delay: delay, jitter: jitter, seed: seed)
    var up = SimulatedLink(loss: loss, delay: delay, jitter: jitter, seed: seed &+ 1)
    let steps = SeededRandom(seed: seed &+ 2)
    let start = clock.now(), end = start + .seconds(seconds)
    var run = VideoRun()
    var captured: [Int: Instant] = [:]
    func nextCapture() -> Instant { start + .nanoseconds(Int64(run.framesSent) * 1_000_000_000 / 30) }
    var nextTick = start

    while clock.now() < end {
        let now = clock.now()
        while nextCapture() <= now {
            captured[run.framesSent] = now
            for bytes in try sender.capture(run.framesSent, wall: clock.wallTime()) { down.send(bytes, now: now) }
            run.framesSent += 1
        }
        if now >= nextTick {
            for bytes in sender.tick() { down.send(bytes, now: now) }
            nextTick = now + .milliseconds(100)
        }
        for bytes in down.deliver(now: now) {
            if bytes[1] == 200 {  // RTCP SR shares the simulated wire
                for packet in try RTCPPacket.parseCompound(bytes) { receiver.receiveRTCP(packet) }
            } else {
                receiver.receive(try RTPPacket.parse(bytes))
            }
        }
        for bytes in up.deliver(now: now) {
            for retransmission in try sender.handleFeedback(bytes) { down.send(retransmission, now: now) }
        }
        for output in receiver.poll() {
            switch output {
            case let .frame(frame):
                guard let number = SyntheticVideo.readFrameNumber(frame.image) else { run.unreadable += 1; continue }
                run.decoded.append(number)
                run.afterLoss.append(frame.afterLoss)
                run.released.append(now)
                run.bufferDelays.append((now - frame.arrival).milliseconds)
                if let at = captured[number] { run.addedDelays.append((now - at - delay).milliseconds) }
            case let .feedback(packets):
                up.send(RTCPPacket.serializeCompound(packets), now: now)
            }
        }
        if let wake = receiver.nextWakeup, wake <= now { run.stuckWakeups += 1 }
        let step = Duration.milliseconds(1 + Int(steps.next() % 5))
        let next = [now + step, nextCapture(), down.nextDelivery, up.nextDelivery, receiver.nextWakeup]
            .compactMap { $0 }.filter { $0 > now }.min() ?? now + step
        clock.advance(to: next)
    }
    run.stats = receiver.stats
    run.sender = sender
    return run
}

struct AudioRun {
    var frames: [ReceivedAudioFrame] = []
    var bufferDelays: [Double] = []
    var stuckWakeups = 0
    var stats = AudioReceiverStats()
}

func runAudio(frames: Int, loss: Double, jitter: Duration, seed: UInt64) throws -> AudioRun {
    let clock = ManualClock()
    let receiver = try AudioReceiver(clock: clock, ssrc: 0xC0FF_EE04)
    let sender = try TestAudioSender()
    var down = SimulatedLink(loss: loss, delay: .milliseconds(10), jitter: jitter, seed: seed)
    let steps = SeededRandom(seed: seed &+ 2)
    let start = clock.now()
    // Run until every slot had time to play (a 400 ms buffer at most), not much longer.
    let end = start + .milliseconds(20 * frames) + .milliseconds(450)
    var run = AudioRun()
    var sent = 0
    func nextCapture() -> Instant? { sent < frames ? start + .milliseconds(20 * sent) : nil }
    while clock.now() < end {
        let now = clock.now()
        while let at = nextCapture(), at <= now {
            down.send(try sender.capture(sent, wall: clock.wallTime()), now: now)
            sent += 1
        }
        for bytes in down.deliver(now: now) { receiver.receive(try RTPPacket.parse(bytes)) }
        for output in receiver.poll() {
            guard case let .audio(frame) = output else { continue }
            run.frames.append(frame)
            if let arrival = frame.arrival { run.bufferDelays.append((now - arrival).milliseconds) }
        }
        if let wake = receiver.nextWakeup, wake <= now { run.stuckWakeups += 1 }
        let step = Duration.milliseconds(1 + Int(steps.next() % 5))
        let next = [now + step, nextCapture(), down.nextDelivery, receiver.nextWakeup]
            .compactMap { $0 }.filter { $0 > now }.min() ?? now + step
        clock.advance(to: next)
    }
    // Concealment after the last packet is not part of the 1000 slots.
    run.frames = run.frames.filter { (0..<frames).contains(TestAudioSender.number($0.rtpTimestamp)) }
    run.stats = receiver.stats
    return run
}
