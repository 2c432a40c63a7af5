#if canImport(Glibc)
import Glibc
#endif

// What the room layer costs each member as the room grows (issue 28), the release
// binary as processes on loopback UDP: a host without media (--video none --audio
// none) and N viewers joined with --no-media. Once every viewer is in and the room
// has settled (10 s): every member's count (`/viewers`) against the truth; each
// viewer's bytes in per second (its transport's bytes_in, from `/stats`) and CPU
// (utime + stime from /proc/PID/stat, % of one core) over 20 s of an idle room and
// 20 s of a room chatting at 90 % of its chat rate (10 authors); how many members
// each accepted line reached and how late (the line's timestamp against when the
// member printed it); a late joiner's bytes in and time to its first complete view
// (admitted, the host's census counted); and, with a tenth of the viewers killed,
// how long until the host and five viewers count the rest. Reference: the smallest
// room, same run. Goal (issue 28): per viewer, the largest room costs no more than
// 1.25× the smallest, idle ≤ 2 KB/s and ≤ 0.5 % of a core; the count within 2 % and
// 10 s; chat at the limit to ≥ 99.9 % of members, p99 ≤ 1 s.
// `LVBBench <seconds> presence [N,N,…]` runs this alone (default 40,160,320 viewers).

enum PresenceBench {
    private typealias M = MediaBench

    static let defaultSizes = [40, 160, 320]
    static let settle = 10.0, window = 20.0
    static let goalRatio = 1.25, goalBytesPerSecond = 2048.0, goalCPU = 0.5

    static let chatRate = 20.0, chatShare = 0.9, authors = 10

    struct Room {
        var viewers: Int
        var joinSeconds = 0.0
        /// Per viewer, over the idle window and over the chatting window.
        var bytesPerSecond: [Double] = []
        var cpuPercent: [Double] = []
        var chatBytes: [Double] = []
        var chatCPU: [Double] = []
        /// Lines sent, refused at their author (the room's rate), and reached members out of those owed.
        var linesSent = 0, linesRefused = 0, reached = 0, owed = 0
        var latenciesMs: [Double] = []
        /// The largest relative error of any member's count after settling.
        var countError: Double?
        /// A tenth of the viewers killed: seconds until the host and five viewers counted the rest.
        var staleness: Double?
        var joinerBytes: Double?, joinerSeconds: Double?

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
        let tag = "presence\(n)", hostLog = "\(dir)/host-\(tag).err"
        let (host, hostInput) = try MixStage.startWithInput(binary, ["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json",
                                                                     "--video", "none", "--audio", "none"], log: hostLog)
        var viewers: [ChildProcess] = [], inputs: [Int32] = [hostInput]
        defer {
            for fd in inputs { close(fd) }
            for c in viewers.reversed() { c.terminate(grace: 1) }
            host.terminate(grace: 1)
        }
        guard let ready = host.waitForLine(timeout: 10, { M.isEvent($0, "ready") }), let ticket = M.jsonString(ready[...], "ticket") else {
            throw TextError("host printed no ready event with a ticket within 10 s" + MediaBench.exitNote(host, hostLog))
        }
        func join(_ i: Int) throws -> ChildProcess {
            let log = "\(dir)/\(tag)-\(i).err"
            let (viewer, input) = try MixStage.startWithInput(binary, ["join", ticket, "--ephemeral", "--json", "--nick", "v\(i)",
                                                                       "--listen", "127.0.0.1:0", "--no-media"], log: log)
            inputs.append(input)
            guard viewer.waitForLine(timeout: 20, { M.isEvent($0, "admitted") }) != nil else {
                throw TextError("viewer \(i + 1): not admitted within 20 s" + MediaBench.exitNote(viewer, log))
            }
            return viewer
        }
        var room = Room(viewers: n)
        let joinStart = ProcessRunner.now()
        for i in 0..<n { viewers.append(try join(i)) }
        room.joinSeconds = ProcessRunner.now() - joinStart
        let viewerInputs = Array(inputs.dropFirst())
        ProcessRunner.sleep(settle)
        let truth = Double(n + 1)
        let counts = try PresenceProbes.counts([host] + viewers, inputs)
        room.countError = counts.map { abs($0 - truth) / truth }.max()
        (room.bytesPerSecond, room.cpuPercent) = try PresenceProbes.usage(viewers, viewerInputs, seconds: window)
        try chat(&room, viewers, viewerInputs)
        // A late joiner: bytes and time to its first complete view.
        let spawned = ProcessRunner.now()
        let late = try join(n)
        defer { late.terminate(grace: 1) }
        if late.waitForLine(timeout: 20, { M.isEvent($0, "count") }) != nil {
            room.joinerSeconds = ProcessRunner.now() - spawned
            room.joinerBytes = try PresenceProbes.bytesIn([late], [inputs[inputs.count - 1]]).first
        }
        // A tenth of the viewers crash.
        let killed = max(1, n / 10)
        for v in viewers.suffix(killed) { v.crash() }
        let sample = [host] + viewers.prefix(5), sampleInputs = [hostInput] + viewerInputs.prefix(5)
        let expected = Double(n + 2 - killed), crashed = ProcessRunner.now()
        while ProcessRunner.now() - crashed < 60 {
            if try PresenceProbes.counts(sample, sampleInputs).allSatisfy({ $0 == expected }) {
                room.staleness = ProcessRunner.now() - crashed
                break
            }
            ProcessRunner.sleep(0.25)
        }
        return room
    }

