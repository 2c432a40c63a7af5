import LVBMedia

#if canImport(Glibc)
import Glibc
#endif

// Guest → host → viewer glass-to-glass with the release binary as processes on
// loopback: `lvbnode host --size 640x360`, a `join` that asks for the stage
// (/linkmic on its stdin; /accept on the host's), and a viewer writing the mix
// as Y4M to a pipe we read (--video-out -). Each picture the viewer writes
// carries two capture times (ms mod 65536, each node's wall clock — one
// machine, one clock) drawn by SyntheticVideo: the host's at the bottom of the
// canvas, the guest's at the bottom of the guest's picture, now in the pip
// tile (read after scaling the tile back up). With A the time we read the
// picture, H the host's and G the guest's capture time:
//   guest → host   H − G: the guest's capture to the host picture it was mixed
//                  into (guest encode, network, host receive and decode, the
//                  wait for the host's slot and for the sound captured with it);
//   host → viewer  A − H: the host's mix and encode, network, viewer, our pipe;
//   guest → viewer A − G: what a viewer sees of the guest.

enum MixStage {
    static let width = 640, height = 360
    static let goalGuestToHostP95 = 60.0

    struct Samples {
        var guestToHost: [Double] = [], hostToViewer: [Double] = [], guestToViewer: [Double] = []
        var pictures = 0, unread = 0
        var viewerExit: Substring = ""
    }

    static func runAndPrint(seconds: Double) {
        let watch = min(20, max(5, 1.5 * seconds))
        say("link-mic glass-to-glass: lvbnode as processes on loopback UDP (host --size \(width)x\(height), a guest "
            + "on stage (/linkmic, /accept), a viewer with --video-out - read for \(fixed(watch, 1)) s); \(runs) runs, "
            + "each with new processes")
        guard let binary = MediaBench.locateBinary() else {
            say("  lvbnode binary not found: set LVBNODE_BIN to it (Scripts/bench builds .build/release/lvbnode)")
            return
        }
        let dir: String
        switch ProcessRunner.makeTemporaryDirectory("lvbbench-stage") {
        case .success(let path): dir = path
        case .failure(let error): say("  \(error)"); return
        }
        defer { MediaBench.removeDirectory(dir) }
        signal(SIGPIPE, SIG_IGN)  // a child that died must not kill us when we write its stdin
        var all = Samples(), perRun: [String] = []
        for n in 1...runs {
            do {
                let s = try run(binary, dir, watch: watch)
                all.guestToHost += s.guestToHost
                all.hostToViewer += s.hostToViewer
                all.guestToViewer += s.guestToViewer
                all.pictures += s.pictures
                all.unread += s.unread
                perRun.append(pair(s.guestToHost).text + (viewerLatency(s.viewerExit).map { " (viewer's own host → viewer \($0))" } ?? ""))
            } catch {
                perRun.append("FAILED: \(error)")
            }
            say("    run \(n): guest → host p50 / p95 " + perRun[n - 1])
        }
        guard all.pictures > 0 else { return }
        let guestToHost = pair(all.guestToHost)
        row("guest → host p50 / p95", guestToHost.text, goal: "p95 ≤ \(fixed(goalGuestToHostP95, 0)) ms",
            ok: guestToHost.p95 <= goalGuestToHostP95)
        say("    all runs: the guest's capture → the host picture it is mixed into (H − G, \(all.guestToHost.count) guest pictures)")
        row("host → viewer p50 / p95", pair(all.hostToViewer).text)
        row("guest → viewer p50 / p95", pair(all.guestToViewer).text, note: "what the audience sees of the guest")
        say("    \(all.pictures) pictures read, \(all.unread) with a capture time we could not read")
    }

    static let runs = 3

