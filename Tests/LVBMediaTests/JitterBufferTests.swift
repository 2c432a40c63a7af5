import LVBCore
import LVBTestSupport
import Testing
@testable import LVBMedia

fileprivate extension Instant {
    static func ms(_ value: Double) -> Instant {
        ManualClock.defaultStart + .nanoseconds(Int64(value * 1e6))
    }
}

@Suite("Jitter buffer delay")
struct JitterBufferTests {
    /// Frames at 30 fps (3000 ticks at 90 kHz) with the given one-way delay per frame, in ms.
    private func run(_ buffer: inout JitterBuffer, frames: Range<Int>, delay: (Int) -> Double) {
        for n in frames {
            let arrival = Instant.ms(Double(n) * 1000 / 30 + delay(n))
            buffer.recordArrival(timestamp: UInt32(truncatingIfNeeded: 0xFFFF_0000 + n * 3000), at: arrival)
        }
    }

    @Test func cleanLinkNeedsNoDelay() {
        var buffer = JitterBuffer(clockRate: 90_000)
        run(&buffer, frames: 0..<300) { _ in 40 }
        // Nanosecond rounding of 1/30 s is the only lateness.
        #expect(buffer.targetDelay < .microseconds(1))
        let arrival = Instant.ms(300 * 1000 / 30 + 40)
        buffer.recordArrival(timestamp: UInt32(truncatingIfNeeded: 0xFFFF_0000 + 300 * 3000), at: arrival)
        let release = buffer.releaseTime(timestamp: UInt32(truncatingIfNeeded: 0xFFFF_0000 + 300 * 3000))
        #expect(release.map { $0 - arrival < .microseconds(1) } == true)
    }

    @Test func jitterOfPlusMinus20msNeedsAbout20To40ms() {
        let rng = SeededRandom(seed: 42)
        var buffer = JitterBuffer(clockRate: 90_000)
        run(&buffer, frames: 0..<600) { _ in 50 + (rng.unit() * 40 - 20) }
        let target = buffer.targetDelay.milliseconds
        #expect((20...40).contains(target), "target \(target) ms")
    }

    @Test func burstOfOldFramesIsDueAtOnceAndDoesNotRaiseTheTarget() {
        var buffer = JitterBuffer(clockRate: 90_000)
        func ts(_ n: Int) -> UInt32 { UInt32(truncatingIfNeeded: 0xFFFF_0000 + n * 3000) }
        // Frames 0..<60 were cached by the host and reach us together at 2 s + 10 ms.
        let burstArrival = Instant.ms(2010)
        for n in 0..<60 {
            buffer.recordArrival(timestamp: ts(n), at: burstArrival)
            #expect(buffer.releaseTime(timestamp: ts(n))! <= burstArrival)
        }
        #expect(buffer.targetDelay == .zero)
        run(&buffer, frames: 60..<150) { _ in 10 }
        #expect(buffer.targetDelay < .microseconds(1))
        for n in 0..<60 { #expect(buffer.releaseTime(timestamp: ts(n))! <= burstArrival) }
    }

    @Test func followsClockDrift() {
        var buffer = JitterBuffer(clockRate: 90_000)
        // The sender's clock runs 100 ppm slow: transit grows 0.1 ms per second.
        run(&buffer, frames: 0..<3000) { n in 20 + Double(n) / 30 * 0.1 }
        #expect(buffer.targetDelay.milliseconds < 1.5)
    }

    @Test func targetFallsBackWhenJitterStops() {
        let rng = SeededRandom(seed: 7)
        var buffer = JitterBuffer(clockRate: 90_000)
        run(&buffer, frames: 0..<300) { _ in 30 + rng.unit() * 60 }
        #expect(buffer.targetDelay.milliseconds > 40)
        run(&buffer, frames: 300..<420) { _ in 30 }
        #expect(buffer.targetDelay.milliseconds < 1)
    }

    @Test func targetIsCappedAt400ms() {
        var buffer = JitterBuffer(clockRate: 90_000)
        run(&buffer, frames: 0..<90) { n in n % 2 == 0 ? 0 : 900 }
        #expect(buffer.targetDelay == .milliseconds(400))
    }
}

// The receive statistics and NACK tracker suites sit inside this one so that
// `--filter JitterBuffer` runs the whole receive-side unit layer.
extension JitterBufferTests {
    @Suite("Receive statistics (RFC 3550 §A.1, §A.3, §A.8)")
    struct ReceiveStatisticsTests {
        private func feed(_ stats: inout ReceiveStatistics, _ seqs: [UInt16], at: Instant = .ms(0)) {
            for seq in seqs { _ = stats.record(sequenceNumber: seq, timestamp: 0, payloadBytes: 100, at: at) }
        }

