import LVBCore
import LVBTestSupport
import Testing
@testable import LVBMedia

/// The media relay, continued: repair and keyframe requests upstream, previews, bad input, children coming and going.
extension MediaRelayTests {
    @Test("a child's NACK is answered from the relay's history; what the relay lost goes upstream once and its retransmission reaches the children")
    func nackRepairHopByHop() throws {
        let tree = try Tree()
        let hop = tree.hops[0]
        try tree.publish(5)
        hop.feedback(from: 1)
        hop.feedback(from: 2)
        tree.flush()
        _ = (hop.take(1), hop.take(2))

        // Child 1 lost a packet of frame 5 on its own link: the relay resends it.
        try tree.publish()
        _ = (hop.take(1), hop.take(2))
        let held = tree.wire(5)[1]
        tree.clock.advance(by: .milliseconds(100))
        hop.feedback(from: 1, [.nack(try RTCPGenericNACK(senderSSRC: 1, mediaSSRC: Tree.videoSSRC, lost: [seq(held)]))])
        tree.flush()
        #expect(hop.take(1) == [held])
        #expect(tree.relay.stats.nacksAnswered == 1 && tree.relay.takeUpstreamNACKs().isEmpty)

        // The relay itself lost a packet of frame 6: both children miss it.
        let lostSeq = seq(tree.wire(5).last!) &+ 2
        tree.loseUpstream = { (try? RTPPacket.parse($0))?.ssrc == Tree.videoSSRC && seq($0) == lostSeq }
        try tree.publish()
        tree.loseUpstream = { _ in false }
        try #require(tree.wire(6).count >= 2)
        let lost = tree.wire(6)[1]
        #expect(seq(lost) == lostSeq)
        #expect(!hop.take(1).contains(lost) && !hop.take(2).contains(lost))
        tree.clock.advance(by: .milliseconds(100))
        let newest = seq(tree.wire(6).last!)
        for child in [1, 2] {
            // Besides the lost one: a packet the relay holds, one not yet sent, one from long ago.
            let nack = try RTCPGenericNACK(senderSSRC: 1, mediaSSRC: Tree.videoSSRC,
                                           lost: [seq(lost), seq(tree.wire(6)[0]), newest &+ 3, newest &- 3000])
            hop.feedback(from: child, [.nack(nack)])
        }
        tree.flush()
        #expect(hop.take(1) == [tree.wire(6)[0]] && hop.take(2) == [tree.wire(6)[0]])
        #expect(tree.relay.stats.nacksPassedUp == 1)
        // The owner sends the upstream NACK; the host's retransmission comes down to both children.
        tree.sendUpstream()
        #expect(tree.origin.fanOut.stats.retransmissions == 1)
        #expect(hop.take(1) == [lost] && hop.take(2) == [lost])
        #expect(tree.relay.takeUpstreamNACKs().isEmpty)
        // Now the relay holds it: a late NACK is answered here.
        hop.feedback(from: 2, [.nack(try RTCPGenericNACK(senderSSRC: 1, mediaSSRC: Tree.videoSSRC, lost: [seq(lost)]))])
        tree.flush()
        #expect(hop.take(2) == [lost] && tree.origin.fanOut.stats.retransmissions == 1)
    }

