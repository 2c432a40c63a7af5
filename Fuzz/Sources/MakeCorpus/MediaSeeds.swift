#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import FuzzWorld
import LVBCore
import LVBCrypto
import LVBGossip
import LVBMedia
import LVBRendezvous
import LVBRoom
import LVBTestSupport
import LVBTransport

/// Seeds of the media and receive-path fuzz targets.
extension MakeCorpus {
    /// Inputs for each delivery mode, and genuine datagrams sealed under the
    /// fuzz world's own session (its seeds are fixed, so the keys match).
    static func receiveSeeds() throws -> [String: [UInt8]] {
        guard let world = World() else { throw SetupFailed(description: "the fuzz world's session did not come up") }
        var sealed: [[UInt8]] = []
        let original = world.coreEndpoint.onReceive
        world.coreEndpoint.onReceive = { d, from in
            sealed.append(d)
            original?(d, from)
        }
        try withExtendedLifetime(world) {
            try world.peer.send(Array("like".utf8), channel: .gossip, to: world.core.nodeID)
            try world.peer.send(ControlMessage.ping(7).bytes, channel: .control, to: world.core.nodeID)
            world.settle()
        }
        guard sealed.count >= 2 else { throw SetupFailed(description: "no sealed datagrams were captured") }

        let xxNet = VirtualNetwork(seed: 108)
        let xx = xxNet.makeNodes(1, seed: 109)
        let xxCapture = Capture(xx)
        let probe = xxNet.makeEndpoint()
        probe.onReceive = { d, _ in xxCapture.datagrams.append(d) }
        withExtendedLifetime((xx, xxCapture)) {
            xx[0].core.connect(to: probe.address, expecting: nil)   // its XX initiation lands on the probe
            xxNet.run(for: .milliseconds(10))
        }
        guard let xxInitiation = xxCapture.first(.xxInitiation) else {
            throw SetupFailed(description: "no XX initiation was captured")
        }

        let body16 = [UInt8](repeating: 0, count: 8) + [UInt8](repeating: 0xA5, count: 16)
        func mode(_ m: DeliveryMode, _ rest: [UInt8]) -> [UInt8] { [m.selector] + rest }
        return [
            "raw-sealed-gossip": sealed[0],
            "raw-sealed-ping": sealed[1],
            "raw-xx-initiation": xxInitiation,
            "raw-garbage": Array("not a packet".utf8),
            "live-header-attacker": mode(.liveHeaderFromAttacker, [0, 0, 0, 0, 0, 0, 0] + body16),
            "live-header-peer": mode(.liveHeaderFromPeer, [0, 0, 0, 0, 0, 0, 0] + body16),
            "sealed-control-ping": mode(.sealedByPeer, [DataChannel.control.rawValue] + ControlMessage.ping(9).bytes),
            "sealed-control-hello": mode(.sealedByPeer, [DataChannel.control.rawValue]
                + ControlMessage.hello(Hello(agent: "fuzz", role: .viewer)).bytes),
            "sealed-gossip": mode(.sealedByPeer, [DataChannel.gossip.rawValue] + Array("chat".utf8)),
            "sealed-rtp": mode(.sealedByPeer, [DataChannel.rtp.rawValue, 0x80, 0x60, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1]),
            "handshake-ik": mode(.handshake(.ikInitiation), [UInt8](repeating: 0x11, count: 36)),
            "handshake-xx": mode(.handshake(.xxInitiation), [1, 0, 0, 0] + [UInt8](repeating: 0x22, count: 32)),
            "handshake-xx-final": mode(.handshake(.xxFinal), [0, 0, 0, 0] + [UInt8](repeating: 0x33, count: 48)),
        ]
    }

