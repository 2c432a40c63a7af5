import Foundation
import LVBMedia
import Testing

/// `--egress` from the host itself, on loopback, with the test as the media
/// server: four UDP sockets on the ports the options name, reading what
/// comes and answering as Janus would (a PLI to where the sender reports
/// come from), plus a NACK and a broken datagram.
@Suite(.serialized, .ownThread) struct EgressProcessTests {
    /// Video, its RTCP, audio and its RTCP on four free ports.
    static func serverSockets() throws -> (video: UDPProbe, videoRTCP: UDPProbe, audio: UDPProbe, audioRTCP: UDPProbe) {
        for _ in 0..<50 {
            let base = UInt16.random(in: 20_000...60_000) & ~1
            if let v = try? UDPProbe(port: base), let vr = try? UDPProbe(port: base + 1),
               let a = try? UDPProbe(port: base + 2), let ar = try? UDPProbe(port: base + 3) {
                return (v, vr, a, ar)
            }
        }
        throw ProbeError("no four free ports in a row")
    }

    @Test func theHostsOwnStreamGoesOutOnTheOptionsTermsAndAServersPLIMakesAKeyframeAtOnce() throws {
        let server = try Self.serverSockets()
        // A keyframe every 30 s: a second one soon can only come from the PLI.
        let host = try NodeProcess(["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json", "--size", "160x96", "--fps", "15",
                                    "--gop", "30", "--egress", "127.0.0.1:\(server.video.port)", "--egress-audio-port", "\(server.audio.port)",
                                    "--egress-payload-types", "101,112", "--egress-ssrcs", "0x1234,77"])
        defer { host.signal(SIGTERM); _ = host.waitExit() }
        #expect(host.waitFor("ready") != nil, "host: \(host.stderr)")

        // The first video packet starts a keyframe, on the options' payload type and SSRC; audio on its own.
        let first = try #require(server.video.receive(timeout: 10).flatMap { try? RTPPacket.parse($0) }, "no RTP: \(host.stderr)")
        #expect(first.payloadType == 101 && first.ssrc == 0x1234)
        #expect(RTPEgress.startsKeyframe(first))
        let sound = try #require(server.audio.receive(timeout: 5).flatMap { try? RTPPacket.parse($0) })
        #expect(sound.payloadType == 112 && sound.ssrc == 77)
        // Sender reports come to the RTCP ports, from the socket that takes feedback.
        let report = try #require(server.videoRTCP.receiveFrom(timeout: 3))
        guard case .senderReport(let sr)? = try RTCPPacket.parseCompound(report.bytes).first else {
            Issue.record("not a sender report: \(report.bytes)")
            return
        }
        #expect(sr.ssrc == 0x1234)

        // No keyframe for a second and a half; then a PLI, and one comes at once.
        Thread.sleep(forTimeInterval: 1.5)
        var seen: [UInt16: [UInt8]] = [:]
        for bytes in server.video.drain() { if let p = try? RTPPacket.parse(bytes) { seen[p.sequenceNumber] = bytes } }
        #expect(!seen.isEmpty)
        #expect(!seen.values.contains { (try? RTPPacket.parse($0)).map(RTPEgress.startsKeyframe) == true }, "a keyframe came unasked")
        let pli = RTCPPacket.pli(RTCPPictureLossIndication(senderSSRC: 1, mediaSSRC: 0x1234)).serialized()
        let asked = Date()
        server.videoRTCP.send(pli, toPort: report.port)
        var keyframeAfter: Double?
        while keyframeAfter == nil && Date().timeIntervalSince(asked) < 2 {
            guard let bytes = server.video.receive(timeout: 0.1), let p = try? RTPPacket.parse(bytes) else { continue }
            if RTPEgress.startsKeyframe(p) { keyframeAfter = Date().timeIntervalSince(asked) }
        }
        let after = try #require(keyframeAfter, "no keyframe after the PLI")
        print("egress: keyframe \(Int(after * 1000)) ms after the server's PLI")
        #expect(after < 0.5)

        // A NACK is answered with the same bytes; a broken datagram is counted.
        let (seq, bytes) = try #require(seen.min { $0.key < $1.key })
        let nack = RTCPPacket.nack(try RTCPGenericNACK(senderSSRC: 1, mediaSSRC: 0x1234, lost: [seq])).serialized()
        _ = server.video.drain()
        server.videoRTCP.send(nack, toPort: report.port)
        server.videoRTCP.send([0x80, 0xC9, 0x00, 0x07, 1], toPort: report.port)
        let deadline = Date().addingTimeInterval(2)
        var resent = false
        while !resent && Date() < deadline {
            resent = server.video.receive(timeout: 0.1) == bytes
        }
        #expect(resent, "the NACKed packet did not come again")
        let stats = try #require(host.waitFor("stats", after: host.events.count, timeout: 5)?["media"] as? [String: Any])
        #expect(stats["egress_plis"] as? Int == 1 && stats["egress_nacks"] as? Int == 1 && stats["egress_retransmitted"] as? Int == 1, "\(stats)")
        #expect(stats["egress_malformed_rtcp"] as? Int == 1 && (stats["egress_keyframe_requests"] as? Int ?? 0) >= 1, "\(stats)")
        #expect((stats["egress_video_packets"] as? Int ?? 0) > 10 && (stats["egress_audio_packets"] as? Int ?? 0) > 50, "\(stats)")
    }

    @Test func mistakesInTheEgressOptionsAreOneClearLine() throws {
        for (arguments, says) in [
            (["host", "--ephemeral", "--egress", "janus.example:5004"], "--egress"),
            (["host", "--ephemeral", "--egress", "127.0.0.1:65535"], "1...65534"),
            (["host", "--ephemeral", "--egress", "127.0.0.1", "--egress-payload-types", "100,100"], "different payload types"),
            (["host", "--ephemeral", "--egress", "127.0.0.1", "--egress-payload-types", "100"], "VIDEO,AUDIO"),
            (["host", "--ephemeral", "--egress", "127.0.0.1", "--egress-audio-port", "5005"], "overlap"),
            (["host", "--ephemeral", "--egress", "127.0.0.1", "--egress-ssrcs", "5,5"], "different SSRCs"),
            (["host", "--ephemeral", "--egress", "127.0.0.1", "--video", "none", "--audio", "none"], "sends none"),
            (["join", "127.0.0.1:9", "--ephemeral", "--no-media", "--egress", "127.0.0.1"], "--no-media"),
        ] {
            // The parser's usage lines may follow; the first line says what was wrong.
            let (status, _, err) = try runToEnd(arguments)
            #expect(status == 64 && err.split(separator: "\n").first.map { $0.contains(says) } == true, "\(arguments): \(status) \(err)")
        }
    }
}