    @Test("a hole asked for upstream is asked again only after a retry interval, however many children NACK it")
    func upstreamNacksAreAggregated() throws {
        let clock = ManualClock()
        let hop = Hop(clock: clock)
        for child in 1...10 { hop.feedback(from: child) }
        for s in [UInt16(10), 11, 13] { hop.relay.receiveRTP(vp8(s, ts: 0, start: s == 10, keyframe: true)[...]) }
        let nack = RTCPPacket.nack(try RTCPGenericNACK(senderSSRC: 1, mediaSSRC: 7, lost: [12]))
        for child in 1...10 { hop.feedback(from: child, [nack]) }
        #expect(hop.relay.takeUpstreamNACKs() == [12])
        clock.advance(by: .milliseconds(50))
        for child in 1...10 { hop.feedback(from: child, [nack]) }
        #expect(hop.relay.takeUpstreamNACKs().isEmpty)
        clock.advance(by: .milliseconds(100))
        hop.feedback(from: 3, [nack])
        #expect(hop.relay.takeUpstreamNACKs() == [12])
        // Taken but arrived before the owner sent it: not asked for.
        clock.advance(by: .milliseconds(150))
        hop.feedback(from: 3, [nack])
        hop.relay.receiveRTP(vp8(12, ts: 0)[...])
        #expect(hop.relay.takeUpstreamNACKs().isEmpty)
        #expect(hop.relay.stats.nacksPassedUp == 3)
    }

    @Test("ten children sending PLIs at once make one keyframe request upstream; a joiner the GOP cache starts makes none")
    func plisAreAggregated() throws {
        let tree = try Tree()
        let hop = tree.hops[0]
        try tree.publish(5)
        for child in 1...10 { hop.feedback(from: child) }
        tree.flush()
        #expect(!tree.relay.takeKeyframeRequest())
        try tree.publish()
        // (The host made a keyframe for its own first subscriber; it may make another now.)
        tree.clock.advance(by: MediaConstants.keyframeRequestInterval)

        let pli = RTCPPacket.pli(RTCPPictureLossIndication(senderSSRC: 1, mediaSSRC: Tree.videoSSRC))
        for child in 1...10 { hop.feedback(from: child, [pli]) }
        #expect(tree.relay.stats.plisReceived == 10 && tree.relay.stats.plisAggregated == 9)
        tree.sendUpstream()
        #expect(tree.origin.stats.plisReceived == 1 && tree.origin.takeKeyframeRequest())
        #expect(!tree.relay.takeKeyframeRequest())

        // Within the interval: nothing more; after it, one more.
        tree.clock.advance(by: MediaConstants.keyframeRequestInterval / 2)
        for child in 1...10 { hop.feedback(from: child, [pli]) }
        #expect(!tree.relay.takeKeyframeRequest())
        tree.clock.advance(by: MediaConstants.keyframeRequestInterval / 2)
        for child in 1...10 { hop.feedback(from: child, [pli]) }
        #expect(tree.relay.takeKeyframeRequest())
        #expect(tree.relay.stats.keyframeRequests == 2 && tree.relay.stats.plisAggregated == 28)

        // A joiner whose first feedback carries a PLI is started from the cache; a preview's PLI is ignored.
        tree.clock.advance(by: MediaConstants.keyframeRequestInterval)
        hop.feedback(from: 11, [pli])
        hop.feedback(from: 12, trickle: true, [pli])
        #expect(!tree.relay.takeKeyframeRequest())
        #expect(tree.relay.stats.plisIgnored == 1 && tree.relay.fanOut.stats.gopBursts == 11)
    }

    @Test("a full child with nothing cached to start from makes one keyframe request")
    func joinWithNothingCached() {
        let hop = Hop(clock: ManualClock())
        hop.relay.receiveRTP(vp8(1, ts: 0)[...])  // a delta: nothing to start from
        hop.feedback(from: 1)
        hop.feedback(from: 2)
        hop.feedback(from: 3, trickle: true)
        #expect(hop.relay.takeKeyframeRequest() && hop.relay.stats.keyframeRequests == 1)
        let feedback = hop.relay.takeUpstreamFeedback(senderSSRC: 5)
        #expect(feedback.isEmpty)
    }

