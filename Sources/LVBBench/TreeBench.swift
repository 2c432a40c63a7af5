#if canImport(Glibc)
import Glibc
#endif

// The media tree (issue 11) with the release binary as processes on loopback UDP,
// read through their --json lines. `LVBBench <seconds> tree` runs this alone.
//
// Stream as in MediaBench: 640x360@30, 1000 kbit/s, GOP 2 s, synthetic audio; the
// video is an ffmpeg testsrc2 Y4M the host loops when ffmpeg is installed (a real
// ~1 Mbit/s stream), else the synthetic pattern.
//
// 1. Depth vs latency: a host and 4 viewers, every one --relay-slots 1, so the tree
//    is a chain in join order; each viewer joins once the one before it has its
//    place, and the chain is checked in the viewers' tree objects (viewer n at depth
//    n below viewer n-1). The viewers at depth 1, 2 and 4 decode (no output file);
//    the one at depth 3 relays without decoding (--no-media). Glass-to-glass video
//    p50 / p95 of each decoding viewer from its 2 s stats lines over the same
//    window (the median of the intervals' figures, after the chain formed).
//    Reference: depth 1, same run. Goal: each hop adds < 2 ms at p95.
//    Then the same with relays that decode nothing: a host at --relay-slots 2 with a
//    decoding leaf (the depth-1 reference) and, beside it, 3 --no-media relays in a
//    chain down to a decoding viewer at depth 4: the difference is what decoding on
//    a relay costs the viewers below it.
// 2. Host upload and CPU against the audience: a host at --relay-slots 4 with 4, 10
//    and 30 viewers (--relay-slots 4; all --no-media but the last, which decodes),
//    once every viewer has a parent: the host's send kbit/s (median of its stats
//    lines' media.send_kbps in the window; its tree.forwarded_kbps is the same
//    bytes) and CPU (utime + stime from /proc/PID/stat over the window, % of one
//    core). Reference: 4 viewers (the host's slots), same run. Goal: flat, within
//    10 % for the upload and 20 % for CPU.

enum TreeBench {
    static let chainLength = 4
    static let audiences = [4, 10, 30]
    static let slots = 4
    static let goalHopP95 = 2.0, goalUploadRatio = 1.1, goalCPURatio = 1.2

    static func runAndPrint(seconds: Double) {
        say("")
        guard let (binary, dir) = MediaBench.processWorkspace("lvbbench-tree", prefix: "media tree: ") else { return }
        defer { MediaBench.removeDirectory(dir) }

        var video = ["--video", "synthetic"], sourceLabel = "synthetic pattern (ffmpeg not installed)"
        if let ffmpeg = ProcessRunner.findExecutable("ffmpeg") {
            switch MediaBench.makeY4M(ffmpeg, dir) {
            case .success(let path): video = ["--video", path]; sourceLabel = "ffmpeg testsrc2 Y4M, looped"
            case .failure(let error): sourceLabel = "synthetic pattern (\(error))"
            }
        }
        let stream = video + ["--size", "\(MediaBench.width)x\(MediaBench.height)", "--fps", "\(MediaBench.fps)",
                              "--gop", fixed(MediaBench.gopSeconds, 0), "--bitrate", "\(MediaBench.bitrateKbps)"]
        let window = max(10, 3 * seconds)
        say("media tree: lvbnode release binary as processes on loopback UDP (\(binary))")
        say("  stream \(MediaBench.width)x\(MediaBench.height)@\(MediaBench.fps), \(MediaBench.bitrateKbps) kbit/s, "
            + "GOP \(fixed(MediaBench.gopSeconds, 0)) s, synthetic audio; video: \(sourceLabel); \(fixed(window, 0)) s windows")

        say("depth vs glass-to-glass video latency (median of the 2 s stats intervals of each decoding viewer, same window)")
        say("  a chain (host and viewers --relay-slots 1, in join order); depths 1, 2 and 4 decode and relay, depth 3 relays with --no-media")
        switch Result(catching: { try chainRun(binary, dir, "chain", stream, hostSlots: 1,
                                               chain(decoding: [1, 2, 4], length: chainLength), window: window) }) {
        case .failure(let error): say("  FAILED: \(error)")
        case .success(let byDepth): printChain(byDepth)
        }
        say("  relays that decode nothing (host --relay-slots 2): a decoding leaf at depth 1 beside a chain of "
            + "--no-media relays down to a decoding viewer at depth \(chainLength)")
        switch Result(catching: { try chainRun(binary, dir, "relays", stream, hostSlots: 2,
                                               leafBesideChain(length: chainLength), window: window) }) {
        case .failure(let error): say("  FAILED: \(error)")
        case .success(let byDepth): printChain(byDepth)
        }

        say("host upload and CPU by audience: host and viewers --relay-slots \(slots); viewers --no-media but the last, which decodes")
        var reference: Audience?
        for n in audiences {
            switch Result(catching: { try audienceRun(binary, dir, stream, viewers: n, window: window) }) {
            case .failure(let error):
                say("  \(n) viewers: FAILED: \(error)")
            case .success(let a):
                printAudience(a, reference: reference)
                if reference == nil { reference = a }
            }
        }
    }

