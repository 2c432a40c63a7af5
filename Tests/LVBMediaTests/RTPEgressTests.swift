import LVBCore
import LVBTestSupport
import Testing
@testable import LVBMedia

/// `--egress` without a socket: what goes to the server, what its feedback does.
@Suite struct RTPEgressTests {
    static let server = PeerAddress(host: .v4(0x0A4D_0001), port: 5004)

    final class Harness {
        let clock = ManualClock()
        let egress: RTPEgress
        var sent: [(to: PeerAddress, bytes: [UInt8])] = []
        var refuse = false

        init() {
            egress = RTPEgress(target: EgressTarget(video: RTPEgressTests.server), clock: clock)
            egress.send = { [unowned self] to, bytes in
                if refuse { return false }
                sent.append((to, bytes))
                return true
            }
        }

        func feed(_ bytes: [UInt8]) { egress.forward(try! RTPPacket.parse(bytes)) }

        /// RTP sent to `port` since the last call, parsed.
        func take(_ port: UInt16) -> [RTPPacket] {
            let out = sent.filter { $0.to.port == port }.compactMap { try? RTPPacket.parse($0.bytes) }
            sent.removeAll { $0.to.port == port }
            return out
        }

        func reports(_ port: UInt16) -> [RTCPSenderReport] {
            let out = sent.filter { $0.to.port == port }.flatMap { (try? RTCPPacket.parseCompound($0.bytes)) ?? [] }
            sent.removeAll { $0.to.port == port }
            return out.compactMap { if case .senderReport(let sr) = $0 { sr } else { nil } }
        }

        func feedback(_ packets: [RTCPPacket], from: PeerAddress = PeerAddress(host: .v4(0x0A4D_0001), port: 5005)) {
            egress.receiveRTCP(RTCPPacket.serializeCompound(packets)[...], from: from)
        }
    }

    @Test func oneStreamGoesOnAcrossAChangeOfSourceWithNothingBeforeItsKeyframe() {
        let h = Harness()
        // The stream starts mid-GOP: held until the keyframe, which is asked for.
        h.feed(vp8(99, ts: 0))
        #expect(h.take(5004).isEmpty && h.egress.stats.heldForKeyframe == 1)
        #expect(h.egress.takeKeyframeRequest())
        h.feed(vp8(100, ts: 3000, start: true, keyframe: true))
        h.feed(vp8(101, ts: 3000))
        h.feed(vp8(101, ts: 3000))  // a repair's copy
        h.clock.advance(by: .milliseconds(33))
        h.feed(vp8(103, ts: 6000, start: true))
        h.feed(vp8(102, ts: 3000))  // late, fills the hole
        var out = h.take(5004)
        #expect(out.map(\.sequenceNumber) == [100, 101, 103, 102])
        #expect(out.allSatisfy { $0.ssrc == EgressTarget.defaultVideoSSRC && $0.payloadType == EgressTarget.defaultVideoPayloadType })
        #expect(h.egress.stats.duplicates == 1 && h.egress.stats.videoPackets == 4)

        // The host's stream changes source (link-mic): another SSRC, its own numbering.
        h.clock.advance(by: .milliseconds(100))
        h.feed(vp8(40_000, ts: 777_000, start: true, ssrc: 8))
        #expect(h.take(5004).isEmpty)
        h.feed(vp8(40_001, ts: 780_000, start: true, keyframe: true, ssrc: 8))
        h.feed(vp8(40_002, ts: 780_000, ssrc: 8))
        h.feed(vp8(102, ts: 3000))  // the old source, too late: it was seen
        out = h.take(5004)
        #expect(out.map(\.sequenceNumber) == [104, 105])
        // 100 ms on from the newest picture sent (RTP time 6000) at 90 kHz.
        #expect(out.map(\.timestamp) == [6000 + 9000, 6000 + 9000])
        #expect(h.egress.stats.sourceChanges == 1 && h.egress.stats.heldForKeyframe == 2)

        // The same SSRC numbering from elsewhere (a page camera) is a change too.
        h.clock.advance(by: .milliseconds(40))
        h.feed(vp8(9, ts: 50, start: true, keyframe: true, ssrc: 8))
        #expect(h.take(5004).map(\.sequenceNumber) == [106])
        #expect(h.egress.stats.sourceChanges == 2)
    }