    @Test("keyframes-only children get every packet of each keyframe and nothing else, even when a keyframe's start comes late")
    func keyframesOnlyChildren() throws {
        let tree = try Tree()
        let hop = tree.hops[0]
        try tree.publish(10)
        hop.feedback(from: 3, trickle: true)
        hop.feedback(from: 4)
        tree.flush()
        #expect(hop.take(3) == tree.wire(0))
        #expect(tree.relay.isKeyframesOnly(3) && !tree.relay.isKeyframesOnly(4))
        _ = hop.take(4)
        // Keyframe 30's second packet overtakes its first on the way to the relay.
        tree.reorderUpstream = { [unowned tree] batch in
            guard tree.frames.count == 31, batch.count > 2 else { return batch }
            return [batch[1], batch[0]] + batch[2...]
        }
        try tree.publish(60)
        let k30 = tree.wire(30)
        #expect(hop.take(3) == [k30[1], k30[0]] + k30[2...] + tree.wire(60))
        #expect(tree.relay.fanOut.stats.trickleKeyframes == 3)
        // The full child got everything, audio too; a joiner's GOP starts at keyframe 60, in sequence order.
        #expect(hop.take(4).count == (10..<70).reduce(0) { $0 + tree.wire($1).count } + 60)
        hop.feedback(from: 5)
        tree.flush()
        #expect(hop.take(5) == (60..<70).flatMap { tree.wire($0) })
    }

    @Test("malformed RTP and RTCP are counted and dropped; nothing reaches the children; every input is accounted for")
    func malformedInput() throws {
        let hop = Hop(clock: ManualClock())
        hop.feedback(from: 1)
        let good = vp8(1, ts: 0, start: true, keyframe: true)
        let bad: [[UInt8]] = [
            [], [0x80], Array(good.prefix(11)),                          // truncated headers
            [0x40] + good.dropFirst(),                                  // RTP version 1
            try RTPPacket(payloadType: 96, sequenceNumber: 2, timestamp: 0, ssrc: 7, payload: [][...]).serialized(),  // no VP8 descriptor
            try RTPPacket(payloadType: 96, sequenceNumber: 3, timestamp: 0, ssrc: 7, payload: [0x90][...]).serialized(),  // X set, no X byte
        ]
        for b in bad { hop.relay.receiveRTP(b[...]) }
        hop.relay.receiveRTP(try RTPPacket(payloadType: 100, sequenceNumber: 4, timestamp: 0, ssrc: 7, payload: [1][...]).serialized()[...])
        hop.relay.receiveRTCP([0x80, 0xC9, 0xFF, 0xFF][...], from: 9)
        hop.relay.receiveRTCP([0x81][...], from: 9)
        _ = hop.flush()
        #expect(hop.take(1).isEmpty)
        #expect(hop.relay.stats.malformedRTP == bad.count && hop.relay.stats.unknownPayloadTypes == 1)
        #expect(hop.relay.stats.malformedRTCP == 2 && hop.relay.childCount == 1)

        // Random datagrams and damaged copies of good ones: never a crash, each counted once.
        let random = SeededRandom(seed: 11)
        let templates = [good, vp8(2, ts: 0), opus(1)]
        let count = 5000
        for i in 0..<count {
            var bytes: [UInt8]
            if i % 2 == 0 {
                bytes = (0..<Int(random.uint32() % 64)).map { _ in UInt8(truncatingIfNeeded: random.uint32()) }
                if !bytes.isEmpty, random.uint32() % 2 == 0 { bytes[0] = 0x80 | (bytes[0] & 0x3F) }
            } else {
                bytes = templates[Int(random.uint32() % 3)]
                for _ in 0...(random.uint32() % 3) {
                    bytes[Int(random.uint32()) % bytes.count] = UInt8(truncatingIfNeeded: random.uint32())
                }
            }
            hop.relay.receiveRTP(bytes[...])
            hop.relay.receiveRTCP(bytes[...], from: 2)
        }
        let s = hop.relay.stats
        let accounted = s.forwardedPackets + s.duplicatesDropped + s.tooOld + s.foreignVideo + s.malformedRTP + s.unknownPayloadTypes
        #expect(accounted == count + bad.count + 1)
        #expect(s.malformedRTP > bad.count && s.forwardedPackets > 0 && s.malformedRTCP > 2)
    }

