import Foundation
import LVBMedia
import Testing

/// Live media between real processes over loopback: the host's synthetic
/// stream reaches a viewer that records it (WebM), writes decoded Y4M and
/// forwards plain RTP with an SDP file.
@Suite(.serialized, .ownThread) struct MediaProcessTests {
    private func host(_ extra: [String] = []) throws -> (NodeProcess, ticket: String) {
        let host = try NodeProcess(["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json",
                                    "--size", "320x180", "--gop", "1"] + extra)
        let ticket = try #require(host.waitFor("ready")?["ticket"] as? String, "host never became ready: \(host.stderr)")
        return (host, ticket)
    }

    /// ffprobe on PATH, or nil (the test then checks less; .ci/run installs ffmpeg).
    private static var ffprobe: String? { executableOnPath("ffprobe") }

    private static func run(_ tool: String, _ arguments: [String]) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = arguments
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    @Test func aViewerRecordsPlaysAndForwardsTheHostsStream() throws {
        let (host, ticket) = try host(["--fps", "25"])
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let y4mPath = dir + "/decoded.y4m", sdpPath = dir + "/room.sdp", wavPath = dir + "/decoded.wav"

        // A UDP socket standing in for ffplay behind --rtp-out.
        let rtp = try UDPReceiver()
        let viewer = try NodeProcess(["join", ticket, "--ephemeral", "--json", "--duration", "5",
                                      "--record", dir, "--video-out", y4mPath, "--audio-out", wavPath,
                                      "--rtp-out", "127.0.0.1:\(rtp.port)", "--sdp", sdpPath])
        let first = try #require(viewer.waitFor("first_frame", timeout: 20), "no first frame: \(viewer.stderr)")
        #expect((first["ms"] as? Double ?? 1e9) < 5000)
        #expect(first["width"] as? Int == 320 && first["height"] as? Int == 180)
        #expect(viewer.waitFor("stats", where: { ($0["media"] as? [String: Any])?["video_latency_p95_ms"] != nil }) != nil)
        #expect(viewer.waitExit(timeout: 30) == 0, "viewer: \(viewer.stderr)")
        let exit = try #require(viewer.waitFor("exit", timeout: 1)?["media"] as? [String: Any])
        let frames = exit["frames"] as? Int ?? 0
        #expect(frames > 50, "decoded \(frames) frames in ~4 s")

        // The decoded pictures are the host's pattern, in order.
        let reader = try Y4MReader(path: y4mPath)
        #expect(reader.fps.num == 25 && reader.fps.den == 1, "the Y4M says the host's rate")
        var numbers: [Int] = []
        while let f = try reader.nextFrame() { if let n = SyntheticVideo.readFrameNumber(f) { numbers.append(n) } }
        #expect(numbers.count > 50)
        #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 }, "frame numbers go backwards")

        // The decoded sound: a 20 ms block every 20 ms from the first packet on
        // (a WAV of about the viewing time, sizes patched at exit).
        let wav = try WAVReader(path: wavPath)
        var samples = 0
        while let block = try wav.read(samplesPerChannel: 4800) { samples += block.count }
        #expect(samples > 48_000 * 3 && samples < 48_000 * 6, "\(samples) samples")

        // The recording: one WebM with a VP8 and an Opus track about as long as the viewing.
        let files = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".webm") }
        #expect(files.count == 1)
        if let file = files.first, let ffprobe = Self.ffprobe {
            let codecs = try Self.run(ffprobe, ["-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", dir + "/" + file])
            #expect(codecs.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.sorted() == ["opus", "vp8"])
            let duration = try Self.run(ffprobe, ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", dir + "/" + file])
            let seconds = Double(duration.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
            #expect(seconds > 2.5 && seconds < 7, "recording lasts \(seconds) s")
            // Every video frame decodes.
            let count = try Self.run(ffprobe, ["-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                                               "stream=nb_read_frames", "-of", "csv=p=0", dir + "/" + file])
            #expect((Int(count.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 60)
        }

        // Plain RTP reached the --rtp-out port (video there, audio two above it
        // is a different port; this socket sees video) and the SDP says so.
        #expect(rtp.payloadTypes.contains(96))
        // Unchanged: the host's seals came along (two-byte form, on each frame's
        // first packet; a small frame's only packet carries its capture time there too).
        #expect(rtp.extensionProfiles.contains(0x1000), "\(rtp.extensionProfiles)")
        let sdp = try String(contentsOfFile: sdpPath, encoding: .utf8)
        #expect(sdp.contains("m=video \(rtp.port) RTP/AVP 96") && sdp.contains("a=rtpmap:96 VP8/90000"))
        #expect(sdp.contains("m=audio \(rtp.port + 2) RTP/AVP 111") && sdp.contains("a=rtpmap:111 opus/48000/2"))

        host.signal(SIGTERM)
        #expect(host.waitExit() == 0)
        let hostMedia = try #require(host.waitFor("exit", timeout: 1)?["media"] as? [String: Any])
        #expect((hostMedia["frames"] as? Int ?? 0) > 60)
    }

    @Test func aHostStreamsY4MFromStandardInput() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // 150 pictures numbered 5000… as an ffmpeg pipe would send them (5 s at 30 fps).
        let source = dir + "/in.y4m", decoded = dir + "/out.y4m"
        let writer = try Y4MWriter(path: source, width: 160, height: 96, fps: 30)
        let pattern = try SyntheticVideo(width: 160, height: 96)
        for n in 0..<150 { try writer.write(pattern.frame(number: 5000 + n)) }
        writer.close()
        let stream = try Data(contentsOf: URL(fileURLWithPath: source))
        let host = try NodeProcess(["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json",
                                    "--video", "-", "--audio", "none"])
        // The host reads at the frame rate; the pipe holds only a few pictures.
        let feeder = Thread {
            host.write(stream)
            host.closeStdin()
        }
        feeder.start()
        let ticket = try #require(host.waitFor("ready")?["ticket"] as? String, "host never became ready: \(host.stderr)")
        let viewer = try NodeProcess(["join", ticket, "--ephemeral", "--json", "--video-out", decoded])
        #expect(viewer.waitFor("first_frame") != nil, "viewer: \(viewer.stderr)")
        #expect(host.waitFor("media_ended", timeout: 20) != nil, "host: \(host.stderr)")
        Thread.sleep(forTimeInterval: 0.5)
        viewer.signal(SIGTERM)
        #expect(viewer.waitExit() == 0)
        host.signal(SIGTERM)
        #expect(host.waitExit() == 0)
        let reader = try Y4MReader(path: decoded)
        var numbers: [Int] = []
        while let f = try reader.nextFrame() { if let n = SyntheticVideo.readFrameNumber(f) { numbers.append(n) } }
        #expect(numbers.count > 60 && numbers.allSatisfy { (5000..<5150).contains($0) }, "\(numbers.count) pictures")
        #expect(numbers.last == 5149)
    }

    @Test func anAudioOnlyRoomFromAWAVFileIsHeardAndRecorded() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // One second of the test tone as a WAV file; the host loops it.
        let tonePath = dir + "/tone.wav", heard = dir + "/heard.wav"
        let writer = try WAVWriter(path: tonePath)
        var tone = try SyntheticAudio()
        for _ in 0..<50 { try writer.write(tone.next20ms()) }
        writer.close()
        let host = try NodeProcess(["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json", "--video", "none", "--audio", tonePath])
        let ticket = try #require(host.waitFor("ready")?["ticket"] as? String, "host: \(host.stderr)")
        let viewer = try NodeProcess(["join", ticket, "--ephemeral", "--json", "--duration", "5",
                                      "--record", dir, "--audio-out", heard])
        #expect(viewer.waitFor("recording", timeout: 10) != nil, "an audio-only stream is recorded after 2 s: \(viewer.stderr)")
        #expect(viewer.waitExit(timeout: 20) == 0)
        let media = try #require(viewer.waitFor("exit", timeout: 1)?["media"] as? [String: Any])
        #expect(media["frames"] as? Int == 0)
        #expect(media["audio_latency_p95_ms"] != nil)
        let wav = try WAVReader(path: heard)
        var samples = 0
        while let block = try wav.read(samplesPerChannel: 4800) { samples += block.count }
        #expect(samples > 48_000 * 3, "\(samples) samples heard")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".webm") }
        #expect(files.count == 1)
        if let file = files.first, let ffprobe = Self.ffprobe {
            let codecs = try Self.run(ffprobe, ["-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", dir + "/" + file])
            #expect(codecs.trimmingCharacters(in: .whitespacesAndNewlines) == "opus")
        }
        host.signal(SIGTERM)
        #expect(host.waitExit() == 0)
    }

    @Test func aNoMediaViewerGetsNoStream() throws {
        let (host, ticket) = try host()
        let viewer = try NodeProcess(["join", ticket, "--ephemeral", "--json", "--no-media", "--duration", "2"])
        #expect(viewer.waitFor("admitted") != nil)
        #expect(viewer.waitExit() == 0)
        #expect(viewer.events.contains { $0["event"] as? String == "first_frame" } == false)
        let stats = try #require(viewer.waitFor("exit", timeout: 1)?["stats"] as? [String: Any])
        // Chat-only: a handful of gossip and control messages, no media flood.
        #expect((stats["messages_in"] as? Int ?? 0) < 200, "\(stats)")
        host.signal(SIGTERM)
        _ = host.waitExit()
    }

    @Test func unusableMediaFilesAreOneClearLine() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (s1, _, e1) = try runToEnd(["host", "--ephemeral", "--listen", "127.0.0.1:0", "--video", dir + "/missing.y4m"])
        #expect(s1 == 1 && e1.contains("missing.y4m") && e1.split(separator: "\n").count == 1, "\(e1)")
        let notY4M = dir + "/text.y4m"
        try "hello".write(toFile: notY4M, atomically: true, encoding: .utf8)
        let (s2, _, e2) = try runToEnd(["host", "--ephemeral", "--listen", "127.0.0.1:0", "--video", notY4M])
        #expect(s2 == 1 && e2.contains("Y4M"), "\(e2)")
        let notWAV = dir + "/text.wav"
        try "hello".write(toFile: notWAV, atomically: true, encoding: .utf8)
        let (s3, _, e3) = try runToEnd(["host", "--ephemeral", "--listen", "127.0.0.1:0", "--audio", notWAV])
        #expect(s3 == 1 && e3.contains("text.wav"), "\(e3)")
        let (s4, _, e4) = try runToEnd(["join", "127.0.0.1:9", "--ephemeral", "--record", notY4M])
        #expect(s4 == 1 && e4.contains("not a directory"), "\(e4)")
        let (s5, _, e5) = try runToEnd(["host", "--ephemeral", "--size", "641x360"])
        #expect(s5 == 64 && e5.contains("--size"), "\(e5)")
    }
}

