#if canImport(Glibc)
import Glibc
#endif

// What the room layer costs each member as the room grows (issue 28), the release
// binary as processes on loopback UDP: a host without media (--video none --audio
// none) and N viewers joined with --no-media, an idle room (no chat). Once every
// viewer is in and the room has settled (10 s), over a 20 s window: each viewer's
// bytes in per second (its transport's bytes_in, from the `stats` line `/stats`
// prints, asked at the window's start and end) and CPU (utime + stime from
// /proc/PID/stat, % of one core); and how long the N joins took one after another.
// Reference: the smallest room, same run. Goal (issue 28): per viewer, the largest
// room costs no more than 1.25× the smallest, idle ≤ 2 KB/s and ≤ 0.5 % of a core.
// `LVBBench <seconds> presence [N,N,…]` runs this alone (default 40,160,320 viewers).

enum PresenceBench {
    private typealias M = MediaBench

    static let defaultSizes = [40, 160, 320]
    static let settle = 10.0, window = 20.0
    static let goalRatio = 1.25, goalBytesPerSecond = 2048.0, goalCPU = 0.5

    struct Room {
        var viewers: Int
        var joinSeconds = 0.0
        /// Per viewer, over the window.
        var bytesPerSecond: [Double] = []
        var cpuPercent: [Double] = []

        var meanBytes: Double? { PresenceBench.mean(bytesPerSecond) }
        var meanCPU: Double? { PresenceBench.mean(cpuPercent) }
    }

    static func runAndPrint(sizes: [Int]) {
        M.say("")
        guard let (binary, dir) = MediaBench.processWorkspace("lvbbench-presence", prefix: "room cost per member: ") else { return }
        defer { MediaBench.removeDirectory(dir) }
        M.say("room cost per member: lvbnode release binary as processes on loopback UDP (\(binary))")
        M.say("  a host without media and N --no-media viewers, an idle room; each viewer's bytes in and CPU over "
            + "\(M.fixed(window, 0)) s, after \(M.fixed(settle, 0)) s to settle")
        var reference: Room?
        for n in sizes {
            switch Result(catching: { try run(binary, dir, viewers: n) }) {
            case .failure(let error):
                M.say("  \(n) viewers: FAILED: \(error)")
            case .success(let room):
                printRoom(room, reference: reference)
                if reference == nil { reference = room }
            }
        }
    }

    static func run(_ binary: String, _ dir: String, viewers n: Int) throws -> Room {
        let tag = "presence\(n)"
        let (host, _, ticket) = try MediaBench.startHost(binary, dir, tag, ["--video", "none", "--audio", "none"])
        var viewers: [ChildProcess] = [], inputs: [Int32] = []
        defer {
            for fd in inputs { close(fd) }
            for c in viewers.reversed() { c.terminate(grace: 1) }
            host.terminate(grace: 1)
        }
        var room = Room(viewers: n)
        let joinStart = ProcessRunner.now()
        for i in 0..<n {
            let log = "\(dir)/\(tag)-\(i).err"
            let (viewer, input) = try MixStage.startWithInput(binary, ["join", ticket, "--ephemeral", "--json",
                                                                       "--listen", "127.0.0.1:0", "--no-media"], log: log)
            viewers.append(viewer)
            inputs.append(input)
            guard viewer.waitForLine(timeout: 20, { M.isEvent($0, "admitted") }) != nil else {
                throw TextError("viewer \(i + 1): not admitted within 20 s" + MediaBench.exitNote(viewer, log))
            }
        }
        room.joinSeconds = ProcessRunner.now() - joinStart
        ProcessRunner.sleep(settle)
        let before = try bytesIn(viewers, inputs)
        let c0 = viewers.map { $0.cpuSeconds() }, t0 = ProcessRunner.now()
        ProcessRunner.sleep(window)
        let c1 = viewers.map { $0.cpuSeconds() }, t1 = ProcessRunner.now()
        let after = try bytesIn(viewers, inputs)
        let span = t1 - t0
        room.bytesPerSecond = zip(before, after).map { ($1 - $0) / span }
        room.cpuPercent = zip(c0, c1).compactMap { a, b in a.flatMap { a in b.map { ($0 - a) / span * 100 } } }
        return room
    }

    /// Each viewer's bytes in so far: `/stats` to each, then the transport's
    /// bytes_in of the `stats` line it prints in answer.
    static func bytesIn(_ viewers: [ChildProcess], _ inputs: [Int32]) throws -> [Double] {
        let marks = viewers.map { $0.lines().count }
        for fd in inputs { MixStage.send("/stats", to: fd) }
        let deadline = ProcessRunner.now() + 10
        var found = [Double?](repeating: nil, count: viewers.count)
        while found.contains(where: { $0 == nil }) {
            for (i, v) in viewers.enumerated() where found[i] == nil {
                found[i] = v.lines().dropFirst(marks[i]).lazy
                    .filter { M.isEvent($0, "stats") }
                    .compactMap { M.jsonNumber(M.section($0[...], "transport"), "bytes_in") }
                    .first
            }
            guard ProcessRunner.now() < deadline else {
                throw TextError("\(found.filter { $0 == nil }.count) of \(viewers.count) viewers did not answer /stats within 10 s")
            }
            ProcessRunner.sleep(0.05)
        }
        return found.compactMap { $0 }
    }

    static func printRoom(_ r: Room, reference: Room?) {
        let bytes = r.meanBytes, cpu = r.meanCPU
        let bytesText = bytes.map { M.fixed($0 / 1024, 2) + " KB/s" } ?? "?", cpuText = cpu.map { M.fixed($0, 2) + " %" } ?? "?"
        let label = "\(r.viewers) viewers"
        if let reference {
            let b = ratio(bytes, reference.meanBytes), c = ratio(cpu, reference.meanCPU)
            M.row("\(label): bytes in per viewer", bytesText + ", " + (b.map { M.fixed($0, 2) + "×" } ?? "?"),
                goal: "≤ \(M.fixed(goalRatio, 2))×, ≤ 2 KB/s", ok: (b.map { $0 <= goalRatio } ?? false) && (bytes ?? .infinity) <= goalBytesPerSecond)
            M.row("\(label): CPU per viewer", cpuText + ", " + (c.map { M.fixed($0, 2) + "×" } ?? "?"),
                goal: "≤ \(M.fixed(goalRatio, 2))×, ≤ 0.5 %", ok: (c.map { $0 <= goalRatio } ?? false) && (cpu ?? .infinity) <= goalCPU)
        } else {
            M.row("\(label): bytes in per viewer", bytesText, note: "(reference)")
            M.row("\(label): CPU per viewer", cpuText + " of one core", note: "(reference)")
        }
        let most = r.bytesPerSecond.max().map { M.fixed($0 / 1024, 2) + " KB/s" } ?? "?"
        let busiest = r.cpuPercent.max().map { M.fixed($0, 2) + " %" } ?? "?"
        M.say("    busiest viewer \(most), \(busiest); \(r.viewers) joins one after another in \(M.fixed(r.joinSeconds, 1)) s")
    }

    static func mean(_ values: [Double]) -> Double? { values.isEmpty ? nil : values.reduce(0, +) / Double(values.count) }

    static func ratio(_ a: Double?, _ b: Double?) -> Double? {
        guard let a, let b, b > 0 else { return nil }
        return a / b
    }
}