    // MARK: - Depth vs latency

    /// One viewer of a chain, in join order: its relay slots, whether it
    /// decodes, and the place it must take (`parent`: an index into the
    /// layout, nil for the host).
    struct ChainViewer {
        var slots: Int, decodes: Bool, parent: Int?, depth: Int
    }

    /// A chain in join order (`hostSlots` on the host): each viewer below the one before it.
    static func chain(decoding: Set<Int>, length: Int) -> [ChainViewer] {
        (1...length).map { ChainViewer(slots: 1, decodes: decoding.contains($0), parent: $0 == 1 ? nil : $0 - 2, depth: $0) }
    }

    /// The reference as a leaf beside a chain of relays that decode nothing, down to a decoding viewer.
    static func leafBesideChain(length: Int) -> [ChainViewer] {
        [ChainViewer(slots: 0, decodes: true, parent: nil, depth: 1)]
            + (1..<length).map { ChainViewer(slots: 1, decodes: false, parent: $0 == 1 ? nil : $0 - 1, depth: $0) }
            + [ChainViewer(slots: 0, decodes: true, parent: length - 1, depth: length)]
    }

    /// Per decoding viewer's depth: the median over the window's stats intervals of p50 and p95 (ms) of video and of audio, and how many intervals.
    typealias Latency = (p50: Double, p95: Double, audioP50: Double?, audioP95: Double?, intervals: Int)

    /// Starts the viewers one after another, each once the one before has its
    /// place (checked in its own stats line), then reads the decoding ones'
    /// latency over the same window.
    static func chainRun(_ binary: String, _ dir: String, _ tag: String, _ stream: [String], hostSlots: Int,
                         _ layout: [ChainViewer], window: Double, viewerOptions: [String] = []) throws -> [Int: Latency] {
        let (host, _, ticket) = try MediaBench.startHost(binary, dir, tag, stream + ["--relay-slots", "\(hostSlots)"])
        var children = [host]
        defer { for c in children.reversed() { c.terminate() } }
        guard let hostID = host.lines().first(where: { isEvent($0, "ready") }).flatMap({ jsonString($0[...], "id") }) else {
            throw TextError("host: no id in its ready event")
        }
        var ids: [String] = [], viewers: [ChildProcess] = []
        for (n, v) in layout.enumerated() {
            let log = "\(dir)/\(tag)-\(n).err"
            let viewer = try ChildProcess(binary, ["join", ticket, "--ephemeral", "--json", "--listen", "127.0.0.1:0",
                                                   "--relay-slots", "\(v.slots)"] + (v.decodes ? [] : ["--no-media"]) + viewerOptions,
                                          stderr: .file(log))
            children.append(viewer)
            guard let id = viewer.waitForLine(timeout: 10, { isEvent($0, "ready") }).flatMap({ jsonString($0[...], "id") }) else {
                throw TextError("viewer \(n + 1): no ready event" + MediaBench.exitNote(viewer, log))
            }
            let parent = v.parent.map { ids[$0] } ?? hostID
            guard viewer.waitForLine(timeout: 12, { line in
                isEvent(line, "stats") && treeParent(line) == parent && treeNumber(line, "depth") == Double(v.depth)
            }) != nil else {
                let last = viewer.lines().last { isEvent($0, "stats") }.map { String(section($0[...], "tree").prefix(200)) } ?? "no stats"
                throw TextError("viewer \(n + 1) did not settle at depth \(v.depth) where expected: \(last)" + MediaBench.exitNote(viewer, log))
            }
            ids.append(id)
            viewers.append(viewer)
        }
        // One interval for the last GOP burst to pass, then the window.
        ProcessRunner.sleep(2.5)
        let start = viewers.map { $0.lines().count }
        ProcessRunner.sleep(window)
        var result: [Int: Latency] = [:]
        for ((v, viewer), from) in zip(zip(layout, viewers), start) where v.decodes {
            let lines = viewer.lines().dropFirst(from).filter { isEvent($0, "stats") }
            if let moved = lines.first(where: { treeNumber($0, "depth") != Double(v.depth) }) {
                throw TextError("the viewer at depth \(v.depth) moved during the window: " + String(section(moved[...], "tree").prefix(200)))
            }
            let media = lines.map { section($0[...], "media") }
            let p50 = media.compactMap { jsonNumber($0, "video_latency_p50_ms") }
            let p95 = media.compactMap { jsonNumber($0, "video_latency_p95_ms") }
            guard let m50 = MediaBench.median(p50), let m95 = MediaBench.median(p95) else {
                throw TextError("the viewer at depth \(v.depth): no video latency in its stats lines")
            }
            let a50 = MediaBench.median(media.compactMap { jsonNumber($0, "audio_latency_p50_ms") })
            let a95 = MediaBench.median(media.compactMap { jsonNumber($0, "audio_latency_p95_ms") })
            result[v.depth] = (m50, m95, a50, a95, p95.count)
        }
        return result
    }