    /// RTP packets (VP8 and Opus), RTCP packets of every type, and a small VP8
    /// keyframe (decoder input), all built with the LVBMedia APIs.
    static func mediaSeeds() throws -> [String: [UInt8]] {
        let encoder = try VP8Encoder(width: 16, height: 16, fps: 30, bitrateKbps: 100, keyframeInterval: 30)
        let picture = try SyntheticVideo(width: 16, height: 16).frame(number: 1)
        guard let keyframe = try encoder.encode(picture, pts: 0, forceKeyframe: true).first?.data else {
            throw SetupFailed(description: "VP8 encoder produced no keyframe")
        }
        var packetizer = try VP8Packetizer(maxPayloadSize: max(8, keyframe.count / 2 + 4), firstPictureID: 0x1234)
        let payloads = try packetizer.packetize(keyframe)
        func rtp(_ payload: [UInt8], seq: UInt16, marker: Bool, pt: UInt8 = 96, ts: UInt32 = 90_000,
                 csrcs: [UInt32] = [], padding: UInt8 = 0) throws -> [UInt8] {
            var p = try RTPPacket(marker: marker, payloadType: pt, sequenceNumber: seq, timestamp: ts,
                                  ssrc: 0x1122_3344, csrcs: csrcs, payload: payload[...], paddingLength: padding)
            p.setCaptureTime(0x0102_0304_0506_0708)
            return p.serialized()
        }
        var seeds: [String: [UInt8]] = [
            "vp8-keyframe": keyframe,
            "vp8-descriptor-full": VP8PayloadDescriptor(nonReference: true, startOfPartition: true, partitionIndex: 1,
                                                        pictureID: .short(5), tl0PicIndex: 9,
                                                        temporalLayer: (1, true), keyIndex: 3).serialized() + [0x9D],
            "rtp-opus": try rtp([0x78, 0x01, 0x02], seq: 7, marker: false, pt: 111, ts: 960,
                                csrcs: [0xAABB_CCDD], padding: 4),
            "rtcp-sr": RTCPPacket.senderReport(try RTCPSenderReport(
                ssrc: 1, ntpTimestamp: 0x1122_3344_5566_7788, rtpTimestamp: 90_000, packetCount: 10, octetCount: 1000,
                reportBlocks: [RTCPReportBlock(ssrc: 2, fractionLost: 3, cumulativeLost: -4, extendedHighestSequence: 5,
                                               jitter: 6, lastSenderReport: 7, delaySinceLastSenderReport: 8)])).serialized(),
            "rtcp-compound": RTCPPacket.serializeCompound([
                .receiverReport(try RTCPReceiverReport(ssrc: 1)),
                .nack(try RTCPGenericNACK(senderSSRC: 1, mediaSSRC: 2, lost: [10, 12, 40])),
                .pli(RTCPPictureLossIndication(senderSSRC: 1, mediaSSRC: 2)),
            ]),
            // What a media server sends an egress (Janus: a PLI, REMB; others FIR).
            "rtcp-server-feedback": RTCPPacket.serializeCompound([
                .fir(RTCPFullIntraRequest(senderSSRC: 1, entries: [.init(ssrc: 0x6C76_6276, sequence: 4)])),
                .remb(try RTCPREMB(senderSSRC: 1, bitrate: 1_000_000, ssrcs: [0x6C76_6276])),
            ]),
            "rtcp-keyframes-only": RTCPPacket.serializeCompound([
                .receiverReport(try RTCPReceiverReport(ssrc: 1)), .app(RTCPApp.keyframesOnly(ssrc: 1)),
            ]),
        ]
        for (i, payload) in payloads.enumerated() {
            seeds["rtp-vp8-\(i)"] = try rtp(payload, seq: 100 + UInt16(i), marker: i == payloads.count - 1)
        }
        return seeds
    }
}

