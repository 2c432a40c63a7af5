import LVBCore
import LVBCrypto
import LVBMedia

#if canImport(Glibc)
import Glibc
#endif

// What the host's seals cost (issue 32), in process, on a real 640x360@30
// stream at 1 Mbit/s with 48 kbit/s Opus: ffmpeg's testsrc2 encoded by our
// VP8 encoder (the synthetic pattern compresses to ~80 kbit/s; without
// ffmpeg it is used, and said), packetized as the host does. `LVBBench
// <seconds> seal` runs this alone. Every figure has its reference from
// the same run:
//
// 1. Host signing CPU: StreamSealer over `seconds` of the stream, as % of
//    one core (CPU time over stream time); reference: encoding that video
//    with VP8 on the same thread. Goal ≤ 1 %.
// 2. Viewer verifying CPU: SealChecker over the same packets, parsed from
//    their bytes; reference: decoding them with VP8. Goal ≤ 1 %.
// 3. Bytes added: the sealed stream's RTP bytes against the same packets
//    unsealed (each audio packet sealed alone, issue 50). Goal ≤ 5 % of a
//    1 Mbit/s stream with audio.
// 4. Glass-to-glass, with and without seals, frames alternating: capture →
//    encode → packetize → (seal) → bytes → parse → (check) → reassemble →
//    decode, per frame on one thread (the network and the jitter buffer
//    are the same either way). Goal: ≤ 1 ms added at p95.
// 5. A relay's hop: time from a packet's arrival to its forward, with the
//    relay's own check after it and without. Goal: unchanged.
// 6. Audio with video: how many audio packets carry their own seal (a
//    relayed viewer's sound waits for none).
// 7. An audio-only room: the bytes the seals add and a relayed listener's
//    wait, for runs of 1, 2 and 4 packets per seal (a node seals runs of 4).

enum SealBench {
    static let width = 640, height = 360, fps = 30, bitrateKbps = 1000
    static let maxPacket = 1167
    static let goalCPU = 1.0, goalBytes = 5.0, goalAddedP95 = 1.0

    static func runAndPrint(seconds: Double) {
        print("")
        print("media seals (issue 32): \(width)x\(height)@\(fps), \(bitrateKbps) kbit/s VP8 + 48 kbit/s Opus, in process, one thread")
        let frames = max(90, Int(seconds * Double(fps)))
        let (source, label) = pictures(frames)
        print("  source: \(label), \(frames) frames (\(Double(frames) / Double(fps)) s of stream)")
        do {
            try measure(source, frames: frames)
        } catch {
            print("  seal bench failed: \(error)")
        }
    }

    /// The pictures: testsrc2 from ffmpeg when installed, else the synthetic pattern.
    private static func pictures(_ count: Int) -> ([I420Frame], String) {
        if let ffmpeg = ProcessRunner.findExecutable("ffmpeg"), case .success(let dir) = ProcessRunner.makeTemporaryDirectory("lvbbench-seal"),
           case .success(let y4m) = MediaBench.makeY4M(ffmpeg, dir), let reader = try? Y4MReader(path: y4m, loop: true) {
            defer { unlink(y4m); rmdir(dir) }
            var out: [I420Frame] = []
            while out.count < count, let f = try? reader.nextFrame() { out.append(f) }
            if out.count == count { return (out, "ffmpeg testsrc2") }
        }
        guard let pattern = try? SyntheticVideo(width: width, height: height) else { return ([], "none") }
        return ((0..<count).map { pattern.frame(number: $0) }, "the synthetic pattern (no ffmpeg: a lighter stream than 1 Mbit/s)")
    }

    /// One stream's packets in send order: each frame's, with the audio sent since.
    private struct Stream {
        var frames: [[RTPPacket]] = []
        var audio: [[RTPPacket]] = []  // before each frame
        var encodeSeconds = 0.0
    }

