import Foundation
import LVBMedia
import Testing

/// Players that know nothing of lvbnode read a viewer's `--rtp-out`: the
/// packets go out as the host sealed them (a frame's first packet carries a
/// two-byte-form header extension, lvbnode-protocol(7) MEDIA, Seals), and
/// ffmpeg (from the `--sdp` file) and GStreamer (from plain caps) must still
/// play the room, every picture the host's, in order, with its sound.
/// Scripts/setup installs both.
@Suite(.serialized, .ownThread) struct RTPOutPlayersProcessTests {
    @Test func ffmpegAndGStreamerPlayTheSealedStream() throws {
        let ffmpeg = try #require(executableOnPath("ffmpeg"), "ffmpeg is not on PATH: run Scripts/setup")
        let gst = try #require(executableOnPath("gst-launch-1.0"), "gst-launch-1.0 is not on PATH: run Scripts/setup")
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }

        let host = try NodeProcess(["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json",
                                    "--size", "320x180", "--fps", "25", "--gop", "1"])
        let ticket = try #require(host.waitFor("ready")?["ticket"] as? String, "host never became ready: \(host.stderr)")

        // GStreamer listens first (its ports bound before anything is sent), as a
        // player set up by hand from the SDP's payload types would.
        let gstPort = try freeUDPPortPair()
        let gstPlayer = try NodeProcess(["-q",
            "udpsrc", "address=127.0.0.1", "port=\(gstPort)",
            "caps=application/x-rtp,media=(string)video,clock-rate=(int)90000,encoding-name=(string)VP8,payload=(int)96",
            "!", "rtpjitterbuffer", "latency=200", "!", "rtpvp8depay", "!", "vp8dec",
            "!", "video/x-raw,format=I420", "!", "filesink", "location=\(dir)/gst.yuv",
            "udpsrc", "address=127.0.0.1", "port=\(gstPort + 2)",
            "caps=application/x-rtp,media=(string)audio,clock-rate=(int)48000,encoding-name=(string)OPUS,payload=(int)111",
            "!", "rtpjitterbuffer", "latency=200", "!", "rtpopusdepay", "!", "opusdec", "!", "audioconvert",
            "!", "audio/x-raw,format=S16LE,channels=1", "!", "filesink", "location=\(dir)/gst.pcm"],
            executable: URL(fileURLWithPath: gst))
        let gstViewer = try NodeProcess(["join", ticket, "--ephemeral", "--json", "--duration", "8",
                                         "--rtp-out", "127.0.0.1:\(gstPort)"])

        // ffmpeg reads the SDP the viewer writes as it starts.
        let ffPort = try freeUDPPortPair()
        let sdp = dir + "/room.sdp"
        let ffViewer = try NodeProcess(["join", ticket, "--ephemeral", "--json", "--duration", "8",
                                        "--rtp-out", "127.0.0.1:\(ffPort)", "--sdp", sdp])
        #expect(ffViewer.waitFor("first_frame", timeout: 20) != nil, "viewer: \(ffViewer.stderr)")
        // (NodeProcess runs any program: the players too.)
        let ffPlayer = try NodeProcess(["-nostdin", "-v", "error", "-protocol_whitelist", "file,udp,rtp", "-i", sdp,
                                        "-map", "0:v:0", "-fps_mode", "passthrough", "-t", "5", "-f", "yuv4mpegpipe", "\(dir)/ff.y4m",
                                        "-map", "0:a:0", "-ac", "1", "-t", "5", "\(dir)/ff.wav"],
                                       executable: URL(fileURLWithPath: ffmpeg))

        for (name, viewer) in [("GStreamer's viewer", gstViewer), ("ffmpeg's viewer", ffViewer)] {
            #expect(viewer.waitExit(timeout: 30) == 0, "\(name): \(viewer.stderr)")
            let media = viewer.waitFor("exit", timeout: 1)?["media"] as? [String: Any] ?? [:]
            // What went to the players had passed the seal check.
            #expect((media["verified_frames"] as? Int ?? 0) > 100, "\(name): \(media)")
            #expect(media["refused_media"] as? Int == 0, "\(name): \(media)")
        }
        // ffmpeg stops after 5 s of output; GStreamer writes raw pictures and
        // samples as they come (nothing to finish), so it is simply stopped.
        #expect(ffPlayer.waitExit(timeout: 10) == 0, "ffmpeg: \(ffPlayer.stderr)")
        gstPlayer.signal(SIGINT)
        _ = gstPlayer.waitExit(timeout: 3)  // (killed if still running)
        host.signal(SIGTERM)
        #expect(host.waitExit() == 0)

        let ffVideo = try Y4MReader(path: "\(dir)/ff.y4m")
        #expect(ffVideo.width == 320 && ffVideo.height == 180, "ffmpeg: \(ffVideo.width)x\(ffVideo.height)")
        var ffPictures: [I420Frame] = []
        while let f = try ffVideo.nextFrame() { ffPictures.append(f) }
        let ffSound = try WAVReader(path: "\(dir)/ff.wav")
        var ffSamples: [Int16] = []
        while let block = try ffSound.read(samplesPerChannel: 4800) { ffSamples += block }

        let raw = try Data(contentsOf: URL(fileURLWithPath: "\(dir)/gst.yuv"))
        let pictureBytes = 320 * 180 * 3 / 2
        #expect(raw.count % pictureBytes == 0, "GStreamer: \(raw.count) bytes of I420 is not whole 320x180 pictures")
        let gstPictures = try stride(from: 0, to: raw.count - pictureBytes + 1, by: pictureBytes).map { at in
            var f = try I420Frame(width: 320, height: 180)
            f.y = [UInt8](raw[at..<at + 320 * 180])
            f.u = [UInt8](raw[at + 320 * 180..<at + 320 * 180 + 160 * 90])
            f.v = [UInt8](raw[at + 320 * 180 + 160 * 90..<at + pictureBytes])
            return f
        }
        let pcm = try Data(contentsOf: URL(fileURLWithPath: "\(dir)/gst.pcm"))
        let gstSamples = stride(from: 0, to: pcm.count - 1, by: 2).map { Int16(bitPattern: UInt16(pcm[$0]) | UInt16(pcm[$0 + 1]) << 8) }

        for (player, pictures, samples) in [("ffmpeg", ffPictures, ffSamples), ("GStreamer", gstPictures, gstSamples)] {
            // Pictures: at 25 fps over ≥ 4 s of viewing, every one the host's, in order.
            let numbers = pictures.compactMap { SyntheticVideo.readFrameNumber($0) }
            #expect(numbers.count >= 75 && numbers.count == pictures.count,
                    "\(player): \(numbers.count) of \(pictures.count) pictures readable")
            #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 }, "\(player): frame numbers go backwards")
            // Sound: ≥ 3 s of the host's tone, not silence.
            let peak = samples.map { abs(Int($0)) }.max() ?? 0
            print("\(player): \(pictures.count) pictures (\(numbers.first ?? -1)...\(numbers.last ?? -1)), \(samples.count) samples, peak \(peak)")
            #expect(samples.count >= 48_000 * 3 && peak > 1000, "\(player): \(samples.count) samples, peak \(peak)")
        }
    }
}

/// A loopback UDP port P with P+2 free too (video and audio for `--rtp-out`).
private func freeUDPPortPair() throws -> Int {
    for _ in 0..<20 {
        let first = try UDPReceiver()
        if let second = try? UDPReceiver(port: first.port + 2) {
            _ = second
            return first.port
        }
    }
    throw POSIXError(.EADDRINUSE)
}
