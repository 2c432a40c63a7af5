#if canImport(Glibc)
import Glibc
#endif

// Live media against issue 4's targets, measured with the real lvbnode binary as
// processes over loopback UDP (host, viewers, the `lvbnode impair` relay), read
// through their --json lines. `LVBBench <seconds> media` runs this alone.
//
// The binary: $LVBNODE_BIN if set (Scripts/bench sets it to .build/release/lvbnode
// after building it), else `lvbnode` next to this LVBBench executable.
// ffmpeg, when installed, makes the video (a testsrc2 Y4M the host loops: a real
// ~1 Mbit/s stream; the synthetic pattern compresses to ~80 kbit/s) and the CPU
// reference; without it the host streams the synthetic pattern and there is none.
//
// 1. Clean loopback: host + one viewer for 12 + `seconds` s (15 by default, at most
//    30); glass-to-glass p50/p95 of video and audio over the viewer's whole run (its
//    exit event). Goals: video p95 ≤ 30 ms, audio p95 ≤ 25 ms (issue 50: sound waits
//    for no picture's seal).
//    CPU: utime + stime from /proc/PID/stat of host and viewer over a 10 s window of
//    that run, as % of one core. Reference, right after, in the same run: ffmpeg
//    encoding the same Y4M in real time with libvpx (realtime, cpu-used -6 as the
//    host's encoder, 1 Mbit/s, GOP 2 s, 1 thread) piped into an ffmpeg decoding it
//    (1 thread), over the same window. The fair viewer reference, in the same
//    window as the viewer: a second viewer forwards the stream with --rtp-out to
//    an ffmpeg that reads its SDP, receives the RTP and decodes video and audio
//    to null (1 thread) — what the viewer does, minus the session. Goal: viewer /
//    that ffmpeg ≤ 1.3.
// 2. 5 % loss each way through the relay, otherwise as 1. Goal: video p95 ≤ 120 ms.
// 3. Seals on and off (MediaBenchSeals.swift): a direct child and a relayed viewer,
//    clean and at 5 % loss, with seals and with --unsealed on every node.
// 4. Join → first decoded frame (the viewer's first_frame event: ms from its start):
//    a host with GOP 2 s (synthetic source), 15 viewers one after another, each
//    started after a random 0–2 s (a random moment in the GOP); then the same with
//    a host started with --no-gop-cache. Goal (with the cache): p95 ≤ 150 ms.
//
// Every child is stopped (SIGTERM, then SIGKILL) when its step ends or fails; a
// failed step prints what failed and the bench goes on.

enum MediaBench {
    static let width = 640, height = 360, fps = 30, bitrateKbps = 1000
    static let gopSeconds = 2.0
    static let loss = 0.05
    static let joinViewers = 15
    static let cpuWindowSeconds = 10.0

    static let goalVideoP95 = 30.0, goalLossVideoP95 = 120.0, goalJoinP95 = 150.0

    /// What one viewer run reports.
    struct StreamResult {
        var media: Substring = ""          // the viewer's exit "media" object (and what follows)
        var receivedVideoKbps: Double?     // median over the viewer's stats events (first left out)
        var receivedAudioKbps: Double?
        var receivedFPS: Double?
        var hostTargetKbps: Double?        // the host's last stats event
        var hostEncodeMS: Double?
        var hostCPU: Double?               // % of one core
        var viewerCPU: Double?
        var rtpReference: Result<Double, TextError>?  // ffmpeg receiving --rtp-out, % of one core
        var cpuWindow: Double = 0
        var relay: Substring?              // the relay's exit stats
    }

