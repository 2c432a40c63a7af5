import LVBCore
import Testing
@testable import LVBMedia

/// A viewer whose parent died subscribes to a new one saying which packet it
/// decoded last; the new parent sends what came after it from its history.
@Suite("Resuming a stream at a new parent")
struct ResumeTests {
    /// A fan-out that has sent `frames` frames of 4 packets (sequence numbers
    /// from `firstSeq`, wrapping), a keyframe every `gop` frames.
    private final class Probe {
        let fanOut = FanOut<Int>(budgetKbps: 1000)
        private(set) var sent: [Int: [UInt16]] = [:]
        let now = Instant(nanoseconds: 1_000_000_000)

        init(frames: Int, gop: Int, firstSeq: UInt16 = 0) {
            fanOut.send = { [unowned self] peer, _, bytes in
                sent[peer, default: []].append(UInt16(bytes[0]) << 8 | UInt16(bytes[1]))
            }
            for f in 0..<frames {
                let seqs = (0..<4).map { firstSeq &+ UInt16(f * 4 + $0) }
                fanOut.sendVideo(seqs.map { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }, sequences: seqs, keyframe: f % gop == 0)
            }
        }

        func take(_ peer: Int) -> [UInt16] {
            defer { sent[peer] = nil }
            return sent[peer] ?? []
        }
    }

    @Test("a new subscriber resuming after a packet gets every later one, across a keyframe, instead of the GOP")
    func resumeSendsWhatWasMissed() {
        // 40 frames, keyframes at 0, 30: the GOP cache holds frames 30–39 (packets 120–159).
        let p = Probe(frames: 40, gop: 30)
        #expect(!p.fanOut.subscribe(1, now: p.now, resumeAfter: 99))
        #expect(p.take(1) == Array(100..<160))
        #expect(p.fanOut.stats.resumeBursts == 1 && p.fanOut.stats.gopBursts == 0)
        // One resuming inside the current GOP gets less than the GOP: only what it lacks.
        #expect(!p.fanOut.subscribe(2, now: p.now, resumeAfter: 150))
        #expect(p.take(2) == Array(151..<160))
        // A plain new subscriber still gets the GOP.
        #expect(!p.fanOut.subscribe(3, now: p.now))
        #expect(p.take(3) == Array(120..<160))
        #expect(p.fanOut.stats.gopBursts == 1)
    }

    @Test("a resume point too far back, or far ahead, gets the GOP; the newest or a little ahead gets nothing; across the wrap")
    func resumeBounds() {
        // 200 frames = 800 packets from 65 000: the sequence numbers wrap; keyframes every 30 frames (last at 180).
        let p = Probe(frames: 200, gop: 30, firstSeq: 65_000)
        let newest: UInt16 = 65_000 &+ 799
        let gop = (180 * 4..<800).map { 65_000 &+ UInt16($0) }
        // More than maxResumePackets behind: the GOP cache, as for a newcomer.
        #expect(!p.fanOut.subscribe(1, now: p.now, resumeAfter: newest &- UInt16(MediaConstants.maxResumePackets) &- 1))
        #expect(p.take(1) == gop)
        // Exactly maxResumePackets behind, across the wrap: all of them.
        #expect(!p.fanOut.subscribe(2, now: p.now, resumeAfter: newest &- UInt16(MediaConstants.maxResumePackets)))
        #expect(p.take(2) == (1...MediaConstants.maxResumePackets).map { newest &- UInt16(MediaConstants.maxResumePackets) &+ UInt16($0) })
        // At the newest, or a few ahead (this parent lags the old one): nothing to send.
        #expect(!p.fanOut.subscribe(3, now: p.now, resumeAfter: newest))
        #expect(!p.fanOut.subscribe(4, now: p.now, resumeAfter: newest &+ 5))
        #expect(p.take(3).isEmpty && p.take(4).isEmpty)
        // Absurdly far ahead: not a resume this parent can serve; the GOP.
        #expect(!p.fanOut.subscribe(5, now: p.now, resumeAfter: newest &+ 20_000))
        #expect(p.take(5) == gop)
    }

    @Test("a resume is a burst like the GOP: once per interval per subscriber, and only for a new one")
    func resumeIsRateLimited() {
        let p = Probe(frames: 40, gop: 30)
        #expect(!p.fanOut.subscribe(1, now: p.now, resumeAfter: 99))
        #expect(p.take(1).count == 60)
        // Still subscribed: feedback naming a resume point sends nothing more.
        p.fanOut.subscribe(1, now: p.now + .seconds(1), resumeAfter: 99)
        #expect(p.take(1).isEmpty)
        // Gone and back within the interval: nothing; after it, the burst again.
        p.fanOut.unsubscribe(1)
        p.fanOut.subscribe(1, now: p.now + .seconds(2), resumeAfter: 99)
        #expect(p.take(1).isEmpty)
        p.fanOut.unsubscribe(1)
        p.fanOut.subscribe(1, now: p.now + MediaConstants.gopBurstInterval + .seconds(1), resumeAfter: 99)
        #expect(p.take(1).count == 60)
        #expect(p.fanOut.stats.resumeBursts == 2)
    }

    @Test("the resume request: wire layout, parsing, and only a request for the stream's own video counts")
    func resumeRequestOnTheWire() throws {
        // APP, subtype 1, PT 204, length 4; SSRC 01020304, name "LVBK", video SSRC 0a0b0c0d, after 0x1234, reserved.
        let wire: [UInt8] = [0x81, 0xCC, 0x00, 0x04, 0x01, 0x02, 0x03, 0x04, 0x4C, 0x56, 0x42, 0x4B,
                             0x0A, 0x0B, 0x0C, 0x0D, 0x12, 0x34, 0x00, 0x00]
        let app = RTCPApp.resume(ssrc: 0x0102_0304, mediaSSRC: 0x0A0B_0C0D, after: 0x1234)
        #expect(RTCPPacket.app(app).serialized() == wire)
        #expect(try RTCPPacket.parseCompound(wire[...]) == [.app(app)])
        #expect(app.resumePoint?.mediaSSRC == 0x0A0B_0C0D && app.resumePoint?.after == 0x1234)
        #expect(!app.isKeyframesOnly)
        // Another length, subtype or name is not a resume request.
        #expect(try RTCPApp(subtype: 1, ssrc: 1, name: Array("LVBK".utf8), data: [0, 0, 0, 1]).resumePoint == nil)
        #expect(try RTCPApp(subtype: 2, ssrc: 1, name: Array("LVBK".utf8), data: Array(repeating: 0, count: 8)).resumePoint == nil)
        #expect(try RTCPApp(subtype: 1, ssrc: 1, name: Array("LVBX".utf8), data: Array(repeating: 0, count: 8)).resumePoint == nil)

        let rr = RTCPPacket.receiverReport(try RTCPReceiverReport(ssrc: 0x0102_0304))
        let mode = RTCPPacket.feedbackMode(of: [rr, .app(app)], videoSSRC: 0x0A0B_0C0D)
        #expect(mode.isFeedback && !mode.keyframesOnly && !mode.leaving && mode.resumeAfter == 0x1234)
        #expect(RTCPPacket.feedbackMode(of: [rr, .app(app)], videoSSRC: 0x0A0B_0C0E).resumeAfter == nil)
        #expect(RTCPPacket.feedbackMode(of: [rr, .app(app)], videoSSRC: nil).resumeAfter == nil)
        // On its own it does not subscribe: a viewer sends it with its report.
        #expect(!RTCPPacket.feedbackMode(of: [.app(app)], videoSSRC: 0x0A0B_0C0D).isFeedback)
    }
}
