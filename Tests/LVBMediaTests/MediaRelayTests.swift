import LVBCore
import LVBTestSupport
import Testing
@testable import LVBMedia

private struct EncoderDroppedFrame: Error {}

/// The RTP sequence number of a packet on the wire.
private func seq(_ bytes: [UInt8]) -> UInt16 { UInt16(bytes[2]) << 8 | UInt16(bytes[3]) }

/// One relay and its children: what it sends each child waits in an outbox
/// until `flush` hands it to the child's `deliver` (or records it in `sent`),
/// so a child's feedback never re-enters the relay mid-packet.
private final class Hop {
    let relay: MediaRelay<Int>
    var deliver: [Int: ([UInt8]) -> Void] = [:]
    private(set) var sent: [Int: [[UInt8]]] = [:]
    private(set) var rtcp: [Int: [[RTCPPacket]]] = [:]
    private var outbox: [(Int, [UInt8])] = []

    init(clock: Clock, maxChildren: Int = .max) {
        relay = MediaRelay(clock: clock, repairBudgetKbps: 1000, maxChildren: maxChildren)
        relay.send = { [unowned self] child, channel, bytes in
            switch channel {
            case .rtp: outbox.append((child, bytes))
            case .rtcp: rtcp[child, default: []].append((try? RTCPPacket.parseCompound(bytes)) ?? [])
            }
        }
    }

    /// Delivers what waits; false when nothing did.
    func flush() -> Bool {
        guard !outbox.isEmpty else { return false }
        while !outbox.isEmpty {
            let (child, bytes) = outbox.removeFirst()
            if let deliver = deliver[child] { deliver(bytes) } else { sent[child, default: []].append(bytes) }
        }
        return true
    }

    /// What `child` was sent since the last call (children without `deliver`).
    func take(_ child: Int) -> [[UInt8]] {
        defer { sent[child] = nil }
        return sent[child] ?? []
    }

    /// Receiver feedback from `child`: an RR, the keyframes-only request when `trickle`, then `extra`.
    func feedback(from child: Int, trickle: Bool = false, _ extra: [RTCPPacket] = []) {
        let ssrc = 0xC000_0000 + UInt32(child)
        var packets: [RTCPPacket] = [.receiverReport(try! RTCPReceiverReport(ssrc: ssrc))]
        if trickle { packets.append(.app(.keyframesOnly(ssrc: ssrc))) }
        relay.receiveRTCP(RTCPPacket.serializeCompound(packets + extra)[...], from: child)
    }
}

/// A host, the library's own path (320×180 VP8 at 30 fps with a keyframe
/// every second — frames 0, 30, 60, … — in 100-byte packets, and a 20 ms Opus
/// packet per frame, published through a `MediaOrigin`), and a relay
/// subscribed to it as peer `relayID`: `hops[0]`. Further relays below it
/// join `hops`, so one `flush` moves everything down the tree.
private final class Tree {
    static let videoSSRC: UInt32 = 0x4057_0001
    static let relayID = 0
    static let relaySSRC: UInt32 = 0x4E1A_0001
    let clock = ManualClock()
    let origin: MediaOrigin<Int>
    var hops: [Hop] = []
    var relay: MediaRelay<Int> { hops[0].relay }
    private(set) var frames: [EncodedMediaFrame] = []
    /// Drops a packet on its way from the host to the relay when it returns true.
    var loseUpstream: ([UInt8]) -> Bool = { _ in false }
    /// Reorders each batch on its way from the host to the relay.
    var reorderUpstream: ([[UInt8]]) -> [[UInt8]] = { $0 }
    private var toRelay: [[UInt8]] = []
    private let source: SyntheticVideo
    private let encoder: VideoStreamEncoder
    private let audio: AudioStreamEncoder
    private var tone: SyntheticAudio

    init() throws {
        origin = MediaOrigin(clock: clock, videoSSRC: Self.videoSSRC, audioSSRC: Self.videoSSRC + 1, maxVideoKbps: 500)
        source = try SyntheticVideo(width: 320, height: 180)
        encoder = try VideoStreamEncoder(width: 320, height: 180, fps: 30, bitrateKbps: 400, gopSeconds: 1,
                                         ssrc: Self.videoSSRC, maxPacketSize: 100, random: SeededRandom(seed: 5))
        audio = try AudioStreamEncoder(ssrc: Self.videoSSRC + 1, random: SeededRandom(seed: 6))
        tone = try SyntheticAudio()
        hops = [Hop(clock: clock)]
        origin.send = { [unowned self] peer, channel, bytes in
            guard peer == Self.relayID else { return }
            switch channel {
            case .rtp: if !loseUpstream(bytes) { toRelay.append(bytes) }
            case .rtcp: relay.receiveUpstreamRTCP((try? RTCPPacket.parseCompound(bytes)) ?? [])
            }
        }
        subscribeRelay()
        _ = origin.takeKeyframeRequest()  // nothing was cached yet: the first frame is a keyframe anyway
    }

