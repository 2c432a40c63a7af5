import LVBCore
import LVBTestSupport
import Testing
@testable import LVBMedia

/// A fan-out of stand-in packets (`[frame, index]`, sequence number frame × 16 + index)
/// that records what each subscriber is sent.
private final class FanOutProbe {
    let fanOut = FanOut<Int>(budgetKbps: 1000)
    private(set) var sent: [Int: [[UInt8]]] = [:]
    let start = Instant(nanoseconds: 1_000_000_000)

    init() { fanOut.send = { [unowned self] peer, _, bytes in sent[peer, default: []].append(bytes) } }

    static func frame(_ n: UInt8, packets: Int) -> [[UInt8]] { (0..<UInt8(packets)).map { [n, $0] } }

    /// Publishes frame `n` (a keyframe of 3 packets or a delta of 2); returns its packets.
    @discardableResult
    func video(_ n: UInt8, keyframe: Bool) -> [[UInt8]] {
        let packets = Self.frame(n, packets: keyframe ? 3 : 2)
        fanOut.sendVideo(packets, sequences: packets.map { UInt16($0[0]) * 16 + UInt16($0[1]) }, keyframe: keyframe)
        return packets
    }

    func take(_ peer: Int) -> [[UInt8]] {
        defer { sent[peer] = nil }
        return sent[peer] ?? []
    }
}

@Suite("Trickle (keyframes-only) subscriptions: fan-out and origin")
struct TrickleSubscriptionTests {
    @Test("fan-out: a keyframes-only subscriber gets the cached keyframe alone, then each keyframe, never deltas or audio")
    func trickleGetsKeyframesOnly() {
        let p = FanOutProbe()
        let k0 = p.video(0, keyframe: true)
        let d1 = p.video(1, keyframe: false), d2 = p.video(2, keyframe: false)

        // It starts from the cached keyframe, without the deltas, without asking for a keyframe.
        #expect(!p.fanOut.subscribe(1, now: p.start, keyframesOnly: true))
        #expect(p.take(1) == k0)
        #expect(p.fanOut.stats.gopBursts == 0 && p.fanOut.stats.trickleKeyframes == 1)
        #expect(p.fanOut.isKeyframesOnly(1) && p.fanOut.keyframesOnlyCount == 1)
        // A full subscriber beside it still gets the whole GOP.
        #expect(!p.fanOut.subscribe(2, now: p.start))
        #expect(p.take(2) == k0 + d1 + d2)
        #expect(!p.fanOut.isKeyframesOnly(2) && p.fanOut.keyframesOnlyCount == 1 && p.fanOut.count == 2)

        let d3 = p.video(3, keyframe: false)
        p.fanOut.sendAudio([0xA0])
        #expect(p.take(1).isEmpty)
        #expect(p.take(2) == d3 + [[0xA0]])
        let k4 = p.video(4, keyframe: true)
        #expect(p.take(1) == k4)
        #expect(p.fanOut.stats.trickleKeyframes == 2)
        // Loss accounting counts what each was sent live.
        #expect(p.fanOut.takeRepairCounts(1).sent == k4.count)
        #expect(p.fanOut.takeRepairCounts(2).sent == d3.count + k4.count)

        // Its NACKs are answered from the same history.
        p.fanOut.nack([4 * 16 + 1], from: 1, now: p.start + .seconds(1))
        #expect(p.take(1) == [k4[1]])
        #expect(p.fanOut.stats.retransmissions == 1)
    }

    @Test("fan-out: with nothing cached, a keyframes-only subscriber waits; a full one asks for a keyframe")
    func trickleNeverAsksForKeyframe() {
        let p = FanOutProbe()
        #expect(!p.fanOut.subscribe(1, now: p.start, keyframesOnly: true))
        #expect(p.fanOut.subscribe(2, now: p.start))
        p.video(0, keyframe: false)  // a delta with no keyframe before it: not cached
        #expect(p.take(1).isEmpty)
        #expect(!p.fanOut.subscribe(3, now: p.start, keyframesOnly: true))
        #expect(p.take(3).isEmpty)
    }

    @Test("fan-out: a viewer that switched away and keeps the room ready gets the cached keyframe once, then keyframes only")
    func downgradeFromFullStartsFromTheCachedKeyframe() {
        let p = FanOutProbe()
        let k0 = p.video(0, keyframe: true), d1 = p.video(1, keyframe: false)
        p.fanOut.subscribe(1, now: p.start)
        #expect(p.take(1) == k0 + d1)
        #expect(!p.fanOut.subscribe(1, now: p.start + .milliseconds(100), keyframesOnly: true))
        #expect(p.take(1) == k0)
        // Again within the interval (back to full and away again): nothing more.
        p.fanOut.subscribe(1, now: p.start + .milliseconds(200))
        _ = p.take(1)
        #expect(!p.fanOut.subscribe(1, now: p.start + .milliseconds(300), keyframesOnly: true))
        #expect(p.take(1).isEmpty)
        p.video(2, keyframe: false)
        #expect(p.take(1).isEmpty)
    }