    static func printChain(_ byDepth: [Int: Latency]) {
        guard let reference = byDepth[1] else { say("  no depth-1 figures"); return }
        for depth in byDepth.keys.sorted() {
            guard let l = byDepth[depth] else { continue }
            let value = "\(fixed(l.p50, 1)) / \(fixed(l.p95, 1)) ms (\(l.intervals))"
            if depth == 1 {
                row("depth 1 p50 / p95", value, note: "(reference)")
            } else {
                let hops = Double(depth - 1)
                let perHop = (l.p95 - reference.p95) / hops, perHop50 = (l.p50 - reference.p50) / hops
                row("depth \(depth) p50 / p95", value)
                row("  added per hop, p50 / p95", "\(signed(perHop50)) / \(signed(perHop)) ms",
                    goal: "p95 < \(fixed(goalHopP95, 0)) ms", ok: perHop < goalHopP95)
            }
        }
    }

    // MARK: - Host upload and CPU

    struct Audience {
        var viewers = 0
        var sendKbps: Double?
        var forwardedKbps: Double?
        var directChildren: Int?
        var maxDepth = 0
        var cpu: Double?        // % of one core
        var relayCPU: Double?   // mean over the viewers that had children, % of one core
        var relays = 0
        var decoderFPS: Double?
        var window = 0.0
    }

    static func audienceRun(_ binary: String, _ dir: String, _ stream: [String], viewers n: Int, window: Double) throws -> Audience {
        let tag = "audience\(n)"
        let (host, _, ticket) = try MediaBench.startHost(binary, dir, tag, stream + ["--relay-slots", "\(slots)"])
        var children = [host]
        defer { for c in children.reversed() { c.terminate(grace: 1) } }
        var viewers: [ChildProcess] = []
        for i in 0..<n {
            let log = "\(dir)/\(tag)-\(i).err"
            let media = i == n - 1 ? [] : ["--no-media"]
            let viewer = try ChildProcess(binary, ["join", ticket, "--ephemeral", "--json", "--listen", "127.0.0.1:0",
                                                   "--relay-slots", "\(slots)"] + media, stderr: .file(log))
            children.append(viewer)
            viewers.append(viewer)
            guard viewer.waitForLine(timeout: 10, { isEvent($0, "admitted") }) != nil else {
                throw TextError("viewer \(i + 1): not admitted within 10 s" + MediaBench.exitNote(viewer, log))
            }
        }
        // Every viewer attached (a parent in its latest stats line), two lines in a row.
        let deadline = ProcessRunner.now() + 30
        func attached(_ v: ChildProcess) -> Bool {
            let stats = v.lines().filter { isEvent($0, "stats") }.suffix(2)
            return stats.count == 2 && stats.allSatisfy { treeParent($0) != nil }
        }
        while !viewers.allSatisfy(attached) {
            guard ProcessRunner.now() < deadline else {
                throw TextError("\(viewers.filter { !attached($0) }.count) of \(n) viewers without a parent after 30 s")
            }
            ProcessRunner.sleep(0.25)
        }
        let hostFrom = host.lines().count
        let c0 = ([host] + viewers).map { $0.cpuSeconds() }
        let t0 = ProcessRunner.now()
        ProcessRunner.sleep(window)
        let c1 = ([host] + viewers).map { $0.cpuSeconds() }
        let t1 = ProcessRunner.now()
        var a = Audience(viewers: n, window: t1 - t0)
        func percent(_ i: Int) -> Double? {
            guard let before = c0[i], let after = c1[i] else { return nil }
            return (after - before) / (t1 - t0) * 100
        }
        a.cpu = percent(0)
        let hostStats = host.lines().dropFirst(hostFrom).filter { isEvent($0, "stats") }
        a.sendKbps = MediaBench.median(hostStats.compactMap { jsonNumber(section($0[...], "media"), "send_kbps") })
        a.forwardedKbps = MediaBench.median(hostStats.compactMap { treeNumber($0, "forwarded_kbps") })
        a.directChildren = hostStats.last.flatMap { treeNumber($0, "children") }.map { Int($0) }
        var relayCPU: [Double] = []
        for (i, v) in viewers.enumerated() {
            guard let last = v.lines().last(where: { isEvent($0, "stats") }) else { continue }
            a.maxDepth = max(a.maxDepth, Int(treeNumber(last, "depth") ?? 0))
            if (treeNumber(last, "children") ?? 0) > 0, let cpu = percent(i + 1) { relayCPU.append(cpu) }
        }
        a.relays = relayCPU.count
        a.relayCPU = relayCPU.isEmpty ? nil : relayCPU.reduce(0, +) / Double(relayCPU.count)
        a.decoderFPS = viewers.last.flatMap { v in
            MediaBench.median(v.lines().filter { isEvent($0, "stats") }.suffix(3).compactMap { jsonNumber(section($0[...], "media"), "fps") })
        }
        return a
    }