        @Test func sequenceWrapCountsACycle() {
            var stats = ReceiveStatistics(ssrc: 7, clockRate: 90_000)
            feed(&stats, (0..<20).map { UInt16(truncatingIfNeeded: 65530 + $0) })
            let block = stats.reportBlock(now: .ms(0))
            // 65530 + 19 = 65549: one cycle (0x10000) plus 13.
            #expect(block.extendedHighestSequence == 0x0001_000D)
            #expect(block.cumulativeLost == 0)
            #expect(block.fractionLost == 0)
            #expect(stats.expected == 20)
        }

        @Test func fractionLostIsPerIntervalAndCumulativeLostIsNot() {
            var stats = ReceiveStatistics(ssrc: 7, clockRate: 90_000)
            feed(&stats, (0..<100).filter { $0 % 10 != 5 }.map { UInt16($0) })
            var block = stats.reportBlock(now: .ms(0))
            #expect(block.cumulativeLost == 10)
            #expect(block.fractionLost == 25)  // 10 × 256 / 100, truncated
            feed(&stats, (100..<200).map { UInt16($0) })
            block = stats.reportBlock(now: .ms(0))
            #expect(block.cumulativeLost == 10)
            #expect(block.fractionLost == 0)
            feed(&stats, (200..<300).filter { $0 % 2 == 0 }.map { UInt16($0) })
            block = stats.reportBlock(now: .ms(0))
            #expect(block.fractionLost == 126)  // 49 lost of 99 expected (298 is the highest): 49 × 256 / 99
            #expect(block.cumulativeLost == 59)
        }

        @Test func duplicatesAndReorderingAreCountedNotReceived() {
            var stats = ReceiveStatistics(ssrc: 7, clockRate: 90_000)
            var kinds: [ReceiveStatistics.Arrival] = []
            for seq: UInt16 in [0, 1, 2, 4, 3, 3, 2, 4] {
                kinds.append(stats.record(sequenceNumber: seq, timestamp: 0, payloadBytes: 1, at: .ms(0)))
            }
            #expect(kinds == [.inOrder, .inOrder, .inOrder, .inOrder, .outOfOrder, .duplicate, .duplicate, .duplicate])
            #expect(stats.duplicates == 3)
            #expect(stats.outOfOrder == 1)
            #expect(stats.packetsReceived == 5)
            #expect(stats.cumulativeLost == 0)
        }

        @Test func cumulativeLostIsClampedTo24BitsSigned() {
            var stats = ReceiveStatistics(ssrc: 7, clockRate: 90_000)
            var seq: UInt16 = 0
            feed(&stats, [seq])
            for _ in 0..<3000 {
                seq &+= 2999  // just under MAX_DROPOUT: counted as loss, not a restart
                feed(&stats, [seq])
            }
            #expect(stats.cumulativeLost == 2998 * 3000)
            #expect(stats.reportBlock(now: .ms(0)).cumulativeLost == 0x7F_FFFF)
        }

        @Test func twoSequentialPacketsAfterAJumpRestart() {
            var stats = ReceiveStatistics(ssrc: 7, clockRate: 90_000)
            feed(&stats, [10, 11, 12])
            #expect(stats.record(sequenceNumber: 40000, timestamp: 0, payloadBytes: 1, at: .ms(0)) == .jump)
            #expect(stats.record(sequenceNumber: 40001, timestamp: 0, payloadBytes: 1, at: .ms(0)) == .inOrder)
            #expect(stats.expected == 1)
            #expect(stats.extendedHighestSequence == 40001)
        }

        @Test func jitterFollowsRFC3550A8() {
            var steady = ReceiveStatistics(ssrc: 7, clockRate: 48_000)
            var uneven = ReceiveStatistics(ssrc: 7, clockRate: 48_000)
            for i in 0..<300 {
                let ts = UInt32(i * 960)
                _ = steady.record(sequenceNumber: UInt16(i), timestamp: ts, payloadBytes: 1, at: .ms(Double(i) * 20))
                // Every other packet 10 ms late: |D| = 10 ms = 480 ticks each time.
                let late = i % 2 == 1 ? 10.0 : 0
                _ = uneven.record(sequenceNumber: UInt16(i), timestamp: ts, payloadBytes: 1, at: .ms(Double(i) * 20 + late))
            }
            #expect(steady.reportBlock(now: .ms(0)).jitter == 0)
            #expect((470...480).contains(uneven.reportBlock(now: .ms(0)).jitter))
            #expect(abs(uneven.jitterMilliseconds - 10) < 0.2)
        }