    @Test("fan-out: upgrading to full brings the GOP burst; downgrading again within the interval brings nothing")
    func upgradeAndDowngrade() {
        let p = FanOutProbe()
        let k0 = p.video(0, keyframe: true), d1 = p.video(1, keyframe: false)
        p.fanOut.subscribe(1, now: p.start, keyframesOnly: true)
        #expect(p.take(1) == k0)
        // Still a preview: saying so again sends nothing.
        #expect(!p.fanOut.subscribe(1, now: p.start + .milliseconds(100), keyframesOnly: true))
        #expect(p.take(1).isEmpty)

        #expect(!p.fanOut.subscribe(1, now: p.start + .milliseconds(200)))
        #expect(p.take(1) == k0 + d1)
        #expect(p.fanOut.stats.gopBursts == 1 && p.fanOut.keyframesOnlyCount == 0)
        let d2 = p.video(2, keyframe: false)
        #expect(p.take(1) == d2)

        #expect(!p.fanOut.subscribe(1, now: p.start + .milliseconds(300), keyframesOnly: true))
        #expect(p.take(1).isEmpty)
        #expect(p.fanOut.isKeyframesOnly(1))
        p.video(3, keyframe: false)
        p.fanOut.sendAudio([0xA0])
        #expect(p.take(1).isEmpty)
        let k4 = p.video(4, keyframe: true)
        #expect(p.take(1) == k4)
    }

    @Test("fan-out: toggling between trickle and full costs no more than the repair budget; leaving and coming back gets nothing")
    func burstLimitHoldsAcrossToggles() {
        let p = FanOutProbe()
        // A GOP of 60 kB: more than twice what the 1000 kbit/s budget refills in 200 ms.
        let big = (0..<60).map { [UInt8(0), UInt8($0)] + [UInt8](repeating: 7, count: 998) }
        p.fanOut.sendVideo(big, sequences: (0..<60).map { UInt16($0) }, keyframe: true)
        p.fanOut.subscribe(1, now: p.start)
        #expect(p.take(1) == big)
        var keyframeAsks = 0
        var t = p.start
        for _ in 0..<40 {
            t = t + .milliseconds(100)
            #expect(!p.fanOut.subscribe(1, now: t, keyframesOnly: true))
            t = t + .milliseconds(100)
            if p.fanOut.subscribe(1, now: t) { keyframeAsks += 1 }
        }
        // 8 s of toggling within the burst interval: each upgrade's burst is
        // paid from the repair budget (125 kB/s, 1 s deep), so no more than
        // NACKs could fetch; the others ask the origin for a keyframe, which
        // its own rate limit bounds as it bounds PLIs.
        let bursts = p.fanOut.stats.gopBursts - 1
        let burstBytes = p.take(1).reduce(0) { $0 + $1.count } - 60_000  // less the one cached keyframe of the first downgrade
        #expect(bursts >= 5 && burstBytes <= 125_000 * 9, "\(bursts) bursts, \(burstBytes) bytes")
        #expect(keyframeAsks == 40 - bursts)
        // Leaving and coming back as a preview: the cached keyframe at most once per interval.
        let peer = 2
        for _ in 0..<20 {
            t = t + .milliseconds(100)
            p.fanOut.subscribe(peer, now: t, keyframesOnly: true)
            p.fanOut.unsubscribe(peer)
        }
        #expect(p.take(peer) == big)
        // (One for each peer: peer 1 got it at its first move to keyframes only.)
        #expect(p.fanOut.stats.trickleKeyframes == 2)
        // A new full subscriber still gets one burst per interval, whatever the budget.
        let third = 3
        for _ in 0..<5 {
            t = t + .milliseconds(100)
            p.fanOut.subscribe(third, now: t)
            p.fanOut.unsubscribe(third)
        }
        #expect(p.take(third) == big)
    }

    // MARK: Origin

    private static let videoSSRC: UInt32 = 7

    /// Receiver feedback from a viewer with SSRC 100: an RR (with a report
    /// block of `lost`/256 loss when given), the keyframes-only request when
    /// `trickle`, then `extra`.
    private static func feedback(lost: UInt8? = nil, trickle: Bool, _ extra: [RTCPPacket] = []) throws -> ArraySlice<UInt8> {
        let blocks = lost.map {
            [RTCPReportBlock(ssrc: videoSSRC, fractionLost: $0, cumulativeLost: 0, extendedHighestSequence: 0,
                             jitter: 0, lastSenderReport: 0, delaySinceLastSenderReport: 0)]
        } ?? []
        var packets: [RTCPPacket] = [.receiverReport(try RTCPReceiverReport(ssrc: 100, reportBlocks: blocks))]
        if trickle { packets.append(.app(.keyframesOnly(ssrc: 100))) }
        return RTCPPacket.serializeCompound(packets + extra)[...]
    }