    /// Ten authors chat at 90 % of the room's rate for the window; every
    /// member's bytes and CPU meanwhile, and who printed each line when.
    static func chat(_ room: inout Room, _ viewers: [ChildProcess], _ inputs: [Int32]) throws {
        let writers = min(authors, viewers.count)
        let marks = viewers.map { $0.lines().count }
        let interval = 1 / (chatRate * chatShare)
        var sent = 0
        (room.chatBytes, room.chatCPU) = try PresenceProbes.usage(viewers, inputs, seconds: window) { seconds in
            let start = ProcessRunner.now()
            while ProcessRunner.now() - start < seconds {
                MixStage.send("bench-\(sent)", to: inputs[sent % writers])
                sent += 1
                ProcessRunner.sleep(start + Double(sent) * interval - ProcessRunner.now())
            }
        }
        room.linesSent = sent
        ProcessRunner.sleep(3)
        let seen = viewers.indices.map { PresenceProbes.chats(viewers[$0], from: marks[$0], prefix: "bench-") }
        for line in 0..<sent {
            let text = "bench-\(line)", author = line % writers
            // A line its author did not print was refused there (the room's rate).
            guard seen[author][text] != nil else {
                room.linesRefused += 1
                continue
            }
            for (i, s) in seen.enumerated() where i != author {
                room.owed += 1
                if let (sentAt, arrived) = s[text] {
                    room.reached += 1
                    room.latenciesMs.append(arrived - sentAt)
                }
            }
        }
    }

    /// How many members the lines said reached (of those owed: every member
    /// but the author, for each line its author did not refuse) and how late.
    static func chatRows(_ label: String, sent: Int, refused: Int, reached: Int, owed: Int, latenciesMs: [Double]) {
        let share = owed == 0 ? nil : Double(reached) / Double(owed)
        M.row("\(label): chat lines reaching members", share.map { M.fixed($0 * 100, 2) + " %" } ?? "?",
              goal: "≥ 99.9 %", ok: (share ?? 0) >= 0.999,
              note: "\(sent) sent at \(M.fixed(chatRate * chatShare, 0))/s, \(refused) refused at the author")
        let p99 = PresenceProbes.percentile(latenciesMs, 0.99), p50 = PresenceProbes.percentile(latenciesMs, 0.5)
        M.row("\(label): chat line latency p99", p99.map { M.fixed($0, 0) + " ms" } ?? "?", goal: "≤ 1000 ms",
              ok: (p99 ?? .infinity) <= 1000, note: p50.map { "median " + M.fixed($0, 0) + " ms" })
    }