    private static func encode(_ pictures: [I420Frame]) throws -> Stream {
        let encoder = try VP8Encoder(width: width, height: height, fps: fps, bitrateKbps: bitrateKbps, keyframeInterval: 2 * fps)
        var packetizer = try VP8Packetizer(maxPayloadSize: maxPacket - MediaConstants.rtpOverhead, firstPacketReserve: MediaSeal.firstPacketReserve)
        let opus = try OpusEncoder(channels: 1, bitrate: MediaConstants.audioBitrate)
        var tone = try SyntheticAudio()
        var s = Stream()
        var seq: UInt16 = 1000, audioSeq: UInt16 = 77
        var audioSent = 0
        for (n, picture) in pictures.enumerated() {
            // The audio due by this frame's time (20 ms packets against 33.3 ms frames).
            var audio: [RTPPacket] = []
            while audioSent * 20 <= n * 1000 / fps {
                var a = try RTPPacket(payloadType: MediaConstants.audioPayloadType, sequenceNumber: audioSeq,
                                      timestamp: UInt32(audioSent * 960), ssrc: 0xA0D1_0000, payload: try opus.encode(tone.next20ms())[...])
                a.setCaptureTime(UInt64(audioSent))
                audio.append(a)
                audioSeq &+= 1
                audioSent += 1
            }
            let start = threadCPUSeconds()
            let encoded = try encoder.encode(picture, pts: Int64(n))
            s.encodeSeconds += threadCPUSeconds() - start
            guard let frame = encoded.first else { continue }
            s.frames.append(try packetizer.rtpPackets(frame.data, timestamp: UInt32(n * 3000), ssrc: 0x51DE_0000,
                                                      sequence: &seq, captureTime: UInt64(n)))
            s.audio.append(audio)
        }
        return s
    }

    private static func measure(_ pictures: [I420Frame], frames: Int) throws {
        let stream = try encode(pictures)
        let streamSeconds = Double(frames) / Double(fps)
        let host = Identity.generate(), room = [UInt8](repeating: 7, count: 16)

        // 1. Signing, and 3. bytes.
        var sealer = StreamSealer(scope: room, sign: { host.sign($0) })
        var sealedFrames: [[RTPPacket]] = [], sealedAudio: [[RTPPacket]] = []
        var plainBytes = 0
        let signStart = threadCPUSeconds()
        for (frame, audio) in zip(stream.frames, stream.audio) {
            var a = audio
            for i in a.indices { sealer.seal(audio: &a[i]) }
            var f = frame
            sealer.seal(frame: &f)
            sealedAudio.append(a)
            sealedFrames.append(f)
        }
        let signSeconds = threadCPUSeconds() - signStart
        for (frame, audio) in zip(stream.frames, stream.audio) { plainBytes += (frame + audio).reduce(0) { $0 + $1.serializedLength } }
        let sealedBytes = zip(sealedFrames, sealedAudio).reduce(0) { $0 + ($1.0 + $1.1).reduce(0) { $0 + $1.serializedLength } }
        let plainKbps = Double(plainBytes) * 8 / 1000 / streamSeconds
        let added = Double(sealedBytes - plainBytes)

        // 2. Verifying, against decoding.
        let wire = zip(sealedFrames, sealedAudio).flatMap { f, a in (a + f).map { $0.serialized() } }
        let checker = SealChecker(signer: host.nodeID, scope: room)
        let clock = SystemClock.shared
        var passed = 0, refused = 0
        let verifyStart = threadCPUSeconds()
        for bytes in wire {
            guard let p = try? RTPPacket.parse(bytes) else { continue }
            for o in checker.receive(p, now: clock.now()) {
                if case .forged = o { refused += 1 } else { passed += 1 }
            }
        }
        let verifySeconds = threadCPUSeconds() - verifyStart
        let decoder = try VP8Decoder()
        let decodeStart = threadCPUSeconds()
        for f in stream.frames { _ = try decoder.decode(Self.reassemble(f)) }
        let decodeSeconds = threadCPUSeconds() - decodeStart

        func pct(_ cpu: Double) -> String { format2(100 * cpu / streamSeconds) + " %" }
        let signPct = 100 * signSeconds / streamSeconds, verifyPct = 100 * verifySeconds / streamSeconds
        print("  host signing CPU      \(pct(signSeconds)) of a core (\(sealer.stats.videoSeals) video + \(sealer.stats.audioSeals) audio seals); encoding it: \(pct(stream.encodeSeconds)) — goal ≤ \(goalCPU) % \(signPct <= goalCPU ? "✓" : "✗")")
        print("  viewer verifying CPU  \(pct(verifySeconds)) of a core (\(checker.stats.verifiedFrames) frames, \(checker.stats.verifiedAudio) audio packets passed, \(refused) refused); decoding it: \(pct(decodeSeconds)) — goal ≤ \(goalCPU) % \(verifyPct <= goalCPU ? "✓" : "✗")")
        let addedPct = 100 * added / Double(plainBytes)
        let nominalPct = 100 * (added * 8 / 1000 / streamSeconds) / Double(bitrateKbps)
        let perSecond = Int((added / streamSeconds).rounded()), perFrame = format1(added / Double(max(1, sealedFrames.count)))
        let ok = max(addedPct, nominalPct) <= goalBytes ? "✓" : "✗"
        print("  bytes added           \(perSecond) B/s (\(perFrame) B a frame): \(format2(addedPct)) % of this stream's "
              + "\(Int(plainKbps.rounded())) kbit/s of RTP, \(format2(nominalPct)) % of 1 Mbit/s — goal ≤ \(Int(goalBytes)) % \(ok)")

        // 4. Glass-to-glass, alternating frames with and without seals.
        try glassToGlass(pictures, host: host, room: room)
        // 5. A relay's hop.
        hop(wire, host: host, room: room)
        // 6. Audio in this stream: sealed alone, so a relayed viewer waits for nothing.
        let alone = sealedAudio.joined().filter { (try? MediaSeal.of($0))??.audioHashes.isEmpty == true }.count
        let audioCount = sealedAudio.joined().count
        print("  audio with video      \(alone) of \(audioCount) audio packets carry a seal of their own "
              + "(the rest came before the first frame, named by its seal): a relayed viewer plays each as it comes, waiting 0 ms")
        // 7. An audio-only room: what each run length would cost and make a relayed listener wait.
        try audioOnly(seconds: streamSeconds, host: host, room: room)
    }

