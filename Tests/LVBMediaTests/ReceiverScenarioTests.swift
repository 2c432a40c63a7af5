import LVBCore
import LVBTestSupport
import Testing
@testable import LVBMedia

/// One direction of a simulated link: random loss, a base delay and uniform
/// jitter per packet (so packets also reorder).
private struct SimulatedLink {
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
private final class ScriptedRandom: RandomSource {
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
private final class TestVideoSender {
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
private final class TestAudioSender {
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

private func percentile(_ values: [Double], _ p: Double) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded(.up)))]
}

private func rounded(_ x: Double) -> Double { (x * 10).rounded() / 10 }

/// What a simulated video run observed.
private struct VideoRun {
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
private func runVideo(seconds: Int, loss: Double, delay: Duration, jitter: Duration, seed: UInt64,
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

@Suite("Receiver scenarios")
struct ReceiverScenarioTests {
    @Test("Video over 10% loss both ways and 0–30 ms jitter: NACK repairs, PLI recovers, ≥ 90% shown in order",
          arguments: [1100, 100])
    func videoUnderLossAndJitter(maxPayloadSize: Int) throws {
        let run = try runVideo(seconds: 20, loss: 0.10, delay: .milliseconds(10), jitter: .milliseconds(30),
                               seed: 2024, maxPayloadSize: maxPayloadSize)
        let s = run.stats
        let gaps = zip(run.released.dropFirst(), run.released).map { ($0 - $1).milliseconds }
        let longestGap = gaps.max() ?? .infinity
        let ratio = Double(run.decoded.count) / Double(run.framesSent)
        let sender = run.sender
        print("video lossy (\(maxPayloadSize)-byte payloads): sent \(run.framesSent) frames /",
              "\(sender?.packets ?? 0) packets (\((sender?.bytes ?? 0) / max(1, run.framesSent)) B/frame),",
              "decoded \(s.framesDecoded) (\(rounded(ratio * 100))%), skipped \(s.skippedFrames),",
              "lost \(s.lost), recovered \(s.recovered), duplicates \(s.duplicates), nacks \(s.nacksSent)",
              "(\(s.nackedSequences) seqs), retransmitted \(sender?.retransmissions ?? 0),",
              "PLIs \(s.keyframeRequests) (sender saw \(sender?.plis ?? 0)), keyframes \(sender?.keyframes ?? 0),",
              "decode errors \(s.decodeErrors), longest gap \(rounded(longestGap)) ms,",
              "buffer delay p50/p95 \(rounded(percentile(run.bufferDelays, 0.5)))/\(rounded(percentile(run.bufferDelays, 0.95))) ms,",
              "target \(rounded(s.currentDelay.milliseconds)) ms, jitter \(rounded(s.jitter)) ms")

        #expect(run.unreadable == 0)
        #expect(zip(run.decoded.dropFirst(), run.decoded).allSatisfy { $0 > $1 }, "frame numbers must increase")
        #expect(s.framesDecoded == run.decoded.count + run.unreadable)
        if let first = run.decoded.first, let last = run.decoded.last {
            // Every frame between the first and last shown is shown or counted skipped.
            #expect(s.skippedFrames >= last - first + 1 - run.decoded.count)
            #expect(s.framesDecoded + s.skippedFrames <= last + 1)
        }
        // A frame says frames were lost just before it exactly when its number skips some.
        let skips = zip(run.decoded.dropFirst(), run.decoded).map { $0 - $1 > 1 }
        // (Since a gap waits for four NACK rounds, a run may have no skip at all.)
        #expect(Array(run.afterLoss.dropFirst()) == skips)
        #expect(ratio >= 0.9)
        #expect(longestGap < 2000)
        #expect(s.recovered > 0)
        #expect(s.nacksSent > 0)
        #expect(s.decodeErrors == 0)
        #expect(run.stuckWakeups == 0)
    }

    @Test("At 50% loss both ways some frames cannot be repaired, and the frame after each skip says so")
    func afterLossMarksEverySkip() throws {
        let run = try runVideo(seconds: 8, loss: 0.50, delay: .milliseconds(10), jitter: .milliseconds(10), seed: 77)
        let skips = zip(run.decoded.dropFirst(), run.decoded).map { $0 - $1 > 1 }
        print("video at 50% loss: decoded \(run.decoded.count)/\(run.framesSent), skips \(skips.filter { $0 }.count), skipped \(run.stats.skippedFrames)")
        #expect(skips.contains(true))
        #expect(Array(run.afterLoss.dropFirst()) == skips)
        #expect(run.unreadable == 0 && run.stats.decodeErrors == 0)
    }

    @Test("Video on a clean link: the jitter buffer adds ≤ 5 ms (p95) and nothing is repaired")
    func videoCleanLink() throws {
        let run = try runVideo(seconds: 5, loss: 0, delay: .milliseconds(10), jitter: .zero, seed: 1)
        let s = run.stats
        let p95 = percentile(run.bufferDelays, 0.95), added = percentile(run.addedDelays, 0.95)
        print("video clean: decoded \(s.framesDecoded)/\(run.framesSent), buffer delay p95 \(rounded(p95)) ms,",
              "capture→release minus link p95 \(rounded(added)) ms, target \(rounded(s.currentDelay.milliseconds)) ms")
        #expect(run.decoded == Array(0..<run.decoded.count))
        #expect(run.decoded.count >= run.framesSent - 1)  // the last may still be on the wire
        #expect(p95 <= 5)
        #expect(added <= 5)
        #expect(s.nacksSent == 0 && s.keyframeRequests == 0 && s.skippedFrames == 0)
        #expect(!run.afterLoss.contains(true))
    }

    @Test("A GOP burst is decoded on the poll it arrives, and live frames after it are not delayed")
    func gopBurstGivesInstantFirstFrame() throws {
        let clock = ManualClock()
        let receiver = try VideoReceiver(clock: clock, ssrc: 0xC0FF_EE02)
        let sender = try TestVideoSender(clock: clock)
        let start = clock.now()
        // The host's cache: the 60 frames of the current GOP, captured before we joined.
        let cached = try capture(0..<60, from: sender, clock: clock)
        clock.advance(to: start + .milliseconds(2010))
        for bytes in cached { receiver.receive(try RTPPacket.parse(bytes)) }
        let burst = receiver.poll().compactMap { output -> Int? in
            guard case let .frame(frame) = output else { return nil }
            return SyntheticVideo.readFrameNumber(frame.image)
        }
        #expect(burst.first == 0)
        #expect(burst == Array(0..<60))

        var liveDelays: [Double] = []
        var live: [Int] = []
        for n in 60..<150 {
            let capturedAt = start + .nanoseconds(Int64(n) * 1_000_000_000 / 30)
            clock.advance(to: capturedAt)
            let packets = try sender.capture(n, wall: clock.wallTime())
            clock.advance(to: capturedAt + .milliseconds(10))
            for bytes in packets { receiver.receive(try RTPPacket.parse(bytes)) }
            for output in receiver.poll() {
                guard case let .frame(frame) = output else { continue }
                live.append(SyntheticVideo.readFrameNumber(frame.image) ?? -1)
                liveDelays.append((clock.now() - capturedAt).milliseconds - 10)
            }
        }
        let target = receiver.stats.currentDelay.milliseconds
        print("video burst: \(burst.count) frames on the first poll; live frames \(live.count),",
              "added delay max \(rounded(liveDelays.max() ?? .nan)) ms, target \(rounded(target)) ms")
        #expect(live == Array(60..<150))
        #expect((liveDelays.max() ?? .infinity) <= 1)
        #expect(target <= 1)
    }

    @Test("A GOP burst whose first packets were lost: the receiver asks for those before the first it got, a few at a time, and shows the whole GOP from its keyframe")
    func burstMissingItsStartIsBackfilled() throws {
        let clock = ManualClock()
        let receiver = try VideoReceiver(clock: clock, ssrc: 0xC0FF_EE0B)
        // 100-byte payloads: the keyframe spans many packets.
        let sender = try TestVideoSender(clock: clock, maxPayloadSize: 100)
        let start = clock.now()
        let cached = try capture(0..<60, from: sender, clock: clock)
        // The first 9 packets of the burst (the keyframe's start) are lost on the way.
        clock.advance(to: start + .milliseconds(2010))
        for bytes in cached.dropFirst(9) { receiver.receive(try RTPPacket.parse(bytes)) }
        var shown: [Int] = []
        var nacked: [UInt16] = []
        for _ in 0..<20 {
            for output in receiver.poll() {
                switch output {
                case let .frame(frame):
                    shown.append(SyntheticVideo.readFrameNumber(frame.image) ?? -1)
                case let .feedback(rtcp):
                    for case let .nack(n) in rtcp { nacked += n.lostSequenceNumbers }
                    let answers = try sender.handleFeedback(RTCPPacket.serializeCompound(rtcp))
                    for bytes in answers { receiver.receive(try RTPPacket.parse(bytes)) }
                }
            }
            clock.advance(by: .milliseconds(10))
        }
        let firstSeq = try RTPPacket.parse(cached[0]).sequenceNumber
        print("burst without its first 9 packets: shown \(shown.count), asked for \(Set(nacked).count) packets before the first received")
        #expect(shown == Array(0..<60))
        // It asked for the 9 lost packets in steps of 4, 4 and 8: the last step reaches 7
        // before the burst, which the sender never had.
        #expect(Set((0..<9).map { firstSeq &+ UInt16($0) }).isSubset(of: Set(nacked)))
        #expect(Set(nacked).count <= 16)
        let s = receiver.stats
        #expect(s.skippedFrames == 0 && s.keyframeRequests == 0 && s.decodeErrors == 0)
    }

    @Test("A stream joined mid-GOP, far from its keyframe, asks at most 64 packets back, then starts at the next keyframe")
    func joinFarFromTheKeyframeAsksBoundedlyBack() throws {
        let clock = ManualClock()
        let receiver = try VideoReceiver(clock: clock, ssrc: 0xC0FF_EE0C)
        let sender = try TestVideoSender(clock: clock, maxPayloadSize: 100)
        let packets = try capture(0..<55, from: sender, clock: clock)
        try #require(packets.count > 2 * ReceiverConstants.maxBackfillPackets)
        // The receiver's first packet is the last one of frame 54, a delta frame (keyframes at 0 and 60).
        receiver.receive(try RTPPacket.parse(packets[packets.count - 1]))
        var nacked: Set<UInt16> = []
        var plis = 0
        var shown: [Int] = []
        for n in 55..<80 {
            clock.advance(to: ManualClock.defaultStart + .nanoseconds(Int64(n) * 1_000_000_000 / 30))
            for bytes in try sender.capture(n, wall: clock.wallTime()) { receiver.receive(try RTPPacket.parse(bytes)) }
            for output in receiver.poll() {
                switch output {
                case let .frame(frame): shown.append(SyntheticVideo.readFrameNumber(frame.image) ?? -1)
                case let .feedback(rtcp):
                    for case let .nack(n) in rtcp { nacked.formUnion(n.lostSequenceNumbers) }
                    for case .pli in rtcp { plis += 1 }
                    for bytes in try sender.handleFeedback(RTCPPacket.serializeCompound(rtcp)) { receiver.receive(try RTPPacket.parse(bytes)) }
                }
            }
        }
        let before = Set(packets.dropLast().suffix(ReceiverConstants.maxBackfillPackets).map { try! RTPPacket.parse($0).sequenceNumber })
        #expect(nacked == before)
        // The next keyframe (frame 60, before the PLI's 300 ms were up) is where the picture starts.
        #expect(plis == 0)
        #expect(shown == Array(60..<(60 + shown.count)) && shown.count >= 19)  // the last may still wait in the buffer
    }

    @Test("Audio over 10% loss and 0–30 ms jitter: one frame per 20 ms slot, FEC and PLC cover the losses")
    func audioUnderLossAndJitter() throws {
        let run = try runAudio(frames: 1000, loss: 0.10, jitter: .milliseconds(30), seed: 77)
        let s = run.stats
        let numbers = run.frames.map { TestAudioSender.number($0.rtpTimestamp) }
        let inRange = run.frames.filter { (0..<1000).contains(TestAudioSender.number($0.rtpTimestamp)) }
        let repaired = inRange.filter { $0.encoded == nil }
        print("audio lossy: \(inRange.count) frames for 1000 slots, lost \(s.lost), late \(s.late),",
              "FEC \(s.fecRecovered), concealed \(s.concealed), discarded \(s.discarded),",
              "target \(rounded(s.currentDelay.milliseconds)) ms, jitter \(rounded(s.jitter)) ms")
        #expect(zip(numbers.dropFirst(), numbers).allSatisfy { $0 == $1 + 1 }, "one frame per slot, in order")
        #expect(inRange.count >= 999)  // all of them, unless the very first packet was lost
        #expect(run.frames.allSatisfy { $0.pcm.count == 960 })
        // Losses at the very start or end are invisible to the statistics, hence the slack.
        #expect(abs(repaired.count - (s.lost + s.late)) <= 2)
        #expect(s.fecRecovered > 0)
        #expect(s.discarded == 0)
        #expect(run.stuckWakeups == 0)
    }

    @Test("Audio on a clean link plays with 0–20 ms of buffering")
    func audioCleanLink() throws {
        let run = try runAudio(frames: 250, loss: 0, jitter: .zero, seed: 5)
        let s = run.stats
        print("audio clean: \(run.frames.count) frames, target \(rounded(s.currentDelay.milliseconds)) ms,",
              "buffer delay max \(rounded(run.bufferDelays.max() ?? .nan)) ms")
        #expect(run.frames.prefix(250).allSatisfy { !$0.concealed && $0.encoded != nil })
        #expect(s.currentDelay <= .milliseconds(20))
        #expect((run.bufferDelays.max() ?? .infinity) <= 20)
    }

    @Test("Audio joining with a burst of old packets skips to live")
    func audioBurstSkipsToLive() throws {
        let clock = ManualClock()
        let receiver = try AudioReceiver(clock: clock, ssrc: 0xC0FF_EE03)
        let sender = try TestAudioSender()
        let start = clock.now()
        var cached: [[UInt8]] = []
        for n in 0..<100 { cached.append(try sender.capture(n, wall: clock.wallTime())) }
        clock.advance(to: start + .milliseconds(2010))
        for bytes in cached { receiver.receive(try RTPPacket.parse(bytes)) }
        let first = receiver.poll().compactMap { output -> ReceivedAudioFrame? in
            guard case let .audio(frame) = output else { return nil }
            return frame
        }
        var delays: [Double] = []
        for n in 100..<200 {
            let capturedAt = start + .milliseconds(20 * n)
            clock.advance(to: capturedAt)
            let bytes = try sender.capture(n, wall: clock.wallTime())
            clock.advance(to: capturedAt + .milliseconds(10))
            receiver.receive(try RTPPacket.parse(bytes))
            for output in receiver.poll() {
                guard case let .audio(frame) = output else { continue }
                if TestAudioSender.number(frame.rtpTimestamp) == n { delays.append((clock.now() - capturedAt).milliseconds - 10) }
            }
        }
        let s = receiver.stats
        print("audio burst: \(first.count) frames on the first poll, discarded \(s.discarded),",
              "live added delay max \(rounded(delays.max() ?? .nan)) ms, target \(rounded(s.currentDelay.milliseconds)) ms")
        #expect(!first.isEmpty)
        #expect(first.count <= 11)  // at most ~200 ms of the old audio is still played
        #expect(s.discarded >= 89)
        #expect(delays.count == 100)
        #expect((delays.max() ?? .infinity) <= 1)
    }

    /// Captures frames `range` of `sender`, each at its time (30 fps from the
    /// clock's start), and returns their packets as the sender put them on the wire.
    private func capture(_ range: Range<Int>, from sender: TestVideoSender, clock: ManualClock) throws -> [[UInt8]] {
        var packets: [[UInt8]] = []
        for n in range {
            clock.advance(to: ManualClock.defaultStart + .nanoseconds(Int64(n) * 1_000_000_000 / 30))
            packets += try sender.capture(n, wall: clock.wallTime())
        }
        return packets
    }

    /// Sends frames `range` of `sender` straight to `receiver` at 30 fps (no loss), answering
    /// PLIs with a keyframe unless `answerPLIs` is false (the sender is gone); `alter` may
    /// change a frame's packets. Returns the frame numbers shown.
    private func stream(_ range: Range<Int>, from sender: TestVideoSender, to receiver: VideoReceiver,
                        clock: ManualClock, plis: inout [Instant], answerPLIs: Bool = true,
                        alter: (Int, inout [RTPPacket]) -> Void = { _, _ in }) throws -> [Int] {
        var shown: [Int] = []
        for n in range {
            clock.advance(to: ManualClock.defaultStart + .nanoseconds(Int64(n) * 1_000_000_000 / 30))
            var packets = try sender.capture(n, wall: clock.wallTime()).map { try RTPPacket.parse($0) }
            alter(n, &packets)
            for packet in packets { receiver.receive(packet) }
            for output in receiver.poll() {
                switch output {
                case let .frame(frame):
                    shown.append(SyntheticVideo.readFrameNumber(frame.image) ?? -1)
                case let .feedback(rtcp):
                    for case .pli in rtcp {
                        plis.append(clock.now())
                        sender.keyframeRequested = answerPLIs
                    }
                }
            }
        }
        return shown
    }

    @Test("A relay dies with a frame missing and later ones queued: the gap wait runs out during the outage, yet the new relay's GOP burst fills the gap and nothing is skipped")
    func gapFilledAfterItsWaitResumesWithoutSkip() throws {
        let clock = ManualClock()
        let receiver = try VideoReceiver(clock: clock, ssrc: 0xC0FF_EE0A)
        let sender = try TestVideoSender(clock: clock)
        var plis: [Instant] = []
        var sent: [[UInt8]] = []
        // Frame 10 is lost, 11 and 12 arrive, then the relay is silent for a second (13–39):
        // no repair and no keyframe reach the viewer.
        var shown = try stream(0..<40, from: sender, to: receiver, clock: clock, plis: &plis, answerPLIs: false) { n, packets in
            sent += packets.map { $0.serialized() }
            if n == 10 || n >= 13 { packets.removeAll() }
        }
        #expect(shown == Array(0..<10))
        #expect(!plis.isEmpty)  // a keyframe was asked for once the gap wait ran out
        // The new relay sends its GOP cache (frames 0–39, from the keyframe at 0), then live frames.
        for bytes in sent { receiver.receive(try RTPPacket.parse(bytes)) }
        shown += try stream(40..<70, from: sender, to: receiver, clock: clock, plis: &plis)
        let s = receiver.stats
        print("late gap repair: shown \(shown.count) frames, skipped \(s.skippedFrames), PLIs \(plis.count), target \(rounded(s.currentDelay.milliseconds)) ms")
        #expect(shown == Array(0..<70))
        #expect(s.skippedFrames == 0)
        // The burst came a second late because of the outage, not jitter: no added delay after it.
        #expect(s.currentDelay < .milliseconds(100))
        #expect(s.decodeErrors == 0)
    }

    @Test("A corrupt frame is counted, a keyframe is requested, and decoding resumes with it")
    func corruptFrameRequestsKeyframe() throws {
        let clock = ManualClock()
        let receiver = try VideoReceiver(clock: clock, ssrc: 0xC0FF_EE05)
        let sender = try TestVideoSender(clock: clock)
        var plis: [Instant] = []
        let shown = try stream(0..<40, from: sender, to: receiver, clock: clock, plis: &plis) { n, packets in
            guard n == 10, var payload = packets.first.map({ Array($0.payload) }), payload.count > 7 else { return }
            // VP8 frame tag (RFC 6386 §9.1) after the 4-byte descriptor: claim a first partition
            // far longer than the frame.
            payload[5] = 0xFF
            payload[6] = 0xFF
            packets[0].payload = payload[...]
        }
        let s = receiver.stats
        #expect(s.decodeErrors == 1)
        #expect(plis.count == 1)
        #expect(s.keyframeRequests == 1)
        // The PLI goes out on the poll that hit the error, so frame 11 is already the keyframe.
        #expect(shown == Array(0..<10) + Array(11..<40))
        #expect(s.skippedFrames == 1)
    }

    @Test("Joining mid-GOP: inter frames are dropped and a PLI goes out 300 ms after the first packet")
    func joinWithoutKeyframeAsksForOne() throws {
        let clock = ManualClock()
        let receiver = try VideoReceiver(clock: clock, ssrc: 0xC0FF_EE06)
        let sender = try TestVideoSender(clock: clock)
        var plis: [Instant] = []
        var ignored: [Instant] = []
        _ = try stream(0..<5, from: sender, to: try VideoReceiver(clock: clock, ssrc: 1), clock: clock, plis: &ignored)
        let firstPacket = ManualClock.defaultStart + .nanoseconds(5 * 1_000_000_000 / 30)
        let shown = try stream(5..<40, from: sender, to: receiver, clock: clock, plis: &plis)
        #expect(plis.count == 1)
        if let pli = plis.first {
            #expect(pli - firstPacket >= .milliseconds(300))
            #expect(pli - firstPacket < .milliseconds(340))
        }
        // The keyframe answering the PLI is the first frame shown; all after it follow.
        #expect(shown.first.map { $0 > 5 } == true)
        if let first = shown.first { #expect(shown == Array(first..<40)) }
    }

    @Test("beforeDecode runs once for each frame given to the decoder, before the frame comes out (a relay flushes what it forwarded)")
    func beforeDecodeRunsPerDecodedFrame() throws {
        let clock = ManualClock()
        let receiver = try VideoReceiver(clock: clock, ssrc: 0xC0FF_EE09)
        let sender = try TestVideoSender(clock: clock)
        var calls = 0
        var callsWhenShown: [Int] = []
        receiver.beforeDecode = { calls += 1 }
        var plis: [Instant] = []
        for n in 0..<20 {
            let shown = try stream(n..<(n + 1), from: sender, to: receiver, clock: clock, plis: &plis)
            callsWhenShown += shown.map { _ in calls }
        }
        #expect(receiver.stats.framesDecoded == 20)
        #expect(calls == 20)
        // Frame k came out after the k-th call, never before it.
        #expect(callsWhenShown == Array(1...20))
    }

    @Test("Garbage from the media source is counted and dropped, never a crash")
    func garbageNeverCrashes() throws {
        let clock = ManualClock()
        let video = try VideoReceiver(clock: clock, ssrc: 0xC0FF_EE07)
        let audio = try AudioReceiver(clock: clock, ssrc: 0xC0FF_EE08)
        let rng = SeededRandom(seed: 99)
        for i in 0..<3000 {
            let payload = rng.bytes(1 + Int(rng.next() % 300))
            let seq = i % 3 == 0 ? UInt16(truncatingIfNeeded: rng.next()) : UInt16(truncatingIfNeeded: i)
            let ts = i % 5 == 0 ? UInt32(truncatingIfNeeded: rng.next()) : UInt32(i / 3) &* 3000
            let p = try RTPPacket(marker: rng.next() % 2 == 0, payloadType: 96, sequenceNumber: seq,
                                  timestamp: ts, ssrc: 42, payload: payload[...])
            video.receive(p)
            var a = try RTPPacket(payloadType: 111, sequenceNumber: seq, timestamp: ts &* 3, ssrc: 42, payload: payload[...])
            a.marker = false
            audio.receive(a)
            clock.advance(by: .microseconds(Int64(rng.next() % 20_000)))
            _ = video.poll()
            _ = audio.poll()
        }
        let v = video.stats, a = audio.stats
        print("garbage: video malformed \(v.malformedPackets), decode errors \(v.decodeErrors), decoded \(v.framesDecoded),",
              "PLIs \(v.keyframeRequests); audio decode errors \(a.decodeErrors), late \(a.late), concealed \(a.concealed)")
        #expect(v.packets == 3000 && a.packets + a.malformedPackets == 3000)
        #expect(v.framesDecoded == 0)
    }
}

private struct AudioRun {
    var frames: [ReceivedAudioFrame] = []
    var bufferDelays: [Double] = []
    var stuckWakeups = 0
    var stats = AudioReceiverStats()
}

private func runAudio(frames: Int, loss: Double, jitter: Duration, seed: UInt64) throws -> AudioRun {
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
