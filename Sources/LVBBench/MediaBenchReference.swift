#if canImport(Glibc)
import Glibc
#endif

// MediaBench's CPU references: ffmpeg doing the host's and the viewer's work.

extension MediaBench {
    static let goalViewerOverRTPReference = 1.3

    /// The fair viewer reference: a second viewer of the same host forwards the
    /// stream unchanged with --rtp-out, and ffmpeg receives it through the SDP
    /// file that viewer writes and decodes video and audio (one thread) to null:
    /// UDP receive, RTP, jitter buffer, VP8 and Opus decode — the viewer's work
    /// without the session's decryption.
    struct RTPReference {
        let viewer: ChildProcess
        let ffmpeg: ChildProcess
        let log: String
        static var arguments: [String] {
            ["-v", "error", "-threads", "1", "-protocol_whitelist", "file,udp,rtp", "-i", "SDP",
             "-map", "0:v", "-map", "0:a", "-f", "null", "-"]
        }

        init(_ binary: String, _ ffmpeg: String, ticket: String, dir: String, seconds: Double) throws {
            let sdp = dir + "/reference.sdp", viewerLog = dir + "/viewer-reference.err"
            log = dir + "/ffmpeg-rtp.err"
            // Even, so RTCP (port + 1) and audio (port + 2, + 3) stay in range.
            let port = 2 * Int.random(in: 10_000..<30_000)
            viewer = try ChildProcess(binary, ["join", ticket, "--ephemeral", "--json", "--duration", fixed(seconds, 1),
                                               "--rtp-out", "127.0.0.1:\(port)", "--sdp", sdp],
                                      stderr: .file(viewerLog))
            let deadline = ProcessRunner.now() + 10
            while ProcessRunner.readFile(sdp).map({ $0.isEmpty }) ?? true {
                guard ProcessRunner.now() < deadline, viewer.isRunning() else {
                    viewer.terminate()
                    throw TextError("reference viewer wrote no SDP within 10 s" + exitNote(viewer, viewerLog))
                }
                ProcessRunner.sleep(0.05)
            }
            do {
                self.ffmpeg = try ChildProcess(ffmpeg, Self.arguments.map { $0 == "SDP" ? sdp : $0 }, stdout: .null,
                                               stderr: .file(log))
            } catch {
                viewer.terminate()
                throw error
            }
        }

        func stop() {
            ffmpeg.terminate()
            viewer.terminate()
        }
    }

    /// ffmpeg encoding `y4m` in real time with libvpx piped into an ffmpeg decoding it;
    /// their CPU (% of one core) over `window` seconds, or what failed.
    static func cpuReference(_ ffmpeg: String, _ y4m: String, _ dir: String,
                             window: Double) -> Result<(encode: Double, decode: Double), TextError> {
        guard let fds = ProcessRunner.makePipe() else {
            return .failure(TextError("pipe: " + String(cString: strerror(errno))))
        }
        var open = [fds[0], fds[1]]
        defer { for fd in open { close(fd) } }
        let encodeLog = dir + "/ffmpeg-encode.err", decodeLog = dir + "/ffmpeg-decode.err"
        let encoder: ChildProcess, decoder: ChildProcess
        do {
            encoder = try ChildProcess(ffmpeg, ["-v", "error", "-re", "-stream_loop", "-1", "-i", y4m,
                                                "-t", fixed(window + 5, 0)] + referenceEncoderSettings + ["-f", "webm", "-"],
                                       stdout: .descriptor(fds[1]), stderr: .file(encodeLog))
        } catch {
            return .failure(TextError("\(error)"))
        }
        defer { encoder.terminate() }
        do {
            decoder = try ChildProcess(ffmpeg, ["-v", "error", "-threads", "1", "-i", "-", "-f", "null", "-"],
                                       stdin: fds[0], stdout: .null, stderr: .file(decodeLog))
        } catch {
            return .failure(TextError("\(error)"))
        }
        defer { decoder.terminate() }
        for fd in open { close(fd) }
        open = []

        ProcessRunner.sleep(1.5)
        let e0 = encoder.cpuSeconds(), d0 = decoder.cpuSeconds(), t0 = ProcessRunner.now()
        ProcessRunner.sleep(window)
        let e1 = encoder.cpuSeconds(), d1 = decoder.cpuSeconds(), t1 = ProcessRunner.now()
        guard encoder.isRunning() else {
            return .failure(TextError("ffmpeg encoder exited early" + exitNote(encoder, encodeLog)))
        }
        guard decoder.isRunning() else {
            return .failure(TextError("ffmpeg decoder exited early" + exitNote(decoder, decodeLog)))
        }
        guard let e0, let e1, let d0, let d1 else { return .failure(TextError("cannot read /proc/PID/stat of ffmpeg")) }
        return .success(((e1 - e0) / (t1 - t0) * 100, (d1 - d0) / (t1 - t0) * 100))
    }

    /// libvpx as the host's VP8Encoder sets it: realtime, cpu-used -6, 1 Mbit/s, GOP 2 s, 1 thread.
    static var referenceEncoderSettings: [String] {
        ["-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "-6", "-b:v", "\(bitrateKbps)k",
         "-g", "\(Int(gopSeconds) * fps)", "-threads", "1"]
    }
}