    private static let pli = RTCPPacket.pli(RTCPPictureLossIndication(senderSSRC: 100, mediaSSRC: videoSSRC))

    @Test("origin: the keyframes-only request subscribes a preview, whose PLIs and lossy reports change nothing; a full viewer's do")
    func originIgnoresPreviewFeedback() throws {
        let clock = ManualClock()
        let origin = MediaOrigin<Int>(clock: clock, videoSSRC: Self.videoSSRC, audioSSRC: 9, maxVideoKbps: 1000)
        origin.send = { _, _, _ in }
        // Nothing cached yet: a preview waits for the next keyframe, a full viewer asks for one.
        origin.receiveRTCP(try Self.feedback(trickle: true), from: 1)
        #expect(origin.trickleCount == 1 && origin.subscriberCount == 1 && origin.fanOut.isKeyframesOnly(1))
        #expect(!origin.takeKeyframeRequest())
        for _ in 0..<6 {
            clock.advance(by: .milliseconds(500))
            origin.receiveRTCP(try Self.feedback(lost: 64, trickle: true, [Self.pli]), from: 1)
        }
        #expect(!origin.takeKeyframeRequest())
        #expect(origin.stats.plisIgnored == 6 && origin.stats.plisReceived == 0)
        #expect(origin.targetVideoKbps == 1000 && origin.subscriberLoss == 0)
        #expect(origin.trickleCount == 1)

        origin.receiveRTCP(try Self.feedback(trickle: false), from: 2)
        #expect(origin.takeKeyframeRequest())
        clock.advance(by: MediaConstants.keyframeRequestInterval)
        origin.receiveRTCP(try Self.feedback(trickle: false, [Self.pli]), from: 2)
        #expect(origin.takeKeyframeRequest())
        #expect(origin.stats.plisReceived == 1)
        for _ in 0..<6 {
            clock.advance(by: .milliseconds(500))
            origin.receiveRTCP(try Self.feedback(lost: 64, trickle: false), from: 2)
        }
        #expect(origin.targetVideoKbps < 500)
        #expect(origin.subscriberLoss == 0.25)
        #expect(origin.trickleCount == 1 && origin.subscriberCount == 2)
    }

    @Test("origin: feedback without the request upgrades a preview, whose rate control starts afresh; with it, a viewer becomes a preview")
    func originUpgradesAndDowngrades() throws {
        let clock = ManualClock()
        let origin = MediaOrigin<Int>(clock: clock, videoSSRC: Self.videoSSRC, audioSSRC: 9, maxVideoKbps: 1000)
        origin.send = { _, _, _ in }
        origin.receiveRTCP(try Self.feedback(trickle: false), from: 1)
        #expect(origin.takeKeyframeRequest())
        for _ in 0..<6 {
            clock.advance(by: .milliseconds(500))
            origin.receiveRTCP(try Self.feedback(lost: 64, trickle: false), from: 1)
        }
        #expect(origin.targetVideoKbps < 500)

        // Now a preview: its reports no longer count, and a PLI is ignored.
        origin.receiveRTCP(try Self.feedback(lost: 64, trickle: true, [Self.pli]), from: 1)
        #expect(origin.trickleCount == 1)
        #expect(origin.targetVideoKbps == 1000 && origin.subscriberLoss == 0)
        clock.advance(by: MediaConstants.keyframeRequestInterval)
        #expect(!origin.takeKeyframeRequest())

        // Back to full with a clean report: its target starts from the top, not from the lossy past.
        clock.advance(by: .milliseconds(500))
        origin.receiveRTCP(try Self.feedback(lost: 0, trickle: false), from: 1)
        #expect(origin.trickleCount == 0)
        #expect(origin.targetVideoKbps == 1000)
        // A NACK alone is feedback too, and also means the whole stream.
        origin.receiveRTCP(try Self.feedback(trickle: true), from: 1)
        let nack = RTCPPacket.nack(try RTCPGenericNACK(senderSSRC: 100, mediaSSRC: Self.videoSSRC, lost: [1]))
        origin.receiveRTCP(RTCPPacket.serializeCompound([nack])[...], from: 1)
        #expect(origin.trickleCount == 0)
        // A subscription without feedback is full.
        origin.subscribe(2)
        #expect(!origin.fanOut.isKeyframesOnly(2) && origin.trickleCount == 0)
    }
}