        @Test func reportCarriesLSRAndDLSR() throws {
            var stats = ReceiveStatistics(ssrc: 7, clockRate: 90_000)
            feed(&stats, [1])
            #expect(stats.reportBlock(now: .ms(0)).lastSenderReport == 0)
            let sr = try RTCPSenderReport(ssrc: 7, ntpTimestamp: 0x0123_4567_89AB_CDEF, rtpTimestamp: 0,
                                          packetCount: 0, octetCount: 0)
            stats.recordSenderReport(sr, at: .ms(1000))
            let block = stats.reportBlock(now: .ms(2500))
            #expect(block.lastSenderReport == 0x4567_89AB)
            #expect(block.delaySinceLastSenderReport == 98_304)  // 1.5 s × 65536
            let other = try RTCPSenderReport(ssrc: 8, ntpTimestamp: 1 << 40, rtpTimestamp: 0, packetCount: 0, octetCount: 0)
            stats.recordSenderReport(other, at: .ms(2600))
            #expect(stats.reportBlock(now: .ms(2500)).lastSenderReport == 0x4567_89AB)
        }
    }

    @Suite("NACK tracker")
    struct NackTrackerTests {
        @Test func gapIsRequestedOnceReorderingIsRuledOut() {
            var nack = NackTracker()
            for seq: UInt16 in [0, 1, 2, 5] { nack.insert(seq, at: .ms(0)) }
            #expect(nack.missing == [3, 4])
            // 5 is two newer than 3, so 3 goes at once; 4 waits out the 5 ms reorder allowance.
            #expect(nack.poll(now: .ms(0)) == [3])
            #expect(nack.poll(now: .ms(4)) == [])
            #expect(nack.nextWakeup() == .ms(5))
            #expect(nack.poll(now: .ms(5)) == [4])
        }

        @Test func retriesEveryOneAndAHalfRTTAtLeast20ms() {
            var nack = NackTracker()
            nack.rtt = .milliseconds(100)
            for seq: UInt16 in [0, 2, 3] { nack.insert(seq, at: .ms(0)) }
            #expect(nack.poll(now: .ms(0)) == [1])
            #expect(nack.poll(now: .ms(149)) == [])
            #expect(nack.poll(now: .ms(150)) == [1])
            nack.rtt = .milliseconds(4)
            #expect(nack.poll(now: .ms(169)) == [])
            #expect(nack.poll(now: .ms(170)) == [1])
            #expect(nack.requested == 3)
        }

        @Test func givesUpAfterTenTries() {
            var nack = NackTracker()
            nack.rtt = .milliseconds(10)
            for seq: UInt16 in [0, 2, 3] { nack.insert(seq, at: .ms(0)) }
            var sent = 0
            for t in stride(from: 0.0, through: 400, by: 1) { sent += nack.poll(now: .ms(t)).count }
            #expect(sent == 10)
            #expect(nack.missing.isEmpty)
            #expect(nack.givenUp == 1)
            #expect(nack.nextWakeup() == nil)
        }

        @Test func aRefusedPacketIsAskedForAgainOnceNotEachTimeALiarAnswers() {
            var nack = NackTracker()
            for seq: UInt16 in 0...9 { nack.insert(seq, at: .ms(0)) }
            // Its frame refused: asked for again, and the answer comes.
            nack.missingAgain([4, 5], at: .ms(10))
            #expect(nack.poll(now: .ms(20)) == [4, 5])
            nack.insert(4, at: .ms(25))
            nack.insert(5, at: .ms(25))
            // The answer was another lie: not asked for again, however often it comes.
            for t in [30.0, 60, 90] { nack.missingAgain([4, 5], at: .ms(t)) }
            #expect(nack.missing.isEmpty && nack.poll(now: .ms(100)) == [] && nack.reasksRefused == 6)
            #expect(nack.requested == ReceiverConstants.sealReasks * 2)
        }