    /// An audio-only stream (talk, radio) sealed in runs of 1, 2 and 4 packets
    /// (4 is what a node does): the bytes the seals add, against the stream's
    /// own, and how long a relayed listener's sound waits for its run's seal.
    private static func audioOnly(seconds: Double, host: Identity, room: [UInt8]) throws {
        let opus = try OpusEncoder(channels: 1, bitrate: MediaConstants.audioBitrate)
        var tone = try SyntheticAudio()
        let count = Int(seconds * 50)
        var plain: [RTPPacket] = []
        for i in 0..<count {
            var a = try RTPPacket(payloadType: MediaConstants.audioPayloadType, sequenceNumber: UInt16(truncatingIfNeeded: 900 + i),
                                  timestamp: UInt32(i * 960), ssrc: 0xA0D1_0001, payload: try opus.encode(tone.next20ms())[...])
            a.setCaptureTime(UInt64(i))
            plain.append(a)
        }
        let plainBytes = plain.reduce(0) { $0 + $1.serializedLength }
        let kbps = Double(plainBytes) * 8 / 1000 / seconds
        print("  audio-only room       \(Int(kbps.rounded())) kbit/s of Opus RTP (\(MediaConstants.audioBitrate / 1000) kbit/s Opus, 20 ms packets), sealed in runs of:")
        for run in [1, 2, MediaSeal.maxAudioHashes] {
            var sealer = StreamSealer(scope: room, sign: { host.sign($0) }, audioOnlyRun: run)
            var sealed = plain
            for i in sealed.indices { sealer.seal(audio: &sealed[i]) }
            let added = sealed.reduce(0) { $0 + $1.serializedLength } - plainBytes
            // A packet waits for the run's last (the carrier): 20 ms for each packet after it in its run.
            let maxWait = (run - 1) * 20, meanWait = Double(run - 1) * 10
            let chosen = run == MediaSeal.maxAudioHashes ? "  ← what a node does" : ""
            print("    \(run) packet\(run == 1 ? " " : "s")           \(Int((Double(added) / seconds).rounded())) B/s, "
                  + "\(format1(100 * Double(added) / Double(plainBytes))) % of the stream; a relayed listener waits \(format1(meanWait)) ms "
                  + "on average, \(maxWait) ms at most (\(sealer.stats.audioSeals) seals)\(chosen)")
        }
    }