    static func runAndPrint(seconds: Double) {
        say("")
        guard let binary = locateBinary() else {
            say("live media: lvbnode binary not found: set LVBNODE_BIN to it (Scripts/bench builds .build/release/lvbnode)")
            return
        }
        let dir: String
        switch ProcessRunner.makeTemporaryDirectory("lvbbench-media") {
        case .success(let path): dir = path
        case .failure(let error): say("live media: \(error)"); return
        }
        defer { removeDirectory(dir) }

        let streamSeconds = min(30, max(12, 12 + seconds))
        let ffmpeg = ProcessRunner.findExecutable("ffmpeg")
        var y4m: String?
        var sourceLabel = "synthetic pattern (ffmpeg not installed)"
        if let ffmpeg {
            switch makeY4M(ffmpeg, dir) {
            case .success(let path): y4m = path; sourceLabel = "ffmpeg testsrc2 Y4M, looped"
            case .failure(let error): sourceLabel = "synthetic pattern (\(error))"
            }
        }
        let video = y4m.map { ["--video", $0] } ?? ["--video", "synthetic"]

        say("live media: lvbnode release binary as processes on loopback UDP (\(binary))")
        say("  stream \(width)x\(height)@\(fps), \(bitrateKbps) kbit/s, GOP \(fixed(gopSeconds, 0)) s, "
            + "synthetic audio; video: \(sourceLabel)")

        // 1. Clean loopback, with the CPU window.
        say("clean loopback, 1 viewer, \(fixed(streamSeconds, 0)) s")
        switch Result(catching: { try streamRun(binary, dir, video, loss: nil, seconds: streamSeconds, cpu: true, ffmpeg: ffmpeg) }) {
        case .failure(let error):
            say("  FAILED: \(error)")
        case .success(let r):
            printReceived(r)
            latencyRow("video", r.media, goal: goalVideoP95)
            latencyRow("audio", r.media, goal: goalSealedAudioP95)
            let reference = ffmpeg.flatMap { ffmpeg in y4m.map { cpuReference(ffmpeg, $0, dir, window: r.cpuWindow) } }
            printCPU(r, reference, ffmpegInstalled: ffmpeg != nil)
        }

        // 2. 5 % loss through the relay.
        say("\(fixed(loss * 100, 0)) % loss each way through lvbnode impair, 1 viewer (joins by address), \(fixed(streamSeconds, 0)) s")
        switch Result(catching: { try streamRun(binary, dir, video, loss: loss, seconds: streamSeconds, cpu: false) }) {
        case .failure(let error):
            say("  FAILED: \(error)")
        case .success(let r):
            printReceived(r)
            latencyRow("video", r.media, goal: goalLossVideoP95)
            latencyRow("audio", r.media, goal: nil)
            let m = r.media
            row("video lost / recovered", "\(int(m, "video_lost")) / \(int(m, "recovered")) packets, "
                + "\(int(m, "nacks")) NACKs, \(int(m, "keyframe_requests")) keyframe requests")
            row("skipped frames", "\(int(m, "skipped_frames")) of \(int(m, "frames")) decoded; audio lost \(int(m, "audio_lost")), "
                + "concealed \(int(m, "concealed"))")
            if let relay = r.relay {
                let down = section(relay, "downstream"), up = section(relay, "upstream")
                row("relay dropped", "to viewer \(int(down, "dropped"))/\(int(down, "received")), "
                    + "to host \(int(up, "dropped"))/\(int(up, "received")) datagrams")
            }
        }

        // 3. Seals on and off, a direct child and a relayed viewer (MediaBenchSeals.swift).
        printSealLatency(binary, dir, video, seconds: seconds)

        // 4. Join → first frame, with and without the GOP cache.
        say("join → first decoded frame (ms from the viewer's start): \(joinViewers) viewers one after another at "
            + "random moments, GOP \(fixed(gopSeconds, 0)) s, synthetic source; p95 of \(joinViewers) is the slowest")
        var withCache: [Double]?
        for cache in [true, false] {
            let label = cache ? "GOP cache (default)" : "--no-gop-cache"
            switch Result(catching: { try joinRun(binary, dir, gopCache: cache) }) {
            case .failure(let error):
                say("  \(label): FAILED: \(error)")
            case .success(let (times, failures)):
                // A viewer without a frame (within its 1 s) counts as slower than all others.
                let missing = joinViewers - times.count
                let sorted = times.sorted() + Array(repeating: Double.infinity, count: missing)
                let p50 = percentile(sorted, 0.50), p95 = percentile(sorted, 0.95)
                func ms(_ v: Double) -> String { v.isFinite ? fixed(v, 0) : "> 1000" }
                var value = "\(ms(p50)) / \(ms(p95)) ms"
                if missing > 0 { value += " (\(missing) without a frame)" }
                if cache {
                    row(label + " p50 / p95", value, goal: "p95 ≤ \(fixed(goalJoinP95, 0)) ms", ok: p95 <= goalJoinP95)
                    withCache = sorted
                } else {
                    row(label + " p50 / p95", value, note: "(reference)")
                    if let withCache {
                        let p50c = percentile(withCache, 0.50), p95c = percentile(withCache, 0.95)
                        if p95.isFinite && p95c.isFinite {
                            row("without / with cache, p95", "\(fixed(p95 / max(1, p95c), 1))× (the cache saves "
                                + "\(fixed(p95 - p95c, 0)) ms at p95, \(fixed(p50 - p50c, 0)) ms at p50)")
                        }
                    }
                }
                if let first = failures.first { say("    failed: \(first)") }
                if failures.count > 1, let last = failures.last { say("    ... \(last)") }
            }
        }
    }