    static func printAudience(_ a: Audience, reference: Audience?) {
        let upload = a.sendKbps.map { fixed($0, 0) + " kbit/s" } ?? "?", cpu = a.cpu.map { fixed($0, 1) + " %" } ?? "?"
        if let reference {
            let up = ratioValue(a.sendKbps, reference.sendKbps), c = ratioValue(a.cpu, reference.cpu)
            row("\(a.viewers) viewers: host upload", upload + ", " + (up.map { fixed($0, 2) + "×" } ?? "?"),
                goal: "≤ \(fixed(goalUploadRatio, 1))×", ok: up.map { $0 <= goalUploadRatio } ?? false)
            row("\(a.viewers) viewers: host CPU", cpu + ", " + (c.map { fixed($0, 2) + "×" } ?? "?"),
                goal: "≤ \(fixed(goalCPURatio, 1))×", ok: c.map { $0 <= goalCPURatio } ?? false)
        } else {
            row("\(a.viewers) viewers: host upload", upload, note: "(reference)")
            row("\(a.viewers) viewers: host CPU", cpu + " of one core", note: "(reference, \(fixed(a.window, 1)) s window)")
        }
        var detail = "    \(a.directChildren.map(String.init) ?? "?") direct children, tree depth \(a.maxDepth), "
            + "forwarded_kbps \(a.forwardedKbps.map { fixed($0, 0) } ?? "?")"
        if let relay = a.relayCPU { detail += "; \(a.relays) relaying viewers at \(fixed(relay, 1)) % CPU each (mean)" }
        detail += "; the decoding viewer at \(a.decoderFPS.map { fixed($0, 1) } ?? "?") fps"
        say(detail)
    }

    // MARK: - Reading and printing

    static func treeParent(_ line: String) -> String? { jsonString(section(line[...], "tree"), "parent") }
    static func treeNumber(_ line: String, _ key: String) -> Double? { jsonNumber(section(line[...], "tree"), key) }

    static func ratioValue(_ a: Double?, _ b: Double?) -> Double? {
        guard let a, let b, b > 0 else { return nil }
        return a / b
    }

    static func signed(_ v: Double) -> String { (v >= 0 ? "+" : "") + fixed(v, 1) }

    static func row(_ label: String, _ value: String, goal: String? = nil, ok: Bool = false, note: String? = nil) {
        MediaBench.row(label, value, goal: goal, ok: ok, note: note)
    }

    static func say(_ line: String) { MediaBench.say(line) }
    static func fixed(_ v: Double, _ decimals: Int) -> String { MediaBench.fixed(v, decimals) }
    static func isEvent(_ line: String, _ name: String) -> Bool { MediaBench.isEvent(line, name) }
    static func section(_ line: Substring, _ key: String) -> Substring { MediaBench.section(line, key) }
    static func jsonString(_ line: Substring, _ key: String) -> String? { MediaBench.jsonString(line, key) }
    static func jsonNumber(_ line: Substring, _ key: String) -> Double? { MediaBench.jsonNumber(line, key) }
}