/// A bound UDP socket on loopback that collects RTP payload types (and the
/// header extension profiles that came with them) in the background.
final class UDPReceiver: @unchecked Sendable {
    let port: Int
    private let fd: Int32
    private let lock = NSLock()
    private var types = Set<Int>()
    private var profiles = Set<Int>()
    private var thread: Thread?

    /// Port 0: any free port.
    init(port: Int = 0) throws {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        self.fd = fd
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = UInt16(port).bigEndian
        addr.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
        var tv = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        self.port = Int(UInt16(bigEndian: addr.sin_port))
        let socketFD = fd
        let t = Thread { [weak self] in
            var buf = [UInt8](repeating: 0, count: 2048)
            while !Thread.current.isCancelled {
                let n = recv(socketFD, &buf, buf.count, 0)  // 200 ms timeout
                guard let receiver = self else { return }
                guard n >= 12 else { continue }
                let csrcEnd = 12 + 4 * Int(buf[0] & 0x0F)
                // The extension's profile: 0xBEDE one-byte form, 0x100X two-byte form (the seals).
                let profile = buf[0] & 0x10 != 0 && n >= csrcEnd + 4 ? Int(buf[csrcEnd]) << 8 | Int(buf[csrcEnd + 1]) : nil
                receiver.lock.withLock {
                    receiver.types.insert(Int(buf[1] & 0x7F))
                    if let profile { receiver.profiles.insert(profile) }
                }
            }
        }
        thread = t
        t.start()
    }

    deinit {
        thread?.cancel()
        usleep(300_000)  // the reader leaves within one receive timeout
        close(fd)
    }

    var payloadTypes: Set<Int> { lock.withLock { types } }
    var extensionProfiles: Set<Int> { lock.withLock { profiles } }
}
