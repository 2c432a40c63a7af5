import LVBCore
import LVBTestSupport
import Testing
@testable import LVBMedia

@Suite("Media relay: viewers forward the stream to their children")
struct MediaRelayTests {
    @Test("forwards each packet once, in the order it arrives: duplicates are dropped, a retransmission that fills a hole passes")
    func forwardOrderAndDedupe() {
        let hop = Hop(clock: ManualClock())
        hop.feedback(from: 1)
        let arrivals = [vp8(10, ts: 0, start: true, keyframe: true), vp8(11, ts: 0), vp8(13, ts: 3000, start: true),
                        vp8(12, ts: 0), vp8(11, ts: 0), opus(10), vp8(14, ts: 3000), vp8(13, ts: 3000, start: true),
                        opus(10), vp8(16, ts: 6000, start: true), vp8(15, ts: 3000), vp8(15, ts: 3000)]
        for p in arrivals { hop.relay.receiveRTP(p[...]) }
        _ = hop.flush()
        // Audio 10 and video 10 are different streams; video 15 fills a hole late and still passes.
        #expect(hop.take(1) == [arrivals[0], arrivals[1], arrivals[2], arrivals[3], arrivals[5], arrivals[6],
                                arrivals[9], arrivals[10]])
        #expect(hop.relay.stats.forwardedPackets == 8 && hop.relay.stats.duplicatesDropped == 4)
        #expect(hop.relay.stats.forwardedBytes == arrivals[0].count * 7 + arrivals[5].count)

        // Sequence numbers wrap; a packet too far behind the newest is dropped, not forwarded again.
        for s in [UInt16](65_530...65_535) + [0, 1, 65_534] { hop.relay.receiveRTP(vp8(s, ts: 9000)[...]) }
        _ = hop.flush()
        #expect(hop.take(1).map(seq) == [UInt16](65_530...65_535) + [0, 1])
        #expect(hop.relay.stats.duplicatesDropped == 5)
        hop.relay.receiveRTP(vp8(2_100, ts: 9000)[...])
        hop.relay.receiveRTP(vp8(16, ts: 6000)[...])
        _ = hop.flush()
        #expect(hop.take(1).map(seq) == [2_100])
        #expect(hop.relay.stats.tooOld == 1)
    }

    @Test("the relay's in-place RTP header reader accepts and rejects what RTPPacket.parse does, with the same fields")
    func headerReaderAgreesWithParser() throws {
        var full = try RTPPacket(marker: true, payloadType: 96, sequenceNumber: 0xABCD, timestamp: 0x0102_0304, ssrc: 0x0506_0708,
                                 csrcs: [1, 2], payload: [0x90, 0x80, 0x81, 0x02, 0x00, 7, 7, 7][...], paddingLength: 4)
        full.setCaptureTime(0x1122_3344_5566_7788)
        try full.setExtension(id: 3, [9])
        // And one in two-byte form, as a seal is sent.
        var sealed = full
        try sealed.setExtension(id: 17, [UInt8](repeating: 0x5A, count: 20))
        let templates = [full.serialized(), sealed.serialized(), vp8(1, ts: 2, start: true, keyframe: true), opus(3)]
        let random = SeededRandom(seed: 12)
        var accepted = 0, rejected = 0
        for i in 0..<20_000 {
            var bytes = templates[i % templates.count]
            for _ in 0..<(i % 4) {
                bytes[Int(random.uint32()) % bytes.count] = UInt8(truncatingIfNeeded: random.uint32())
            }
            if i % 7 == 0 { bytes = Array(bytes.prefix(Int(random.uint32()) % bytes.count)) }
            let packet = try? RTPPacket.parse(bytes)
            let header = try? RTPHeader(parsing: bytes[...])
            #expect(header == packet.map(RTPHeader.init), "\(bytes)")
            if header == nil { rejected += 1 } else { accepted += 1 }
        }
        #expect(accepted > 1000 && rejected > 1000)
    }

    @Test("duplicate filter: a window per SSRC across the wrap, a bounded number of SSRCs")
    func duplicateFilter() {
        var f = DuplicateFilter(window: 128, maxSSRCs: 2)
        #expect(f.check(ssrc: 1, sequence: 65_535) == .new)
        #expect(f.check(ssrc: 1, sequence: 2) == .new)
        #expect(f.isMissing(ssrc: 1, sequence: 0) && f.isMissing(ssrc: 1, sequence: 1))
        #expect(!f.isMissing(ssrc: 1, sequence: 3) && !f.isMissing(ssrc: 1, sequence: 65_535))
        #expect(f.check(ssrc: 1, sequence: 0) == .new && f.check(ssrc: 1, sequence: 0) == .duplicate)
        #expect(f.check(ssrc: 1, sequence: 65_535) == .duplicate)
        #expect(f.check(ssrc: 1, sequence: 200) == .new)
        #expect(f.check(ssrc: 1, sequence: 72) == .tooOld && !f.isMissing(ssrc: 1, sequence: 72))
        #expect(f.check(ssrc: 1, sequence: 73) == .new)
        // A third SSRC pushes out the one heard from longest ago.
        #expect(f.check(ssrc: 2, sequence: 5) == .new)
        #expect(f.check(ssrc: 1, sequence: 201) == .new)
        #expect(f.check(ssrc: 3, sequence: 5) == .new)
        #expect(f.check(ssrc: 1, sequence: 200) == .duplicate)
        #expect(f.check(ssrc: 2, sequence: 5) == .new)
    }

    @Test("GOP cache filled packet by packet: sequence order from the keyframe's start, which may come late")
    func gopCacheInsert() {
        var g = GOPCache(maxBytes: 1000, maxPackets: 6)
        g.insert([1], sequence: 1, timestamp: 0, startsKeyframe: false)
        #expect(!g.isComplete && g.packets.isEmpty)  // nothing before the first keyframe
        // Keyframe 10–12 (timestamp 100), delta 13–14 (timestamp 200); 11 and 13 arrive before the start.
        g.insert([11], sequence: 11, timestamp: 100, startsKeyframe: false)
        #expect(g.packets.isEmpty)
        #expect(g.insert([10], sequence: 10, timestamp: 100, startsKeyframe: true).isEmpty)
        g.insert([13], sequence: 13, timestamp: 200, startsKeyframe: false)
        g.insert([12], sequence: 12, timestamp: 100, startsKeyframe: false)
        g.insert([14], sequence: 14, timestamp: 200, startsKeyframe: false)
        g.insert([12], sequence: 12, timestamp: 100, startsKeyframe: false)
        g.insert([9], sequence: 9, timestamp: 50, startsKeyframe: false)
        #expect(g.isComplete && g.packets == [[10], [12], [13], [14]] && g.keyframePackets == 2)

        // The next keyframe's start repaired late: the packets after it stay, its own go back to the caller.
        g.insert([21], sequence: 21, timestamp: 300, startsKeyframe: false)
        g.insert([22], sequence: 22, timestamp: 400, startsKeyframe: false)
        #expect(g.insert([20], sequence: 20, timestamp: 300, startsKeyframe: true) == [[21]])
        #expect(g.packets == [[20], [21], [22]] && Array(g.keyframe) == [[20], [21]] && g.bytes == 3)
        // An older keyframe's start does not restart it.
        g.insert([10], sequence: 10, timestamp: 100, startsKeyframe: true)
        #expect(g.packets == [[20], [21], [22]])

        // Over `maxPackets`: given up until a newer keyframe; a late copy of an older start does not count.
        for s in UInt16(23)...26 { g.insert([UInt8(s)], sequence: s, timestamp: 400, startsKeyframe: false) }
        #expect(!g.isComplete && g.packets.isEmpty)
        g.insert([20], sequence: 20, timestamp: 300, startsKeyframe: true)
        #expect(!g.isComplete)
        g.insert([30], sequence: 30, timestamp: 500, startsKeyframe: true)
        #expect(g.isComplete && g.packets == [[30]])
        // Whole frames (the origin's way) after packets: the cache starts afresh.
        g.add([[1], [2]], keyframe: true)
        #expect(g.packets == [[1], [2]] && g.keyframePackets == 2)
    }

    @Test("a child joining mid-GOP, two relays deep, decodes its first frame at once from the relay's GOP cache, with no keyframe asked of the host")
    func midGOPJoinDeepInTheTree() throws {
        let tree = try Tree()
        try tree.publish(10)
        // A second relay joins the first mid-GOP (its GOP cache fills from the burst) ...
        let lower = tree.addLowerRelay()
        try tree.publish(10)
        // ... and a viewer joins the second one, mid-GOP too.
        let viewer = try Viewer(lower, id: 1, clock: tree.clock)
        viewer.stream.subscribe()
        tree.flush()
        viewer.stream.poll()
        #expect(viewer.shown == Array(0..<20))
        #expect(tree.relay.fanOut.stats.gopBursts == 1 && lower.relay.fanOut.stats.gopBursts == 1)
        #expect(!lower.relay.takeKeyframeRequest() && !tree.relay.takeKeyframeRequest())
        #expect(!tree.origin.takeKeyframeRequest() && tree.origin.stats.plisReceived == 0)

        // The live stream follows, through both hops, across the next keyframe.
        try tree.play(to: viewer, until: 70)
        #expect(viewer.shown == Array(0..<70))
        let s = viewer.stream.video.stats
        #expect(s.decodeErrors == 0 && s.keyframeRequests == 0 && s.nacksSent == 0)
        #expect(!tree.origin.takeKeyframeRequest())
        // The viewer's reports stopped at its relay.
        #expect(lower.relay.stats.receiverReports > 0 && tree.relay.stats.receiverReports == 1)
    }

    @Test("a viewer whose relay dies resumes under another where it stopped: the new relay sends what it missed, across a keyframe; nothing is skipped, no keyframe asked for")
    func orphanResumesWhereItStopped() throws {
        let tree = try Tree()
        try tree.publish(10)
        // A second relay below the first, and a viewer below that one.
        let lower = tree.addLowerRelay()
        let viewer = try Viewer(lower, id: 1, clock: tree.clock)
        viewer.stream.subscribe()
        try tree.publish(10)
        viewer.stream.poll()
        #expect(viewer.shown == Array(0..<20))

        // The lower relay dies. Frames 20–44 go on without the viewer (a keyframe at 30).
        tree.hops.removeLast()
        tree.hops[0].deliver[2] = nil
        for _ in 20..<45 {
            try tree.publish()
            viewer.stream.tick()
        }
        #expect(viewer.shown == Array(0..<20))

        // It subscribes to the upper relay, saying where it stopped.
        viewer.stream.sendFeedback = { [unowned tree] in tree.relay.receiveRTCP($0[...], from: 1) }
        tree.hops[0].deliver[1] = { [unowned viewer] in viewer.stream.receiveRTP($0[...]) }
        let bursts = tree.relay.fanOut.stats.gopBursts
        viewer.stream.subscribe()
        tree.flush()
        viewer.stream.poll()
        #expect(viewer.shown == Array(0..<45))
        #expect(tree.relay.fanOut.stats.resumeBursts == 1 && tree.relay.fanOut.stats.gopBursts == bursts)
        try tree.play(to: viewer, until: 70)
        #expect(viewer.shown == Array(0..<70))
        let s = viewer.stream.video.stats
        #expect(s.skippedFrames == 0 && s.decodeErrors == 0)
        #expect(!tree.relay.takeKeyframeRequest() && !tree.origin.takeKeyframeRequest())
    }

}