    // MARK: - Steps

    /// Host + one viewer (through the relay when `loss` is given) for `seconds`.
    /// With `cpu`, CPU is measured over a window; with `ffmpeg` as well, a second
    /// viewer forwards the stream by --rtp-out to an ffmpeg that receives and
    /// decodes it, measured in the same window (the fair viewer reference).
    static func streamRun(_ binary: String, _ dir: String, _ video: [String], loss: Double?,
                          seconds: Double, cpu: Bool, ffmpeg: String? = nil) throws -> StreamResult {
        let tag = loss == nil ? "clean" : "loss"
        let (host, hostAddress, ticket) = try startHost(binary, dir, tag, video + [
            "--size", "\(width)x\(height)", "--fps", "\(fps)", "--gop", fixed(gopSeconds, 0),
            "--bitrate", "\(bitrateKbps)",
        ])
        defer { host.terminate() }

        var relay: ChildProcess?
        defer { relay?.terminate() }
        var peer = ticket
        if let loss {
            let relayLog = dir + "/impair.err"
            let child = try ChildProcess(binary, ["impair", "--listen", "127.0.0.1:0", "--to", hostAddress,
                                                  "--loss", fixed(loss, 3), "--json"], stderr: .file(relayLog))
            relay = child
            guard let ready = child.waitForLine(timeout: 10, { isEvent($0, "ready") }),
                  let listen = jsonString(ready[...], "listen") else {
                throw TextError("impair printed no ready event within 10 s" + exitNote(child, relayLog))
            }
            peer = listen
        }

        let viewerLog = dir + "/viewer-\(tag).err"
        let viewer = try ChildProcess(binary, ["join", peer, "--ephemeral", "--json", "--duration", fixed(seconds, 1)],
                                      stderr: .file(viewerLog))
        defer { viewer.terminate() }
        guard viewer.waitForLine(timeout: 10, { isEvent($0, "first_frame") }) != nil else {
            throw TextError("viewer: no first_frame event within 10 s" + exitNote(viewer, viewerLog))
        }
        var result = StreamResult()
        if cpu {
            var reference: RTPReference?
            defer { reference?.stop() }
            if let ffmpeg {
                switch Result(catching: { try RTPReference(binary, ffmpeg, ticket: peer, dir: dir, seconds: seconds) }) {
                case .success(let r): reference = r
                case .failure(let error): result.rtpReference = .failure(TextError("\(error)"))
                }
            }
            // Long enough for the reference ffmpeg to meet a keyframe (GOP 2 s).
            ProcessRunner.sleep(reference == nil ? 1.5 : gopSeconds + 0.5)
            let window = min(cpuWindowSeconds, seconds - 4)
            let h0 = host.cpuSeconds(), v0 = viewer.cpuSeconds(), f0 = reference?.ffmpeg.cpuSeconds()
            let t0 = ProcessRunner.now()
            ProcessRunner.sleep(window)
            let h1 = host.cpuSeconds(), v1 = viewer.cpuSeconds(), f1 = reference?.ffmpeg.cpuSeconds()
            let t1 = ProcessRunner.now()
            result.cpuWindow = t1 - t0
            if let h0, let h1 { result.hostCPU = (h1 - h0) / (t1 - t0) * 100 }
            if let v0, let v1 { result.viewerCPU = (v1 - v0) / (t1 - t0) * 100 }
            if let reference {
                if let f0, let f1, reference.ffmpeg.isRunning() {
                    result.rtpReference = .success((f1 - f0) / (t1 - t0) * 100)
                } else {
                    result.rtpReference = .failure(TextError("ffmpeg exited early" + exitNote(reference.ffmpeg, reference.log)))
                }
            }
        }
        guard let exit = viewer.waitForLine(timeout: seconds + 10, { isEvent($0, "exit") }) else {
            throw TextError("viewer: no exit event within \(fixed(seconds + 10, 0)) s" + exitNote(viewer, viewerLog))
        }
        result.media = section(exit[...], "media")
        guard jsonNumber(result.media, "video_latency_p95_ms") != nil else {
            throw TextError("viewer's exit event has no video latency: " + String(exit.prefix(300)))
        }
        let stats = viewer.lines().filter { isEvent($0, "stats") }.dropFirst().map { section($0[...], "media") }
        result.receivedVideoKbps = median(stats.compactMap { jsonNumber($0, "video_kbps") })
        result.receivedAudioKbps = median(stats.compactMap { jsonNumber($0, "audio_kbps") })
        result.receivedFPS = median(stats.compactMap { jsonNumber($0, "fps") })
        if let last = host.lines().last(where: { isEvent($0, "stats") }).map({ section($0[...], "media") }) {
            result.hostTargetKbps = jsonNumber(last, "target_kbps")
            result.hostEncodeMS = jsonNumber(last, "encode_ms")
        }
        if let relay {
            relay.terminate()
            if let exit = relay.waitForLine(timeout: 1, { isEvent($0, "exit") }) { result.relay = section(exit[...], "stats") }
        }
        return result
    }

