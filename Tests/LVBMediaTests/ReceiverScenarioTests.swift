import LVBCore
import LVBTestSupport
import Testing
@testable import LVBMedia

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

}