        @Test func countsRecoveredOnlyForRequestedPackets() {
            var nack = NackTracker()
            for seq: UInt16 in [0, 3, 4] { nack.insert(seq, at: .ms(0)) }
            #expect(nack.poll(now: .ms(0)) == [1, 2])
            let answered = nack.insert(1, at: .ms(30))
            #expect(answered)
            #expect(nack.recovered == 1)
            // 6 arrives before 5 is requested: reordering, not recovery.
            nack.insert(6, at: .ms(31))
            let reordered = nack.insert(5, at: .ms(32))
            #expect(!reordered)
            #expect(nack.recovered == 1)
            #expect(nack.missing == [2])
        }

        @Test func forgetsOldGapsAndWhatTheDecoderMovedPast() {
            var nack = NackTracker()
            for seq: UInt16 in [0, 5, 10] { nack.insert(seq, at: .ms(0)) }
            #expect(nack.missing.count == 8)
            nack.removeBefore(7)
            #expect(nack.missing == [7, 8, 9])
            nack.rtt = .seconds(1)  // no retry before the age limit
            _ = nack.poll(now: .ms(0))
            #expect(nack.poll(now: .ms(1000)) == [])
            #expect(nack.missing.isEmpty)
        }

        @Test func wideJumpsAreNotLossAndTheListIsBounded() {
            var nack = NackTracker()
            nack.insert(0, at: .ms(0))
            nack.insert(600, at: .ms(0))  // 599 missing: a jump
            #expect(nack.missing.isEmpty)
            var seq: UInt16 = 600
            for _ in 0..<3 {
                seq &+= 501
                nack.insert(seq, at: .ms(0))
            }
            #expect(nack.missing.count == 1000)
            #expect(nack.missing.first == 1102)  // 601...1100 were given up
            #expect(nack.givenUp == 500)
        }

        @Test func sequenceWrapIsOneGap() {
            var nack = NackTracker()
            for seq: UInt16 in [65534, 65535, 2] { nack.insert(seq, at: .ms(0)) }
            #expect(nack.missing == [0, 1])
        }

        /// Packets before the first one seen, asked for when it did not start a keyframe.
        @Test func packetsBeforeTheFirstCanBeExpectedAcrossTheWrap() {
            var nack = NackTracker()
            nack.expect(4, before: 1, at: .ms(0))  // nothing seen yet: nothing to anchor on
            #expect(nack.missing.isEmpty)
            for seq: UInt16 in [1, 3] { nack.insert(seq, at: .ms(0)) }
            nack.expect(4, before: 1, at: .ms(0))
            #expect(nack.missing == [65533, 65534, 65535, 0, 2])
            nack.expect(6, before: 1, at: .ms(0))  // those already tracked are not added twice
            #expect(nack.missing == [65531, 65532, 65533, 65534, 65535, 0, 2])
            // They are requested at once (reordering cannot explain them; 2 waits out its reorder time).
            let asked = nack.poll(now: .ms(0))
            #expect(asked == [65531, 65532, 65533, 65534, 65535, 0])
            let answered = nack.insert(65535, at: .ms(5))
            #expect(answered)
            #expect(nack.missing == [65531, 65532, 65533, 65534, 0, 2])
        }
    }

    /// The target kept by inserting and removing in a sorted list equals the
    /// 95th percentile taken the slow way: every lateness returned within the
    /// last 3 s (at most 600), sorted.
    @Test func targetIsThePercentileOfTheLastThreeSecondsOfLateness() {
        var buffer = JitterBuffer(clockRate: 90_000)
        let rng = SeededRandom(seed: 42)
        var history: [(at: Instant, late: Int64)] = []
        var last = Instant.ms(0)
        for n in 0..<2_000 {
            // 30 fps with 0–80 ms of jitter (arrival times only move forward) and stalls.
            let at = max(last, Instant.ms(Double(n) * 33.3 + Double(rng.next() % 80) + (n % 500 < 20 ? 900 : 0)))
            last = at
            let late = buffer.recordArrival(timestamp: UInt32(truncatingIfNeeded: n * 3000), at: at)
            history.append((at, late.nanosecondsClamped))
            let window = history.filter { $0.at + ReceiverConstants.latenessWindow > at }.suffix(ReceiverConstants.maxLatenessSamples)
            let sorted = window.map(\.late).sorted()
            let rank = Int((Double(sorted.count - 1) * ReceiverConstants.latenessPercentile).rounded(.up))
            let expected = min(max(0, sorted[min(rank, sorted.count - 1)]), ReceiverConstants.maxTargetDelay.nanosecondsClamped)
            #expect(buffer.targetDelay == .nanoseconds(expected), "arrival \(n)")
            if buffer.targetDelay != .nanoseconds(expected) { return }
        }
    }
}