extension MakeCorpus {
    /// Scripts for FuzzMediaReceive: records of [step ms | 0x80 for RTCP][length][bytes]:
    /// a short VP8 + Opus stream with a loss, a NACK and a PLI from the viewer side.
    static func mediaReceiveSeeds() throws -> [String: [UInt8]] {
        let encoder = try VP8Encoder(width: 32, height: 32, fps: 30, bitrateKbps: 100, keyframeInterval: 30)
        let pattern = try SyntheticVideo(width: 32, height: 32)
        var packetizer = try VP8Packetizer(maxPayloadSize: 40, firstPictureID: 7)
        let opus = try OpusEncoder(channels: 1, bitrate: 16000)
        var tone = try SyntheticAudio()
        func record(_ step: UInt8, rtcp: Bool, _ body: [UInt8]) -> [UInt8] {
            [step | (rtcp ? 0x80 : 0), UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
        }
        var script: [UInt8] = [], lossy: [UInt8] = []
        var seq: UInt16 = 65530
        for n in 0..<4 {
            guard let frame = try encoder.encode(pattern.frame(number: n), pts: Int64(n)).first else { continue }
            let payloads = try packetizer.packetize(frame.data)
            for (i, payload) in payloads.enumerated() {
                var p = try RTPPacket(marker: i == payloads.count - 1, payloadType: 96, sequenceNumber: seq,
                                      timestamp: UInt32(n) * 3000, ssrc: 0x1122_3344, payload: payload[...])
                p.setCaptureTime(0x0102_0304_0506_0708 &+ UInt64(n))
                script += record(i == 0 ? 33 : 0, rtcp: false, p.serialized())
                if seq % 5 != 0 { lossy += record(i == 0 ? 33 : 1, rtcp: false, p.serialized()) }
                seq &+= 1
            }
            let a = try RTPPacket(payloadType: 111, sequenceNumber: UInt16(n), timestamp: UInt32(n) * 960,
                                  ssrc: 0x5566_7788, payload: try opus.encode(tone.next20ms())[...])
            script += record(20, rtcp: false, a.serialized())
        }
        let feedback = RTCPPacket.serializeCompound([
            .receiverReport(try RTCPReceiverReport(ssrc: 9, reportBlocks: [RTCPReportBlock(
                ssrc: 0x1122_3344, fractionLost: 30, cumulativeLost: 2, extendedHighestSequence: 70000,
                jitter: 90, lastSenderReport: 0, delaySinceLastSenderReport: 0)])),
            .nack(try RTCPGenericNACK(senderSSRC: 9, mediaSSRC: 0x1122_3344, lost: [1, 2, 5])),
            .pli(RTCPPictureLossIndication(senderSSRC: 9, mediaSSRC: 0x1122_3344)),
        ])
        return ["stream": script, "stream-lossy": lossy + record(100, rtcp: true, feedback) + record(127, rtcp: false, [])]
    }

    /// Scripts for FuzzSeal: records of [step ms | 0x40 new feeder | 0x80 seal element][length][bytes]:
    /// the stream of FuzzSeal's host (seed 0x5E, room 0x52...) with its seals,
    /// in order, reordered, with a byte altered and with its seals stripped.
    static func sealSeeds() throws -> [String: [UInt8]] {
        let host = try Identity(seed: [UInt8](repeating: 0x5E, count: 32))
        var sealer = StreamSealer(scope: [UInt8](repeating: 0x52, count: 16), sign: { host.sign($0) })
        let encoder = try VP8Encoder(width: 32, height: 32, fps: 30, bitrateKbps: 100, keyframeInterval: 30)
        let pattern = try SyntheticVideo(width: 32, height: 32)
        var packetizer = try VP8Packetizer(maxPayloadSize: 60, firstPacketReserve: MediaSeal.firstPacketReserve, firstPictureID: 7)
        let opus = try OpusEncoder(channels: 1, bitrate: 16000)
        var tone = try SyntheticAudio()
        func record(_ step: UInt8, _ flags: UInt8 = 0, _ body: [UInt8]) -> [UInt8] {
            [step | flags, UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
        }
        var packets: [RTPPacket] = []
        var seq: UInt16 = 65530, audioSeq: UInt16 = 3
        for n in 0..<6 {
            for _ in 0..<2 {
                var a = try RTPPacket(payloadType: 111, sequenceNumber: audioSeq, timestamp: UInt32(audioSeq) * 960,
                                      ssrc: 0x5566_7788, payload: try opus.encode(tone.next20ms())[...])
                a.setCaptureTime(UInt64(audioSeq))
                sealer.seal(audio: &a)
                packets.append(a)
                audioSeq &+= 1
            }
            guard let frame = try encoder.encode(pattern.frame(number: n), pts: Int64(n)).first else { continue }
            var made = try packetizer.rtpPackets(frame.data, timestamp: UInt32(n) * 3000, ssrc: 0x1122_3344, sequence: &seq,
                                                 captureTime: 0x0102_0304_0506_0708 &+ UInt64(n))
            sealer.seal(frame: &made)
            packets += made
        }
        // Audio after the frames: each packet with a seal of its own (n = 0).
        for _ in 0..<4 {
            var a = try RTPPacket(payloadType: 111, sequenceNumber: audioSeq, timestamp: UInt32(audioSeq) * 960,
                                  ssrc: 0x5566_7788, payload: try opus.encode(tone.next20ms())[...])
            sealer.seal(audio: &a)
            packets.append(a)
            audioSeq &+= 1
        }
        // An audio-only stream (a sealer that has sealed no frame): runs of four, the fourth carrying the seal.
        var audioOnly = StreamSealer(scope: [UInt8](repeating: 0x52, count: 16), sign: { host.sign($0) })
        var runs: [UInt8] = []
        for k in 0..<9 {
            var a = try RTPPacket(payloadType: 111, sequenceNumber: 40_000 &+ UInt16(k), timestamp: UInt32(k) * 960,
                                  ssrc: 0x5566_7799, payload: try opus.encode(tone.next20ms())[...])
            audioOnly.seal(audio: &a)
            runs += record(20, 0, a.serialized())
        }
        let inOrder = packets.flatMap { record(5, 0, $0.serialized()) }
        var shuffled: [UInt8] = []
        for chunk in stride(from: 0, to: packets.count, by: 5) {
            for p in packets[chunk..<min(chunk + 5, packets.count)].reversed() { shuffled += record(3, 0, p.serialized()) }
        }
        var altered = packets.map { $0.serialized() }
        altered[altered.count / 2][altered[altered.count / 2].count - 1] ^= 0x10
        var stripped: [UInt8] = []
        var elements: [UInt8] = []
        for var p in packets {
            for id in [MediaSeal.videoID, MediaSeal.audioID] {
                if let e = p.extensions[id] { elements += record(0, 0x80, e) }
                p.removeExtension(id: id)
            }
            stripped += record(5, 0, p.serialized())
        }
        return [
            "sealed-stream": inOrder,
            "sealed-reordered": shuffled,
            "sealed-altered": altered.flatMap { record(5, 0, $0) },
            "sealed-new-feeder": Array(inOrder.prefix(inOrder.count / 2)) + record(1, 0x40, []) + inOrder,
            "seals-stripped": stripped,
            "seal-elements": elements,
            "sealed-audio-only": runs,
        ]
    }
}

/// The fuzz build (`-sanitize=fuzzer`) links libFuzzer into every executable
/// of this package, and libFuzzer's `main` object needs this symbol even though