    static func pair(_ values: [Double]) -> (text: String, p95: Double) {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return ("no readable pictures", .infinity) }
        let p95 = percentile(sorted, 0.95)
        return ("\(fixed(percentile(sorted, 0.5), 1)) / \(fixed(p95, 1)) ms", p95)
    }

    static func viewerLatency(_ exit: Substring) -> String? {
        let media = MediaBench.section(exit, "media")
        guard let p50 = MediaBench.jsonNumber(media, "video_latency_p50_ms"),
              let p95 = MediaBench.jsonNumber(media, "video_latency_p95_ms") else { return nil }
        return "\(fixed(p50, 1)) / \(fixed(p95, 1)) ms"
    }

    // MARK: - The processes

    static func run(_ binary: String, _ dir: String, watch: Double) throws -> Samples {
        let hostLog = dir + "/host.err", guestLog = dir + "/guest.err", viewerLog = dir + "/viewer.err"
        let (host, hostIn) = try startWithInput(binary, ["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json",
                                                         "--size", "\(width)x\(height)"], log: hostLog)
        defer { close(hostIn); host.terminate() }
        guard let ready = host.waitForLine(timeout: 10, { MediaBench.isEvent($0, "ready") }),
              let ticket = MediaBench.jsonString(ready[...], "ticket") else {
            throw TextError("host printed no ready event within 10 s" + MediaBench.exitNote(host, hostLog))
        }
        let (guest, guestIn) = try startWithInput(binary, ["join", ticket, "--ephemeral", "--json"], log: guestLog)
        defer { close(guestIn); guest.terminate() }
        guard guest.waitForLine(timeout: 10, { MediaBench.isEvent($0, "first_frame") }) != nil else {
            throw TextError("guest: no first_frame event within 10 s" + MediaBench.exitNote(guest, guestLog))
        }
        send("/linkmic", to: guestIn)
        guard host.waitForLine(timeout: 10, { MediaBench.isEvent($0, "linkmic_request") }) != nil else {
            throw TextError("host printed no linkmic_request within 10 s of /linkmic" + MediaBench.exitNote(host, hostLog))
        }
        send("/accept", to: hostIn)
        guard host.waitForLine(timeout: 10, { MediaBench.isEvent($0, "linkmic_started") }) != nil else {
            throw TextError("host printed no linkmic_started within 10 s of /accept" + MediaBench.exitNote(host, hostLog))
        }

        guard let fds = ProcessRunner.makePipe() else { throw TextError("pipe: " + String(cString: strerror(errno))) }
        defer { close(fds[0]) }
        let viewer: ChildProcess
        do {
            viewer = try ChildProcess(binary, ["join", ticket, "--ephemeral", "--json", "--video-out", "-",
                                               "--duration", fixed(watch + 3, 0)],
                                      stdout: .descriptor(fds[1]), stderr: .file(viewerLog))
        } catch {
            close(fds[1])
            throw error
        }
        close(fds[1])
        defer { viewer.terminate() }
        // The first pictures are the host's cached GOP (old on arrival) and the guest's first: skip 2 s.
        var samples = try read(fds[0], seconds: watch + 2, skip: 2)
        drain(fds[0], until: viewer, seconds: 6)
        if viewer.waitForExit(timeout: 1) != nil {
            samples.viewerExit = ProcessRunner.readText(viewerLog).split(separator: "\n")
                .last { MediaBench.isEvent(String($0), "exit") } ?? ""
        }
        if samples.pictures == 0 {
            throw TextError("the viewer wrote no pictures" + MediaBench.exitNote(viewer, viewerLog))
        }
        return samples
    }

    /// A child reading its stdin from a pipe; the child and the pipe's write end (ours to close).
    static func startWithInput(_ binary: String, _ arguments: [String], log: String,
                               stdout: ChildProcess.Output = .lines) throws -> (ChildProcess, Int32) {
        guard let fds = ProcessRunner.makePipe() else { throw TextError("pipe: " + String(cString: strerror(errno))) }
        defer { close(fds[0]) }
        do {
            return (try ChildProcess(binary, arguments, stdin: fds[0], stdout: stdout, stderr: .file(log)), fds[1])
        } catch {
            close(fds[1])
            throw error
        }
    }

    static func send(_ line: String, to fd: Int32) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    // MARK: - The viewer's pictures

    /// Reads Y4M pictures from `fd` for `seconds`, timing each as its last byte
    /// arrives; pictures in the first `skip` seconds are not counted.
    static func read(_ fd: Int32, seconds: Double, skip: Double) throws -> Samples {
        var samples = Samples()
        var buffer: [UInt8] = [], header: (width: Int, height: Int)?
        var lastGuest: Int?
        let start = ProcessRunner.now()
        var chunk = [UInt8](repeating: 0, count: 256 * 1024)
        while ProcessRunner.now() - start < seconds {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 100) > 0 else { continue }
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            let arrived = wallMilliseconds()
            buffer += chunk[0..<n]
            if header == nil {
                guard let newline = buffer.firstIndex(of: 10) else { continue }
                header = try parseHeader(buffer[..<newline])
                buffer.removeFirst(newline + 1)
            }
            guard let (w, h) = header else { continue }
            let frameBytes = 6 + w * h * 3 / 2
            while buffer.count >= frameBytes {
                defer { buffer.removeFirst(frameBytes) }
                guard ProcessRunner.now() - start >= skip, var picture = try? I420Frame(width: w, height: h) else { continue }
                picture.y.withUnsafeMutableBufferPointer { out in
                    buffer.withUnsafeBufferPointer { src in out.baseAddress!.update(from: src.baseAddress! + 6, count: w * h) }
                }
                samples.pictures += 1
                let tile = StageRect.rects(for: .pip, participants: 2, width: w, height: h)[1]
                guard let host = SyntheticVideo.readCaptureMilliseconds(picture),
                      let guest = MixLoop.tilePicture(picture, tile, width: width, height: height)
                        .flatMap(SyntheticVideo.readCaptureMilliseconds) else {
                    samples.unread += 1
                    continue
                }
                func since(_ earlier: Int, _ later: Int) -> Double { Double((later - earlier) & 0xFFFF) }
                samples.hostToViewer.append(since(host, arrived))
                // A guest picture held over several host pictures counts once, when it first shows.
                guard guest != lastGuest else { continue }
                lastGuest = guest
                samples.guestToHost.append(since(guest, host))
                samples.guestToViewer.append(since(guest, arrived))
            }
        }
        return samples
    }

    /// Reads and drops what `child` still writes (so it is never stuck on a full pipe) until it exits.
    static func drain(_ fd: Int32, until child: ChildProcess, seconds: Double) {
        let deadline = ProcessRunner.now() + seconds
        var chunk = [UInt8](repeating: 0, count: 256 * 1024)
        while child.isRunning() && ProcessRunner.now() < deadline {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 50) > 0 else { continue }
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n == 0 || (n < 0 && errno != EINTR) { break }
        }
    }

    static func parseHeader(_ line: ArraySlice<UInt8>) throws -> (Int, Int) {
        let words = String(decoding: line, as: UTF8.self).split(separator: " ")
        guard words.first == "YUV4MPEG2",
              let w = words.first(where: { $0.hasPrefix("W") }).flatMap({ Int($0.dropFirst()) }),
              let h = words.first(where: { $0.hasPrefix("H") }).flatMap({ Int($0.dropFirst()) }), w > 0, h > 0 else {
            throw TextError("the viewer's --video-out is not Y4M: " + String(decoding: line.prefix(80), as: UTF8.self))
        }
        return (w, h)
    }

    /// Wall-clock ms mod 65536, as SyntheticVideoSource draws it.
    static func wallMilliseconds() -> Int {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return (Int(ts.tv_sec) * 1000 + Int(ts.tv_nsec) / 1_000_000) & 0xFFFF
    }

    static func row(_ label: String, _ value: String, goal: String? = nil, ok: Bool = false, note: String? = nil) {
        MediaBench.row(label, value, goal: goal, ok: ok, note: note)
    }
    static func say(_ line: String) { MediaBench.say(line) }
    static func fixed(_ v: Double, _ decimals: Int) -> String { VP8Bench.fixed(v, decimals) }
}
