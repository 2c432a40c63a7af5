import LVBCore
import LVBTestSupport
import Testing
@testable import LVBMedia

private struct EncoderDroppedFrame: Error {}

/// A host, the library's own path: 320×180 VP8 at 30 fps with a keyframe
/// every second (frames 0, 30, 60, …), 100-byte packets so that even the
/// pattern's small keyframes span several, a 20 ms Opus packet per frame, all published through a `MediaOrigin`.
/// What the origin sends waits in an outbox until `flush` hands it to the
/// peers' `deliver` (so feedback never re-enters a receiver mid-packet).
private final class Host {
    static let videoSSRC: UInt32 = 0x4057_0001
    let clock = ManualClock()
    let origin: MediaOrigin<Int>
    /// Every frame published, by number.
    private(set) var frames: [EncodedMediaFrame] = []
    private(set) var audioPackets: [[UInt8]] = []
    /// Where each peer's RTP goes (RTCP from the origin is not needed here).
    var deliver: [Int: ([UInt8]) -> Void] = [:]
    /// Drops a packet on its way to a peer when it returns true.
    var lose: (Int, [UInt8]) -> Bool = { _, _ in false }
    private var outbox: [(Int, [UInt8])] = []
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
        origin.send = { [unowned self] peer, channel, bytes in
            if channel == .rtp, !lose(peer, bytes) { outbox.append((peer, bytes)) }
        }
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
        let a = try audio.encode(tone.next20ms(), mediaTime: mediaTime, captureTime: capture)
        audioPackets.append(a.serialized())
        origin.publishAudio(a)
        flush()
        return frame
    }

    func flush() {
        while !outbox.isEmpty {
            let (peer, bytes) = outbox.removeFirst()
            deliver[peer]?(bytes)
        }
    }

    func wire(_ n: Int) -> [[UInt8]] { frames[n].packets.map { $0.serialized() } }
}

/// A preview of `host` as `peer`: its feedback goes to the origin (and is
/// recorded, parsed), the origin's RTP to it.
private final class Previewer {
    static let ssrc: UInt32 = 0xB0B0_0001
    let preview: PreviewReceiver
    private(set) var feedback: [[RTCPPacket]] = []
    private(set) var datagrams: [[UInt8]] = []
    var keyframeEvents = 0

    init(_ host: Host, peer: Int, maxDatagram: Int = 1167) {
        preview = PreviewReceiver(clock: host.clock, ssrc: Self.ssrc, maxDatagram: maxDatagram)
        preview.sendFeedback = { [unowned self, weak host] bytes in
            datagrams.append(bytes)
            feedback.append((try? RTCPPacket.parseCompound(bytes)) ?? [])
            host?.origin.receiveRTCP(bytes[...], from: peer)
        }
        preview.onKeyframe = { [unowned self] in keyframeEvents += 1 }
        host.deliver[peer] = { [unowned self] in preview.receiveRTP($0[...]) }
    }

    /// NACKed sequence numbers in the feedback so far, one list per NACK.
    var nacks: [[UInt16]] {
        feedback.flatMap { $0.compactMap { p -> [UInt16]? in
            guard case let .nack(n) = p else { return nil }
            return n.lostSequenceNumbers
        } }
    }
}

private let subscription: [RTCPPacket] = [
    .receiverReport(try! RTCPReceiverReport(ssrc: Previewer.ssrc)), .app(.keyframesOnly(ssrc: Previewer.ssrc)),
]

/// A VP8 RTP packet as a hostile sender may make one: a descriptor of one byte
/// (S as given, keyframe bit clear when `start`) and `size` bytes of data.
private func junk(seq: UInt16, timestamp: UInt32, start: Bool = false, marker: Bool = false, size: Int = 1000) throws -> [UInt8] {
    try RTPPacket(marker: marker, payloadType: MediaConstants.videoPayloadType, sequenceNumber: seq, timestamp: timestamp,
                  ssrc: 0xBAD, payload: ([start ? 0x10 : 0x00] + Array(repeating: 0x5A, count: size))[...]).serialized()
}

/// A switch: a fresh receive pipeline fed the held keyframe (and polled), and the frame numbers it shows.
private final class Switched {
    let stream: StreamReceiver
    private(set) var shown: [Int] = []

    init(_ held: PreviewKeyframe, clock: Clock) throws {
        stream = try StreamReceiver(clock: clock, ssrc: Previewer.ssrc, maxDatagram: 1167, checker: AdmitAll())
        stream.onVideo = { [unowned self] in shown.append(SyntheticVideo.readFrameNumber($0.image) ?? -1) }
        for p in held.packets { stream.receiveRTP(p[...]) }
        stream.poll()
    }
}

