import LVBCore
import LVBTestSupport
import Testing
@testable import LVBMedia

private final class CountingRandom: RandomSource {
    var next: UInt8 = 1
    func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        for i in buffer.indices { buffer[i] = next; next &+= 37 }
    }
}

@Suite("Media sender: history, GOP cache, rate control, fan-out")
struct SenderTests {
    @Test("send history returns the packet of a sequence number until it is overwritten")
    func history() {
        var h = SendHistory(capacity: 4)
        for s in UInt16(65534)...65535 { h.store(s, [UInt8(s & 0xFF)]) }
        h.store(0, [0]); h.store(1, [1])
        #expect(h.packet(65535) == [0xFF])
        #expect(h.packet(0) == [0])
        h.store(2, [2])  // replaces 65534
        #expect(h.packet(65534) == nil)
        #expect(h.packet(3) == nil)
    }

    @Test("GOP cache restarts at each keyframe and gives up on an over-long GOP")
    func gopCache() {
        var g = GOPCache(maxBytes: 10)
        g.add([[1, 2]], keyframe: false)
        #expect(!g.isComplete && g.packets.isEmpty)  // nothing before the first keyframe
        g.add([[1, 2], [3]], keyframe: true)
        g.add([[4]], keyframe: false)
        #expect(g.isComplete && g.packets == [[1, 2], [3], [4]] && g.bytes == 4)
        #expect(g.keyframePackets == 2 && Array(g.keyframe) == [[1, 2], [3]])
        g.add([[5, 5, 5, 5, 5, 5, 5]], keyframe: false)
        #expect(!g.isComplete && g.packets.isEmpty && g.keyframe.isEmpty)
        g.add([[6]], keyframe: false)
        #expect(g.packets.isEmpty)
        g.add([[7]], keyframe: true)
        #expect(g.packets == [[7]] && Array(g.keyframe) == [[7]])
    }

    @Test("rate control backs off on loss and probes back up when it clears")
    func rateControl() {
        var r = RateController(maxKbps: 1000)
        var t = Instant(nanoseconds: 0)
        for _ in 0..<15 { t = t + .milliseconds(500); r.report(fractionLost: 0.3, at: t) }
        let low = Int(r.targetKbps)
        #expect(low == MediaConstants.minVideoKbps)  // 0.85^15 × 1000 < 100: clamped
        for _ in 0..<4 { t = t + .milliseconds(500); r.report(fractionLost: 0.05, at: t) }
        #expect(Int(r.targetKbps) == low)  // between 2 % and 10 %: hold
        for _ in 0..<20 { t = t + .milliseconds(500); r.report(fractionLost: 0, at: t) }
        let probed = Int(r.targetKbps)
        #expect(probed > 200 && probed < 1000)  // 1.08^10 ≈ 2.16× in 10 s
        for _ in 0..<100 { t = t + .milliseconds(500); r.report(fractionLost: 0, at: t) }
        #expect(Int(r.targetKbps) == 1000)  // never above the configured rate
    }