    static func printRoom(_ r: Room, reference: Room?) {
        let label = "\(r.viewers) viewers"
        usageRows(label + ", idle", r.bytesPerSecond, r.cpuPercent, reference.map { ($0.bytesPerSecond, $0.cpuPercent) })
        usageRows(label + ", chatting", r.chatBytes, r.chatCPU, reference.map { ($0.chatBytes, $0.chatCPU) }, idleGoal: false)
        let most = r.bytesPerSecond.max().map { M.fixed($0 / 1024, 2) + " KB/s" } ?? "?"
        let busiest = r.cpuPercent.max().map { M.fixed($0, 2) + " %" } ?? "?"
        M.say("    busiest viewer idle \(most), \(busiest); \(r.viewers) joins one after another in \(M.fixed(r.joinSeconds, 1)) s")
        let error = r.countError.map { M.fixed($0 * 100, 2) + " %" } ?? "?"
        M.row("\(label): count error, worst member", error, goal: "≤ 2 %", ok: (r.countError ?? 1) <= 0.02)
        let stale = r.staleness.map { M.fixed($0, 1) + " s" } ?? "not within 60 s"
        M.row("\(label): a tenth killed, counted by host + 5", stale, goal: "≤ 10 s", ok: (r.staleness ?? .infinity) <= 10)
        chatRows(label, sent: r.linesSent, refused: r.linesRefused, reached: r.reached, owed: r.owed, latenciesMs: r.latenciesMs)
        let joinerBytes = r.joinerBytes.map { M.fixed($0 / 1024, 1) + " KB" } ?? "?"
        M.row("\(label): a late joiner's first complete view", joinerBytes + " in " + (r.joinerSeconds.map { M.fixed($0, 2) + " s" } ?? "?"),
              goal: "≤ 64 KB", ok: (r.joinerBytes ?? .infinity) <= 64 * 1024)
    }

    /// Bytes in and CPU per viewer, against the reference room's when there is one.
    static func usageRows(_ label: String, _ bytes: [Double], _ cpu: [Double], _ reference: ([Double], [Double])?, idleGoal: Bool = true) {
        let b = mean(bytes), c = mean(cpu)
        let bytesText = b.map { M.fixed($0 / 1024, 2) + " KB/s" } ?? "?", cpuText = c.map { M.fixed($0, 2) + " %" } ?? "?"
        guard let reference else {
            M.row("\(label): bytes in per viewer", bytesText, note: "(reference)")
            M.row("\(label): CPU per viewer", cpuText + " of one core", note: "(reference)")
            return
        }
        let rb = ratio(b, mean(reference.0)), rc = ratio(c, mean(reference.1))
        let bytesOK = (rb.map { $0 <= goalRatio } ?? false) && (!idleGoal || (b ?? .infinity) <= goalBytesPerSecond)
        let cpuOK = (rc.map { $0 <= goalRatio } ?? false) && (!idleGoal || (c ?? .infinity) <= goalCPU)
        M.row("\(label): bytes in per viewer", bytesText + ", " + (rb.map { M.fixed($0, 2) + "×" } ?? "?"),
              goal: "≤ \(M.fixed(goalRatio, 2))×" + (idleGoal ? ", ≤ 2 KB/s" : ""), ok: bytesOK)
        M.row("\(label): CPU per viewer", cpuText + ", " + (rc.map { M.fixed($0, 2) + "×" } ?? "?"),
              goal: "≤ \(M.fixed(goalRatio, 2))×" + (idleGoal ? ", ≤ 0.5 %" : ""), ok: cpuOK)
    }

    static func mean(_ values: [Double]) -> Double? { values.isEmpty ? nil : values.reduce(0, +) / Double(values.count) }

    static func ratio(_ a: Double?, _ b: Double?) -> Double? {
        guard let a, let b, b > 0 else { return nil }
        return a / b
    }
}