@Suite("Preview receiver: keyframes-only subscriptions for a quick room switch")
struct PreviewReceiverTests {
    @Test("Through the origin a preview gets only keyframes, starting from the cached one, and stays subscribed")
    func previewThroughOrigin() throws {
        let host = try Host()
        let viewer = Previewer(host, peer: 1)
        for _ in 0..<10 { try host.publish() }
        viewer.preview.subscribe()
        host.flush()
        #expect(viewer.feedback == [subscription])
        #expect(viewer.preview.latestKeyframe?.packets == host.wire(0))
        #expect(viewer.preview.latestKeyframe?.timestamp == host.frames[0].packets[0].timestamp)
        #expect(viewer.preview.latestKeyframe?.ssrc == Host.videoSSRC)
        // Seven seconds, longer than the subscriber timeout.
        for _ in 10..<220 {
            try host.publish()
            viewer.preview.tick()
            host.origin.tick()
        }
        let keyframes = host.frames.indices.filter { host.frames[$0].isKeyframe }
        #expect(keyframes == Array(stride(from: 0, to: 220, by: 30)))
        #expect(viewer.preview.latestKeyframe?.packets == host.wire(210))
        #expect(viewer.preview.keyframes == keyframes.count && viewer.keyframeEvents == keyframes.count)
        #expect(viewer.preview.bytes == keyframes.reduce(0) { $0 + host.wire($1).reduce(0) { $0 + $1.count } })
        #expect(viewer.preview.ignoredPackets == 0 && viewer.preview.malformed == 0)
        #expect(host.origin.subscriberCount == 1 && host.origin.trickleCount == 1)
        #expect(host.origin.fanOut.stats.trickleKeyframes == keyframes.count)
        // Resubscribed about once a second, always asking for keyframes only.
        #expect((7...8).contains(viewer.feedback.count))
        #expect(viewer.feedback.allSatisfy { $0 == subscription })
    }

    @Test("Fed the whole stream (an origin that ignores the request), it keeps the keyframes and drops deltas and audio at once")
    func previewOfWholeStream() throws {
        let host = try Host()
        let viewer = Previewer(host, peer: 1)
        host.origin.subscribe(1)
        var held: [UInt32?] = []
        for _ in 0..<70 {
            try host.publish()
            viewer.preview.tick()
            held.append(viewer.preview.latestKeyframe?.timestamp)
        }
        let ts = { (n: Int) in host.frames[n].packets[0].timestamp }
        #expect(held == Array(repeating: ts(0), count: 30) + Array(repeating: ts(30), count: 30) + Array(repeating: ts(60), count: 10))
        #expect(viewer.preview.latestKeyframe?.packets == host.wire(60))
        #expect(viewer.preview.keyframes == 3)
        let deltaPackets = host.frames.filter { !$0.isKeyframe }.reduce(0) { $0 + $1.packets.count }
        #expect(viewer.preview.ignoredPackets == deltaPackets + host.audioPackets.count)
        #expect(viewer.nacks.isEmpty)
        #expect(viewer.preview.pendingFrames == 0 && viewer.preview.pendingBytes == 0)
    }

    @Test("A keyframe missing a packet is held back until the NACK's answer fills it",
          arguments: ["start", "middle", "marker"])
    func lostPacketIsNacked(which: String) throws {
        let host = try Host()
        let viewer = Previewer(host, peer: 1)
        viewer.preview.subscribe()
        host.flush()
        var lostSeq: UInt16?
        host.lose = { [unowned host] _, bytes in
            // The first sending of the chosen packet of frame 0, while it is published.
            guard lostSeq == nil, host.frames.count == 1, let p = try? RTPPacket.parse(bytes) else { return false }
            let packets = host.frames[0].packets
            let index = which == "start" ? 0 : which == "middle" ? packets.count / 2 : packets.count - 1
            guard p.sequenceNumber == packets[index].sequenceNumber else { return false }
            lostSeq = p.sequenceNumber
            return true
        }
        try host.publish()
        let seq = try #require(lostSeq)
        #expect(host.frames[0].isKeyframe && host.frames[0].packets.count >= 3)
        #expect(viewer.preview.latestKeyframe == nil)
        // Not at once (the packet may only be late), but after a short wait.
        let before = viewer.feedback.count
        viewer.preview.tick()
        #expect(viewer.feedback.count == before)
        host.clock.advance(by: ReceiverConstants.previewNackWait)
        viewer.preview.tick()
        let nack = RTCPPacket.nack(try RTCPGenericNACK(senderSSRC: Previewer.ssrc, mediaSSRC: Host.videoSSRC, lost: [seq]))
        #expect(viewer.feedback.dropFirst(before) == [subscription + [nack]])
        #expect(viewer.preview.latestKeyframe == nil)
        host.flush()  // the origin's answer
        #expect(viewer.preview.latestKeyframe?.packets == host.wire(0))
        #expect(viewer.preview.keyframes == 1)
        #expect(host.origin.fanOut.stats.retransmissions == 1)
        // The NACK came with the request: still a preview.
        #expect(host.origin.trickleCount == 1)
    }