    /// A host with the synthetic source and GOP 2 s, then `joinViewers` viewers one
    /// after another; their first_frame times (ms) and what went wrong for the others.
    static func joinRun(_ binary: String, _ dir: String, gopCache: Bool) throws -> ([Double], [String]) {
        let tag = gopCache ? "join" : "join-nocache"
        let (host, _, ticket) = try startHost(binary, dir, tag, [
            "--video", "synthetic", "--size", "\(width)x\(height)", "--fps", "\(fps)",
            "--gop", fixed(gopSeconds, 0), "--bitrate", "\(bitrateKbps)",
        ] + (gopCache ? [] : ["--no-gop-cache"]))
        defer { host.terminate() }
        var times: [Double] = [], failures: [String] = []
        for n in 0..<joinViewers {
            if times.isEmpty && failures.count >= 3 {
                failures.append("gave up after \(failures.count) viewers in a row without a frame")
                break
            }
            ProcessRunner.sleep(Double.random(in: 0...gopSeconds))
            guard host.isRunning() else {
                failures.append("host exited before viewer \(n + 1)" + exitNote(host, dir + "/host-\(tag).err"))
                break
            }
            let log = dir + "/viewer-\(tag).err"
            do {
                let viewer = try ChildProcess(binary, ["join", ticket, "--ephemeral", "--json", "--duration", "1"],
                                              stderr: .file(log))
                defer { viewer.terminate() }
                if let line = viewer.waitForLine(timeout: 3, { isEvent($0, "first_frame") }),
                   let ms = jsonNumber(line[...], "ms") {
                    times.append(ms)
                } else {
                    failures.append("viewer \(n + 1): no first_frame event" + exitNote(viewer, log))
                }
            } catch {
                failures.append("viewer \(n + 1): \(error)")
            }
        }
        return (times, failures)
    }

    /// Starts `lvbnode host` on 127.0.0.1 and waits for its ready event; the child,
    /// its address (127.0.0.1:PORT) and its ticket.
    static func startHost(_ binary: String, _ dir: String, _ tag: String,
                          _ options: [String]) throws -> (ChildProcess, String, String) {
        let log = dir + "/host-\(tag).err"
        let host = try ChildProcess(binary, ["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json"] + options,
                                    stderr: .file(log))
        guard let ready = host.waitForLine(timeout: 10, { isEvent($0, "ready") }),
              let ticket = jsonString(ready[...], "ticket"), let listen = jsonString(ready[...], "listen"),
              let port = listen.split(separator: ":").last else {
            host.terminate()
            throw TextError("host printed no ready event with a ticket within 10 s" + exitNote(host, log))
        }
        return (host, "127.0.0.1:\(port)", ticket)
    }

    /// A 10 s testsrc2 clip at the stream's size and rate.
    static func makeY4M(_ ffmpeg: String, _ dir: String) -> Result<String, TextError> {
        let path = dir + "/testsrc2.y4m", log = dir + "/ffmpeg-y4m.err"
        let arguments = ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=\(width)x\(height):rate=\(fps)",
                         "-t", "10", "-pix_fmt", "yuv420p", "-y", path]
        guard let child = try? ChildProcess(ffmpeg, arguments, stderr: .file(log)) else {
            return .failure(TextError("cannot start ffmpeg"))
        }
        defer { child.terminate() }
        guard let status = child.waitForExit(timeout: 60) else { return .failure(TextError("ffmpeg testsrc2 took over 60 s")) }
        guard status == 0 else {
            return .failure(TextError("ffmpeg testsrc2 failed (\(status)): " + ProcessRunner.lastLine(log)))
        }
        return .success(path)
    }
}