    /// A frame's payloads without their VP8 descriptors, as a receiver rebuilds it.
    private static func reassemble(_ packets: [RTPPacket]) -> [UInt8] {
        packets.flatMap { p -> [UInt8] in
            guard let (_, data) = try? VP8PayloadDescriptor.parse(p.payload) else { return [] }
            return Array(data)
        }
    }

    private static func glassToGlass(_ pictures: [I420Frame], host: Identity, room: [UInt8]) throws {
        // Two encoders and decoders fed the same pictures, taking turns per frame.
        let encoders = try (0..<2).map { _ in try VP8Encoder(width: width, height: height, fps: fps, bitrateKbps: bitrateKbps, keyframeInterval: 2 * fps) }
        let decoders = try (0..<2).map { _ in try VP8Decoder() }
        var packetizers = try (0..<2).map { _ in try VP8Packetizer(maxPayloadSize: maxPacket - MediaConstants.rtpOverhead, firstPacketReserve: MediaSeal.firstPacketReserve) }
        var sealer = StreamSealer(scope: room, sign: { host.sign($0) })
        let checker = SealChecker(signer: host.nodeID, scope: room)
        var seqs: [UInt16] = [1, 30000]
        var times: [[Double]] = [[], []]
        let clock = SystemClock.shared
        for (n, picture) in pictures.enumerated() {
            for side in [n % 2, 1 - n % 2] {
                let start = ProcessRunner.now()
                guard let frame = try encoders[side].encode(picture, pts: Int64(n)).first else { continue }
                var packets = try packetizers[side].rtpPackets(frame.data, timestamp: UInt32(n * 3000), ssrc: UInt32(side + 1),
                                                               sequence: &seqs[side], captureTime: UInt64(n))
                if side == 1 { sealer.seal(frame: &packets) }
                let wire = packets.map { $0.serialized() }
                var arrived: [RTPPacket] = []
                for bytes in wire {
                    let p = try RTPPacket.parse(bytes)
                    if side == 1 {
                        for case .video(let f) in checker.receive(p, now: clock.now()) { arrived = f }
                    } else {
                        arrived.append(p)
                    }
                }
                _ = try decoders[side].decode(reassemble(arrived))
                times[side].append((ProcessRunner.now() - start) * 1000)
            }
        }
        let plain = times[0].sorted(), sealed = times[1].sorted()
        let added = percentile(sealed, 0.95) - percentile(plain, 0.95)
        let s50 = format2(percentile(sealed, 0.5)), s95 = format2(percentile(sealed, 0.95))
        let u50 = format2(percentile(plain, 0.5)), u95 = format2(percentile(plain, 0.95))
        print("  glass to glass        sealed p50 \(s50) ms, p95 \(s95) ms; unsealed p50 \(u50) ms, p95 \(u95) ms: "
              + "\(format2(added)) ms added at p95 — goal ≤ \(Int(goalAddedP95)) ms \(added <= goalAddedP95 ? "✓" : "✗")")
    }

    private static func hop(_ wire: [[UInt8]], host: Identity, room: [UInt8]) {
        let clock = SystemClock.shared
        var hops: [[Double]] = [[], []]
        for checking in [false, true, false, true] {
            let relay = MediaRelay<Int>(clock: clock, repairBudgetKbps: 4000, maxChildren: 1)
            var sentAt = 0.0
            relay.send = { _, _, _ in sentAt = ProcessRunner.now() }
            relay.downstream.subscribe(1)
            let checker = SealChecker(signer: host.nodeID, scope: room)
            for bytes in wire {
                let start = ProcessRunner.now()
                guard let p = try? RTPPacket.parse(bytes) else { continue }
                relay.receiveRTP(p, bytes: bytes[...])
                let forwarded = sentAt
                if checking { _ = checker.receive(p, now: clock.now()) }
                if forwarded >= start { hops[checking ? 1 : 0].append((forwarded - start) * 1_000_000) }
            }
        }
        let without = hops[0].sorted(), with = hops[1].sorted()
        let same = percentile(with, 0.95) <= percentile(without, 0.95) * 1.5 + 2
        print("  a relay's hop         arrival → forward p50 \(format1(percentile(with, 0.5))) µs, p95 \(format1(percentile(with, 0.95))) µs "
              + "with its check after; \(format1(percentile(without, 0.5))) µs, \(format1(percentile(without, 0.95))) µs without — unchanged \(same ? "✓" : "✗")")
    }
}