    @Test("A keyframe that cannot be repaired is NACKed a few times only, and the next one replaces it")
    func unrepairableKeyframeStopsNacking() throws {
        let host = try Host()
        let viewer = Previewer(host, peer: 1)
        viewer.preview.subscribe()
        host.flush()
        var lostSeq: UInt16?
        host.lose = { [unowned host] _, bytes in
            // Frame 0's second packet, every time it is sent.
            guard let p = try? RTPPacket.parse(bytes), p.sequenceNumber == host.frames[0].packets[1].sequenceNumber else { return false }
            lostSeq = p.sequenceNumber
            return true
        }
        for _ in 0..<45 {
            try host.publish()
            viewer.preview.tick()
        }
        let seq = try #require(lostSeq)
        #expect(viewer.nacks == Array(repeating: [seq], count: ReceiverConstants.previewNackRounds))
        #expect(host.origin.fanOut.stats.retransmissions == ReceiverConstants.previewNackRounds)
        #expect(viewer.preview.latestKeyframe?.packets == host.wire(30))
        #expect(viewer.preview.pendingFrames == 0 && viewer.preview.pendingBytes == 0)
    }

    @Test("Packets out of order make the same keyframe, once the last one is in; duplicates after it are ignored")
    func reorderedPackets() throws {
        let host = try Host()
        try host.publish()
        let key = host.wire(0)
        #expect(key.count >= 4)
        let preview = PreviewReceiver(clock: host.clock, ssrc: Previewer.ssrc, maxDatagram: 1167)
        var datagrams = 0
        preview.sendFeedback = { _ in datagrams += 1 }
        preview.subscribe()
        // The marker packet first, the start packet in the middle, the rest backwards.
        var order = [key.count - 1] + (1..<key.count - 1).reversed()
        order.insert(0, at: order.count / 2)
        for i in order {
            #expect(preview.latestKeyframe == nil)
            preview.receiveRTP(key[i][...])
            host.clock.advance(by: .milliseconds(2))
            preview.tick()
        }
        #expect(preview.latestKeyframe?.packets == key)
        #expect(preview.latestKeyframe?.bytes == key.reduce(0) { $0 + $1.count })
        #expect(datagrams == 1)  // the subscription; no NACK
        for p in key { preview.receiveRTP(p[...]) }
        #expect(preview.keyframes == 1 && preview.ignoredPackets == key.count)
    }