    @Test("children time out without feedback, can be unsubscribed, and are refused beyond the relay's slots")
    func childrenComeAndGo() throws {
        let clock = ManualClock()
        let hop = Hop(clock: clock, maxChildren: 2)
        hop.feedback(from: 1)
        hop.feedback(from: 2)
        hop.feedback(from: 3)
        #expect(Set(hop.relay.children) == [1, 2] && hop.relay.stats.childrenRefused == 1)
        for _ in 0..<6 {
            clock.advance(by: .seconds(1))
            hop.feedback(from: 1)
            hop.relay.tick()
        }
        #expect(hop.relay.children == [1])
        hop.feedback(from: 3)
        hop.relay.unsubscribe(1)
        #expect(hop.relay.children == [3])
        hop.relay.receiveRTP(vp8(1, ts: 0, start: true, keyframe: true)[...])
        _ = hop.flush()
        #expect(hop.take(1).isEmpty && hop.take(2).isEmpty && hop.take(3).count == 1)
    }

    @Test("the parent's sender reports reach the children, whose reports give the relay their round trip and loss")
    func senderReportsAndChildReports() throws {
        let tree = try Tree()
        let hop = tree.hops[0]
        try tree.publish(3)
        hop.feedback(from: 1)
        tree.clock.advance(by: .seconds(1))
        tree.origin.tick()
        let reports = try #require(hop.rtcp[1]?.last)
        guard case .senderReport(let sr) = reports.first else {
            Issue.record("no sender report forwarded: \(reports)")
            return
        }
        #expect(reports.count == 2 && sr.ssrc == Tree.videoSSRC)
        // The child answers 30 ms later, having held the report 10 ms: 20 ms on the wire.
        tree.clock.advance(by: .milliseconds(30))
        let block = RTCPReportBlock(ssrc: Tree.videoSSRC, fractionLost: 64, cumulativeLost: 0, extendedHighestSequence: 0,
                                    jitter: 0, lastSenderReport: NTPTime.middle32(sr.ntpTimestamp),
                                    delaySinceLastSenderReport: 655)
        hop.relay.receiveRTCP([.receiverReport(try RTCPReceiverReport(ssrc: 1, reportBlocks: [block]))], from: 1)
        let rtt = try #require(hop.relay.roundTrip(to: 1))
        #expect(abs((rtt - .milliseconds(20)).nanosecondsClamped) < 100_000)
        #expect(hop.relay.loss(of: 1) == 0.25)
    }

    @Test("a goodbye frees the child's slot at once: at the relay and at the origin, the next subscriber gets it")
    func goodbyeFreesTheSlot() throws {
        let tree = try Tree()
        let hop = Hop(clock: tree.clock, maxChildren: 1)
        var refused: [Int] = []
        hop.relay.onRefused = { refused.append($0) }
        try tree.publish(3)
        hop.feedback(from: 1)
        hop.feedback(from: 2)
        #expect(hop.relay.children == [1] && refused == [2])
        let bye: [RTCPPacket] = [.receiverReport(try RTCPReceiverReport(ssrc: 0xC000_0001)), .bye(try RTCPBye(ssrcs: [0xC000_0001]))]
        hop.relay.receiveRTCP(RTCPPacket.serializeCompound(bye)[...], from: 1)
        #expect(hop.relay.children.isEmpty)
        hop.feedback(from: 2)
        #expect(hop.relay.children == [2])
        // The origin: a full house of one, the goodbye, the next one in.
        tree.origin.maxFullSubscribers = 1
        #expect(tree.origin.fullSubscriberCount == 1)
        tree.origin.receiveRTCP(bye, from: Tree.relayID)
        #expect(tree.origin.fullSubscriberCount == 0)
        tree.origin.receiveRTCP([.receiverReport(try RTCPReceiverReport(ssrc: 9))], from: 7)
        #expect(tree.origin.fullSubscriberCount == 1 && tree.origin.loss(of: 7) == 0)
    }
}