    @Test("stream encoder: one RTP timestamp per frame, consecutive sequence numbers, marker on the last, capture time on all")
    func streamEncoder() throws {
        let e = try VideoStreamEncoder(width: 160, height: 96, fps: 30, bitrateKbps: 500, gopSeconds: 2,
                                       ssrc: 7, maxPacketSize: 300, random: CountingRandom())
        let pattern = try SyntheticVideo(width: 160, height: 96)
        var lastSeq: UInt16?
        for n in 0..<3 {
            let frame = try #require(try e.encode(pattern.frame(number: n), mediaTime: .milliseconds(33 * Int64(n)),
                                                  captureTime: 0x1234_5678_0000_0000 + UInt64(n), forceKeyframe: false))
            #expect(frame.isKeyframe == (n == 0))
            #expect(Set(frame.packets.map(\.timestamp)).count == 1)
            #expect(frame.packets.map(\.marker) == Array(repeating: false, count: frame.packets.count - 1) + [true])
            #expect(frame.packets.allSatisfy { $0.captureTime == 0x1234_5678_0000_0000 + UInt64(n) && $0.serialized().count <= 300 })
            for p in frame.packets {
                if let lastSeq { #expect(p.sequenceNumber == lastSeq &+ 1) }
                lastSeq = p.sequenceNumber
            }
        }
        let audio = try AudioStreamEncoder(ssrc: 9, random: CountingRandom())
        var tone = try SyntheticAudio()
        let a0 = try audio.encode(tone.next20ms(), mediaTime: .zero, captureTime: 1)
        let a1 = try audio.encode(tone.next20ms(), mediaTime: .milliseconds(20), captureTime: 2)
        #expect(a1.timestamp &- a0.timestamp == 960 && a1.sequenceNumber == a0.sequenceNumber &+ 1)
        #expect(a0.payloadType == MediaConstants.audioPayloadType)
    }

    @Test("origin: receiver feedback subscribes a viewer, who gets the GOP at once; NACKs are answered within budget; PLI asks for a keyframe")
    func broadcaster() throws {
        let clock = ManualClock()
        let b = MediaOrigin<Int>(clock: clock, videoSSRC: 7, audioSSRC: 9, maxVideoKbps: 1000)
        var sent: [(Int, MediaChannel, [UInt8])] = []
        b.send = { sent.append(($0, $1, $2)) }
        let e = try VideoStreamEncoder(width: 160, height: 96, fps: 30, bitrateKbps: 500, gopSeconds: 2,
                                       ssrc: 7, maxPacketSize: 300, random: CountingRandom())
        let pattern = try SyntheticVideo(width: 160, height: 96)
        var frames: [EncodedMediaFrame] = []
        for n in 0..<5 {
            let f = try #require(try e.encode(pattern.frame(number: n), mediaTime: .milliseconds(33 * Int64(n)), captureTime: 1, forceKeyframe: false))
            frames.append(f)
            b.publishVideo(f)
        }
        #expect(sent.isEmpty)  // nobody asked yet
        let rr = RTCPPacket.receiverReport(try RTCPReceiverReport(ssrc: 100))
        b.receiveRTCP(rr.serialized()[...], from: 1)
        let gopPackets = frames.flatMap(\.packets).map { $0.serialized() }
        #expect(sent.map(\.2) == gopPackets)
        #expect(b.fanOut.stats.gopBursts == 1)
        sent.removeAll()

        // Live frames go to the subscriber.
        let f5 = try #require(try e.encode(pattern.frame(number: 5), mediaTime: .milliseconds(165), captureTime: 1, forceKeyframe: false))
        b.publishVideo(f5)
        #expect(sent.count == f5.packets.count)
        sent.removeAll()

        // A NACK for two held packets and one never sent.
        clock.advance(by: .milliseconds(500))
        let lost: Set<UInt16> = [frames[1].packets[0].sequenceNumber, f5.packets[0].sequenceNumber, f5.packets[0].sequenceNumber &+ 500]
        b.receiveRTCP(RTCPPacket.nack(try RTCPGenericNACK(senderSSRC: 100, mediaSSRC: 7, lost: lost)).serialized()[...], from: 1)
        #expect(Set(sent.map(\.2)) == [frames[1].packets[0].serialized(), f5.packets[0].serialized()])
        #expect(b.fanOut.stats.retransmissions == 2)
        // A NACK from someone who never subscribed is answered too only after
        // subscribing (the room layer admits); a flood is capped by the budget.
        sent.removeAll()
        let all = Set(frames.flatMap(\.packets).map(\.sequenceNumber))
        for _ in 0..<200 {
            b.receiveRTCP(RTCPPacket.nack(try RTCPGenericNACK(senderSSRC: 100, mediaSSRC: 7, lost: all)).serialized()[...], from: 1)
        }
        let bytes = sent.reduce(0) { $0 + $1.2.count }
        #expect(bytes <= Int(MediaConstants.retransmitBudgetFactor * 1000 * 125) + 1200)
        #expect(b.fanOut.stats.retransmitsRefused > 0)

        // PLI → one keyframe request, however many arrive at once.
        #expect(!b.takeKeyframeRequest())
        for _ in 0..<5 { b.receiveRTCP(RTCPPacket.pli(RTCPPictureLossIndication(senderSSRC: 100, mediaSSRC: 7)).serialized()[...], from: 1) }
        #expect(b.takeKeyframeRequest())
        #expect(!b.takeKeyframeRequest())

        // Malformed RTCP is counted, nothing else happens.
        b.receiveRTCP([0x80, 0xC9, 0xFF, 0xFF][...], from: 1)
        #expect(b.stats.malformedRTCP == 1)

        // Silent viewers are dropped; sender reports flow while they listen.
        sent.removeAll()
        clock.advance(by: .seconds(1))
        b.tick()
        #expect(sent.contains { $0.1 == .rtcp })
        clock.advance(by: MediaConstants.subscriberTimeout)
        b.tick()
        #expect(b.subscriberCount == 0)

        // Subscribing again at once brings no second GOP burst (no amplifier);
        // after the interval it does.
        b.receiveRTCP(rr.serialized()[...], from: 1)
        #expect(b.fanOut.stats.gopBursts == 1)
        b.unsubscribe(1)
        clock.advance(by: MediaConstants.gopBurstInterval)
        b.receiveRTCP(rr.serialized()[...], from: 1)
        #expect(b.fanOut.stats.gopBursts == 2)
    }

    @Test("receiver reports with loss lower the video target; clean ones raise it back")
    func reportsDriveTarget() throws {
        let clock = ManualClock()
        let b = MediaOrigin<Int>(clock: clock, videoSSRC: 7, audioSSRC: 9, maxVideoKbps: 1000)
        b.send = { _, _, _ in }
        func report(_ lost: UInt8) throws {
            clock.advance(by: .milliseconds(500))
            let block = RTCPReportBlock(ssrc: 7, fractionLost: lost, cumulativeLost: 0, extendedHighestSequence: 0,
                                        jitter: 0, lastSenderReport: 0, delaySinceLastSenderReport: 0)
            b.receiveRTCP(RTCPPacket.receiverReport(try RTCPReceiverReport(ssrc: 100, reportBlocks: [block])).serialized()[...], from: 1)
        }
        for _ in 0..<6 { try report(64) }  // 25 % loss
        let low = b.targetVideoKbps
        #expect(low < 500)
        for _ in 0..<40 { try report(0) }
        #expect(b.targetVideoKbps > low * 2)
    }
}