    @Test func audioIsRenumberedOntoItsOwnSSRCAndPayloadType() {
        let h = Harness()
        h.feed(opus(10))
        h.feed(opus(11))
        h.feed(opus(11))
        h.clock.advance(by: .milliseconds(500))
        h.feed(opus(500, ssrc: 44))
        let out = h.take(5002)
        #expect(out.map(\.sequenceNumber) == [10, 11, 12])
        #expect(out.map(\.timestamp) == [9600, 10560, 10560 + 24_000])
        #expect(out.allSatisfy { $0.ssrc == EgressTarget.defaultAudioSSRC && $0.payloadType == EgressTarget.defaultAudioPayloadType })
    }

    @Test func keyframeRequestsFromTheServerGoUpstreamAtMostOnceASecond() {
        let h = Harness()
        h.feed(vp8(1, ts: 0, start: true, keyframe: true))
        let pli = RTCPPacket.pli(RTCPPictureLossIndication(senderSSRC: 1, mediaSSRC: 0xABCD))
        h.feedback([pli])
        #expect(h.egress.takeKeyframeRequest())
        #expect(!h.egress.takeKeyframeRequest())
        h.clock.advance(by: .milliseconds(300))
        h.feedback([pli])
        h.feedback([.fir(RTCPFullIntraRequest(senderSSRC: 1, entries: [.init(ssrc: EgressTarget.defaultVideoSSRC, sequence: 1)]))])
        #expect(!h.egress.takeKeyframeRequest())
        h.clock.advance(by: .milliseconds(700))
        h.feedback([.fir(RTCPFullIntraRequest(senderSSRC: 1, entries: [.init(ssrc: EgressTarget.defaultVideoSSRC, sequence: 2)]))])
        #expect(h.egress.takeKeyframeRequest())
        let s = h.egress.stats
        #expect(s.plis == 2 && s.firs == 2 && s.keyframeRequests == 2 && s.keyframeRequestsAggregated == 2)

        // Only the server's address counts; a broken datagram is counted and dropped.
        h.clock.advance(by: .seconds(2))
        h.feedback([pli], from: PeerAddress(host: .v4(0x0A4D_0002), port: 5005))
        h.egress.receiveRTCP([0x81, 0xCE, 0x00, 0x09, 1, 2][...], from: Self.server)
        #expect(!h.egress.takeKeyframeRequest())
        #expect(h.egress.stats.strangerRTCP == 1 && h.egress.stats.malformedRTCP == 1)
    }

    @Test func aNACKResendsTheSameBytesWithinABudget() throws {
        let h = Harness()
        h.feed(vp8(1, ts: 0, start: true, keyframe: true))
        for s in UInt16(2)...UInt16(40) { h.feed(vp8(s, ts: 0)) }
        let first = h.sent.filter { $0.to.port == 5004 }.map(\.bytes)
        _ = h.take(5004)
        h.feedback([.nack(try RTCPGenericNACK(senderSSRC: 1, mediaSSRC: EgressTarget.defaultVideoSSRC, lost: [3, 4]))])
        #expect(h.sent.filter { $0.to.port == 5004 }.map(\.bytes) == [first[2], first[3]])
        _ = h.take(5004)
        // 40 packets forwarded earn 10 resends: a flood of NACKs gets no more than that.
        for _ in 0..<20 {
            h.feedback([.nack(try RTCPGenericNACK(senderSSRC: 1, mediaSSRC: EgressTarget.defaultVideoSSRC, lost: Set(UInt16(5)...UInt16(20))))])
        }
        #expect(h.take(5004).count == 8)
        #expect(h.egress.stats.retransmitted == 10 && h.egress.stats.notRetransmitted == 20 * 16 - 8)
    }

