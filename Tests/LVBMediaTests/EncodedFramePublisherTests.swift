import LVBCore
import LVBTestSupport
import Testing
@testable import LVBMedia

/// What a studio page's WebCodecs encoders send, made here by libvpx: raw VP8 frames, no RTP.
private final class OutsideCamera {
    let encoder: VP8Encoder
    let pattern: SyntheticVideo
    private var pts: Int64 = 0

    init() throws {
        encoder = try VP8Encoder(width: 160, height: 96, fps: 30, bitrateKbps: 500, keyframeInterval: 60)
        pattern = try SyntheticVideo(width: 160, height: 96, look: .guest)
    }

    func frame(_ n: Int, keyframe: Bool = false) throws -> EncodedFrame {
        defer { pts += 1 }
        return try #require(try encoder.encode(pattern.frame(number: n), pts: pts, forceKeyframe: keyframe).first)
    }
}

@Suite("Frames encoded outside the node (a studio page's camera) in a published stream")
struct EncodedFramePublisherTests {
    @Test("A page's frames follow the node's own encoder in one stream: numbering continues, every picture decodes, NACKs are answered")
    func takesOverTheStream() throws {
        let clock = ManualClock()
        let origin = MediaOrigin<Int>(clock: clock, videoSSRC: 0x11, audioSSRC: 0x12, maxVideoKbps: 500)
        var sent: [[UInt8]] = []
        origin.send = { _, channel, bytes in if channel == .rtp { sent.append(bytes) } }
        origin.subscribe(1)
        let receiver = try VideoReceiver(clock: clock, ssrc: 0x99)
        var decoded: [Int] = []
        func deliver() throws {
            for bytes in sent { receiver.receive(try RTPPacket.parse(bytes)) }
            sent.removeAll()
            for case .frame(let f) in receiver.poll() { decoded.append(SyntheticVideo.readFrameNumber(f.image) ?? -1) }
        }
        let start = clock.now()
        let own = try VideoStreamEncoder(width: 160, height: 96, fps: 30, bitrateKbps: 500, gopSeconds: 2,
                                         ssrc: 0x11, maxPacketSize: 300, random: SeededRandom(seed: 1))
        let ownPattern = try SyntheticVideo(width: 160, height: 96)
        for n in 0..<10 {
            clock.advance(to: start + .nanoseconds(Int64(n) * 1_000_000_000 / 30))
            let frame = try #require(try own.encode(ownPattern.frame(number: n), mediaTime: clock.now() - start,
                                                    captureTime: NTPTime.from(clock.wallTime()), forceKeyframe: false))
            origin.publishVideo(frame)
            try deliver()
        }
        var ownPackets = 0
        origin.beginSource()
        let page = try EncodedFramePublisher(videoSSRC: 0x11, audioSSRC: 0x12, maxPacketSize: 300, clock: clock, random: SeededRandom(seed: 2))
        let camera = try OutsideCamera()
        var pageSequences: [UInt16] = []
        for n in 10..<40 {
            clock.advance(to: start + .nanoseconds(Int64(n) * 1_000_000_000 / 30))
            let raw = try camera.frame(n, keyframe: n == 10)
            let frame = try page.video(raw.data, keyframe: raw.isKeyframe, captureMicros: EncodedFramePublisher.micros(clock.wallTime()))
            let ntp = EncodedFramePublisher.ntp(micros: EncodedFramePublisher.micros(clock.wallTime()))
            #expect(frame.packets.allSatisfy { $0.ssrc == 0x11 && $0.captureTime == ntp })
            ownPackets = origin.stats.videoPackets
            origin.publishVideo(frame)
            pageSequences += sent.map { (try? RTPPacket.parse($0).sequenceNumber) ?? 0 }
            try deliver()
        }
        clock.advance(by: .seconds(1))
        for case .frame(let f) in receiver.poll() { decoded.append(SyntheticVideo.readFrameNumber(f.image) ?? -1) }
        #expect(decoded == Array(0..<40), "the own pattern's frames, then the page's, each once and in order")
        let s = receiver.stats
        #expect(s.lost == 0 && s.nacksSent == 0 && s.keyframeRequests == 0, "\(s)")
        #expect(page.stats.videoFrames == 30 && page.stats.keyframes == 1 && ownPackets > 0)

        // The send history holds the page's packets under the stream's numbers: a NACK is answered.
        let asked = pageSequences[pageSequences.count / 2]
        origin.fanOut.nack([asked], from: 1, now: clock.now())
        #expect(try sent.map { try RTPPacket.parse($0).sequenceNumber } == [asked])
    }

    @Test("Timestamps come from capture times: 90 kHz pictures always later, 960-sample Opus steps (more over a gap); capture time in the extension")
    func timestamps() throws {
        let clock = ManualClock()
        let page = try EncodedFramePublisher(videoSSRC: 1, audioSSRC: 2, maxPacketSize: 1200, clock: clock, random: SeededRandom(seed: 3))
        let camera = try OutsideCamera()
        let t0: UInt64 = 1_700_000_000_000_000
        let key = try camera.frame(0, keyframe: true), next = try camera.frame(1)
        let a = try page.video(key.data, keyframe: true, captureMicros: t0)
        let b = try page.video(next.data, keyframe: false, captureMicros: t0 + 33_333)
        let c = try page.video(try camera.frame(2).data, keyframe: false, captureMicros: t0 + 33_000)  // earlier than b
        let ta = try #require(a.packets.first).timestamp, tb = try #require(b.packets.first).timestamp
        #expect(tb &- ta == 2999)
        #expect(try #require(c.packets.first).timestamp == tb &+ 1)
        #expect(a.packets.first?.captureTime == EncodedFramePublisher.ntp(micros: t0))
        #expect(EncodedFramePublisher.ntp(micros: 1_500_000) == (MediaConstants.ntpUnixOffset + 1) << 32 | 1 << 31)

        let opus: [UInt8] = [0xF8, 1, 2, 3]  // CELT FB 20 ms, one frame
        let p0 = try page.audio(opus, captureMicros: t0)
        let p1 = try page.audio(opus, captureMicros: t0 + 20_400)
        let p2 = try page.audio(opus, captureMicros: t0 + 120_400)  // four packets missing
        #expect(p1.timestamp &- p0.timestamp == 960 && p2.timestamp &- p1.timestamp == 5 * 960)
        #expect(p1.sequenceNumber == p0.sequenceNumber &+ 1 && p2.sequenceNumber == p1.sequenceNumber &+ 1)
        #expect(p0.ssrc == 2 && p0.payloadType == MediaConstants.audioPayloadType && p1.captureTime == EncodedFramePublisher.ntp(micros: t0 + 20_400))
    }

    @Test("A frame that is not what it says is refused with the reason (RFC 6386 §9.1, RFC 6716 §3.1)")
    func refusesMalformedFrames() throws {
        let camera = try OutsideCamera()
        let key = try camera.frame(0, keyframe: true).data, inter = try camera.frame(1).data
        try EncodedFramePublisher.checkVP8(key, keyframe: true)
        try EncodedFramePublisher.checkVP8(inter, keyframe: false)
        #expect(throws: MediaError.malformed("VP8 keyframe not flagged as one")) { try EncodedFramePublisher.checkVP8(key, keyframe: false) }
        #expect(throws: MediaError.malformed("VP8 frame flagged key is an interframe")) { try EncodedFramePublisher.checkVP8(inter, keyframe: true) }
        #expect(throws: MediaError.truncated("VP8 frame (2 bytes, the tag is 3)")) { try EncodedFramePublisher.checkVP8([0, 0], keyframe: true) }
        var badStart = key
        badStart[3] = 0
        #expect(throws: MediaError.malformed("VP8 keyframe without the start code 9d 01 2a")) { try EncodedFramePublisher.checkVP8(badStart, keyframe: true) }
        #expect(throws: MediaError.self) { try EncodedFramePublisher.checkVP8(Array(key.prefix(40)), keyframe: true) }  // first partition cut
        #expect(throws: MediaError.self) { try EncodedFramePublisher.checkVP8([UInt8](repeating: 0, count: 256 * 1024 + 1), keyframe: true) }

        try EncodedFramePublisher.checkOpus([0x08, 0])  // SILK NB 20 ms
        try EncodedFramePublisher.checkOpus([0x01, 0, 0])  // SILK NB 10 ms × 2
        try EncodedFramePublisher.checkOpus([0x03, 0x02, 0])  // code 3: 2 × 10 ms
        #expect(throws: MediaError.malformed("Opus packet of 10.0 ms, not 20")) { try EncodedFramePublisher.checkOpus([0x00, 0]) }
        #expect(throws: MediaError.malformed("Opus packet of 40.0 ms, not 20")) { try EncodedFramePublisher.checkOpus([0x10]) }
        #expect(throws: MediaError.truncated("Opus packet (empty)")) { try EncodedFramePublisher.checkOpus([]) }
        #expect(throws: MediaError.truncated("Opus code 3 packet without its frame count")) { try EncodedFramePublisher.checkOpus([0x03]) }
        #expect(throws: MediaError.self) { try EncodedFramePublisher.checkOpus([0xF8] + [UInt8](repeating: 0, count: 1275)) }
    }

    @Test("The splicer renumbers a new source to follow on; packets of one frame keep one timestamp")
    func splicer() throws {
        var s = RTPSplicer(clockRate: 90_000)
        let t0 = Instant(nanoseconds: 1_000_000_000)
        func packet(_ seq: UInt16, _ ts: UInt32) throws -> RTPPacket {
            try RTPPacket(payloadType: 96, sequenceNumber: seq, timestamp: ts, ssrc: 1, payload: [0][...])
        }
        var p = try packet(100, 5000)
        s.rewrite(&p, now: t0)
        #expect(p.sequenceNumber == 100 && p.timestamp == 5000)  // passes as made until a splice
        s.splice()
        var q1 = try packet(40_000, 7), q2 = try packet(40_001, 7), q3 = try packet(40_002, 3007)
        s.rewrite(&q1, now: t0 + .milliseconds(100))
        s.rewrite(&q2, now: t0 + .milliseconds(100))
        s.rewrite(&q3, now: t0 + .milliseconds(133))
        #expect([q1, q2, q3].map(\.sequenceNumber) == [101, 102, 103])
        #expect([q1, q2, q3].map(\.timestamp) == [14_000, 14_000, 17_000])
    }
}