    /// The relay's owner keeps its own subscription up, as any viewer does.
    func subscribeRelay() {
        origin.receiveRTCP(RTCPPacket.receiverReport(try! RTCPReceiverReport(ssrc: Self.relaySSRC)).serialized()[...],
                           from: Self.relayID)
    }

    /// Captures and publishes the next frame (and an audio packet) at its time, then flushes.
    @discardableResult
    func publish() throws -> EncodedMediaFrame {
        let n = frames.count
        let mediaTime = Duration.nanoseconds(Int64(n) * 1_000_000_000 / 30)
        clock.advance(to: ManualClock.defaultStart + mediaTime)
        let capture = NTPTime.from(clock.wallTime())
        guard let frame = try encoder.encode(source.frame(number: n), mediaTime: mediaTime, captureTime: capture,
                                             forceKeyframe: n % 30 == 0) else { throw EncoderDroppedFrame() }
        frames.append(frame)
        origin.publishVideo(frame)
        origin.publishAudio(try audio.encode(tone.next20ms(), mediaTime: mediaTime, captureTime: capture))
        if n % 30 == 29 { subscribeRelay() }
        flush()
        return frame
    }

    func publish(_ count: Int) throws { for _ in 0..<count { try publish() } }

    /// Moves everything waiting down the tree until nothing moves.
    func flush() {
        var moved = true
        while moved {
            let batch = reorderUpstream(toRelay)
            toRelay.removeAll()
            for bytes in batch { relay.receiveRTP(bytes[...]) }
            moved = !batch.isEmpty
            for hop in hops where hop.flush() { moved = true }
        }
    }

    /// The relay's owner sends what the relay keeps for upstream.
    func sendUpstream() {
        let feedback = relay.takeUpstreamFeedback(senderSSRC: Self.relaySSRC)
        if !feedback.isEmpty { origin.receiveRTCP(RTCPPacket.serializeCompound(feedback)[...], from: Self.relayID) }
        flush()
    }

    func wire(_ n: Int) -> [[UInt8]] { frames[n].packets.map { $0.serialized() } }

    /// Publishes frames until `until` with `viewer` keeping its subscription
    /// up, then lets its buffer release what is due.
    func play(to viewer: Viewer, until: Int) throws {
        while frames.count < until {
            try publish()
            viewer.stream.tick()
        }
        clock.advance(by: .milliseconds(500))
        viewer.stream.poll()
    }

    /// A second relay, child `id` of the first, subscribed to it (the GOP cache starts it).
    func addLowerRelay(id: Int = 2) -> Hop {
        let lower = Hop(clock: clock)
        hops.append(lower)
        hops[0].deliver[id] = { lower.relay.receiveRTP($0[...]) }
        hops[0].feedback(from: id)
        flush()
        return lower
    }
}

/// A child that decodes: a `StreamReceiver` fed by `hop`, its feedback sent to
/// that relay, and the frame numbers it shows.
private final class Viewer {
    let stream: StreamReceiver
    private(set) var shown: [Int] = []

    init(_ hop: Hop, id: Int, clock: Clock) throws {
        let stream = try StreamReceiver(clock: clock, ssrc: 0xC000_0000 + UInt32(id), maxDatagram: 1167)
        self.stream = stream
        stream.onVideo = { [unowned self] in shown.append(SyntheticVideo.readFrameNumber($0.image) ?? -1) }
        stream.sendFeedback = { [unowned hop] in hop.relay.receiveRTCP($0[...], from: id) }
        hop.deliver[id] = { stream.receiveRTP($0[...]) }
    }
}

/// A VP8 RTP packet with a one-byte descriptor: S when `start`, then a first
/// VP8 byte with P clear when `keyframe`, and some data.
private func vp8(_ sequence: UInt16, ts: UInt32, start: Bool = false, keyframe: Bool = false, ssrc: UInt32 = 7) -> [UInt8] {
    try! RTPPacket(payloadType: MediaConstants.videoPayloadType, sequenceNumber: sequence, timestamp: ts, ssrc: ssrc,
                   payload: ([start ? 0x10 : 0x00, keyframe ? 0x00 : 0x01] + [UInt8](repeating: 0x5A, count: 20))[...]).serialized()
}

private func opus(_ sequence: UInt16, ssrc: UInt32 = 9) -> [UInt8] {
    try! RTPPacket(payloadType: MediaConstants.audioPayloadType, sequenceNumber: sequence, timestamp: 960 * UInt32(sequence),
                   ssrc: ssrc, payload: [0xFC, 1, 2, 3][...]).serialized()
}

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
        let templates = [full.serialized(), vp8(1, ts: 2, start: true, keyframe: true), opus(3)]
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