    @Test func senderReportsEverySecondMapTheWallClockToEachStreamsRTPTime() {
        let h = Harness()
        h.feed(vp8(1, ts: 1000, start: true, keyframe: true))
        h.feed(opus(1))
        // The first packet brings the first report (the server learns where to send feedback).
        #expect(h.reports(5005).map(\.ssrc) == [EgressTarget.defaultVideoSSRC])
        h.clock.advance(by: .milliseconds(500))
        h.egress.tick()
        #expect(h.reports(5005).isEmpty)
        h.clock.advance(by: .milliseconds(500))
        h.egress.tick()
        let video = h.reports(5005), audio = h.reports(5003)
        #expect(video.map(\.rtpTimestamp) == [1000 + 90_000] && video.first?.packetCount == 1)
        #expect(audio.map(\.rtpTimestamp) == [960 + 48_000] && audio.first?.ssrc == EgressTarget.defaultAudioSSRC)
        #expect(video.first?.ntpTimestamp == NTPTime.from(h.clock.wallTime()))
        #expect(h.egress.stats.senderReports == 3)
    }

    /// The datagrams Janus's streaming plugin sends (janus_rtcp_pli and
    /// janus_rtcp_remb in Janus 1.1's rtcp.c, with the SSRC it saw).
    @Test func janussOwnPLIAndREMBParse() throws {
        let pli: [UInt8] = [0x81, 0xCE, 0x00, 0x02, 0, 0, 0, 1, 0x6C, 0x76, 0x62, 0x76]
        #expect(try RTCPPacket.parseCompound(pli) == [.pli(RTCPPictureLossIndication(senderSSRC: 1, mediaSSRC: 0x6C76_6276))])
        // 1 Mbit/s: exponent 2, mantissa 250,000.
        let mantissa = 250_000
        let remb: [UInt8] = [0x8F, 0xCE, 0x00, 0x05, 0, 0, 0, 1, 0, 0, 0, 0, 0x52, 0x45, 0x4D, 0x42,
                             1, UInt8(2 << 2 | (mantissa >> 16) & 3), UInt8(mantissa >> 8 & 0xFF), UInt8(mantissa & 0xFF),
                             0x6C, 0x76, 0x62, 0x76]
        let parsed = try RTCPPacket.parseCompound(remb)
        #expect(parsed == [.remb(try RTCPREMB(senderSSRC: 1, bitrate: 1_000_000, ssrcs: [0x6C76_6276]))])
        // What this node writes reads back the same.
        #expect(try RTCPPacket.parseCompound(RTCPPacket.serializeCompound(parsed)) == parsed)
        let fir = RTCPPacket.fir(RTCPFullIntraRequest(senderSSRC: 3, entries: [.init(ssrc: 9, sequence: 200), .init(ssrc: 10, sequence: 1)]))
        #expect(try RTCPPacket.parseCompound(fir.serialized()) == [fir])
        // Other application feedback is skipped; a REMB whose SSRC count overruns it fails.
        var other = remb
        other[12] = 0x58
        #expect(try RTCPPacket.parseCompound(other).isEmpty)
        var overrun = remb
        overrun[16] = 2
        #expect(throws: MediaError.self) { try RTCPPacket.parseCompound(overrun) }
    }

    @Test func theServersBandwidthEstimateIsRecordedAndASendTheSocketRefusesIsCounted() throws {
        let h = Harness()
        h.feedback([.remb(try RTCPREMB(senderSSRC: 1, bitrate: 1_500_000, ssrcs: [EgressTarget.defaultVideoSSRC]))])
        #expect(h.egress.stats.rembs == 1)
        // 18 bits of mantissa: 1.5 Mbit/s survives to within a few bit/s.
        #expect(abs(Int(h.egress.stats.rembBitrate) - 1_500_000) < 8)
        h.refuse = true
        h.feed(vp8(1, ts: 0, start: true, keyframe: true))
        #expect(h.egress.stats.sendFailures == 2 && h.egress.stats.bytes == 0)
    }
}
