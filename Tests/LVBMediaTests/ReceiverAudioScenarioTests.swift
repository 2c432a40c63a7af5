import LVBCore
import LVBTestSupport
import Testing
@testable import LVBMedia

/// Receiver scenarios, continued: audio, relay deaths, corrupt and garbage input.
extension ReceiverScenarioTests {
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
    func capture(_ range: Range<Int>, from sender: TestVideoSender, clock: ManualClock) throws -> [[UInt8]] {
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