    @Test("A hostile sender cannot make it hold more than its caps, nor make it send oversized feedback")
    func hostileSenderIsBounded() throws {
        let clock = ManualClock()
        let preview = PreviewReceiver(clock: clock, ssrc: Previewer.ssrc, maxDatagram: 1167)
        var datagrams: [[UInt8]] = []
        preview.sendFeedback = { datagrams.append($0) }
        preview.subscribe()
        var most = (frames: 0, bytes: 0)
        func feed(_ bytes: [UInt8]) {
            preview.receiveRTP(bytes[...])
            most = (max(most.frames, preview.pendingFrames), max(most.bytes, preview.pendingBytes))
        }
        // A new frame with every packet, none ever complete.
        for i in 0..<2000 {
            feed(try junk(seq: UInt16(i), timestamp: UInt32(i) * 3000))
            if i % 50 == 0 {
                clock.advance(by: .milliseconds(30))
                preview.tick()
            }
        }
        #expect(most.frames == ReceiverConstants.previewMaxPendingFrames)
        // One frame of more packets than a frame may have: dropped (with the
        // oldest frame it pushed out), and its later packets ignored.
        let packetSize = try junk(seq: 0, timestamp: 0).count
        for i in 0..<600 { feed(try junk(seq: 10_000 + UInt16(i), timestamp: 1_000_000)) }
        #expect(preview.pendingFrames == ReceiverConstants.previewMaxPendingFrames - 1)
        #expect(preview.pendingBytes == (ReceiverConstants.previewMaxPendingFrames - 1) * packetSize)
        let ignored = preview.ignoredPackets
        feed(try junk(seq: 10_600, timestamp: 1_000_000))
        #expect(preview.ignoredPackets == ignored + 1 && preview.pendingFrames == ReceiverConstants.previewMaxPendingFrames - 1)
        // A start and a marker packet claiming a longer frame still: dropped as soon as both are in.
        feed(try junk(seq: 20_000, timestamp: 2_000_000, start: true))
        #expect(preview.pendingFrames == ReceiverConstants.previewMaxPendingFrames)
        feed(try junk(seq: 21_000, timestamp: 2_000_000, marker: true))
        #expect(preview.pendingFrames == ReceiverConstants.previewMaxPendingFrames - 1)
        // Frames of megabytes.
        for t in 0..<5 {
            for i in 0..<100 { feed(try junk(seq: UInt16(30_000 + 100 * t + i), timestamp: 3_000_000 + UInt32(t) * 3000, size: 60_000)) }
        }
        #expect(most.bytes <= ReceiverConstants.previewMaxPendingBytes)
        #expect(most.bytes > ReceiverConstants.previewMaxPendingBytes - 60_100)  // the cap is what held it
        #expect(most.frames == ReceiverConstants.previewMaxPendingFrames)
        for _ in 0..<20 {
            clock.advance(by: .milliseconds(100))
            preview.tick()
        }
        #expect(preview.latestKeyframe == nil && preview.keyframes == 0)
        // Its feedback fits a datagram, and every datagram asks for keyframes only.
        #expect(datagrams.count > 20)
        #expect(datagrams.allSatisfy { $0.count <= 1167 })
        #expect(datagrams.allSatisfy { (try? RTCPPacket.parseCompound($0))?.prefix(2).elementsEqual(subscription) == true })
        // And a real keyframe still gets through.
        let host = try Host()
        try host.publish()
        for p in host.wire(0) { preview.receiveRTP(p[...]) }
        #expect(preview.latestKeyframe?.packets == host.wire(0))
    }

    @Test("Switching: the held keyframe replayed into a fresh StreamReceiver is a picture on the next poll; the upgrade's burst and the live stream decode after it")
    func switchThroughOrigin() throws {
        let host = try Host()
        let viewer = Previewer(host, peer: 1)
        viewer.preview.subscribe()
        host.flush()
        for _ in 0..<45 {
            try host.publish()
            viewer.preview.tick()
            host.origin.tick()
        }
        let held = try #require(viewer.preview.latestKeyframe)
        #expect(held.packets == host.wire(30))

        let switched = try Switched(held, clock: host.clock)
        let stream = switched.stream
        #expect(switched.shown == [30])

        // Its feedback, without the request, upgrades the subscription: the GOP since that keyframe comes at once.
        stream.sendFeedback = { [unowned host] in host.origin.receiveRTCP($0[...], from: 1) }
        host.deliver[1] = { stream.receiveRTP($0[...]) }
        stream.subscribe()
        host.flush()
        stream.poll()
        #expect(host.origin.trickleCount == 0 && host.origin.fanOut.stats.gopBursts == 1)
        #expect(switched.shown == Array(30..<45))
        for _ in 45..<90 {
            try host.publish()
            stream.tick()
            host.origin.tick()
        }
        host.clock.advance(by: .milliseconds(500))
        stream.poll()
        #expect(switched.shown == Array(30..<90))
        let s = stream.video.stats
        #expect(s.decodeErrors == 0 && s.keyframeRequests == 0)
    }

    @Test("Switching right after a keyframe: the live deltas that follow it decode from the replayed keyframe")
    func switchThenLiveDeltas() throws {
        let host = try Host()
        host.origin.subscribe(1)
        let preview = PreviewReceiver(clock: host.clock, ssrc: Previewer.ssrc, maxDatagram: 1167)
        host.deliver[1] = { preview.receiveRTP($0[...]) }
        for _ in 0...30 { try host.publish() }
        let held = try #require(preview.latestKeyframe)
        #expect(held.packets == host.wire(30))

        let switched = try Switched(held, clock: host.clock)
        let stream = switched.stream
        #expect(switched.shown == [30])
        host.deliver[1] = { stream.receiveRTP($0[...]) }
        for _ in 31..<60 {
            try host.publish()
            stream.tick()
        }
        host.clock.advance(by: .milliseconds(500))
        stream.poll()
        #expect(switched.shown == Array(30..<60))
        #expect(stream.video.stats.decodeErrors == 0)
    }
}
