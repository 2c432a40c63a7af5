#if canImport(Glibc)
import Glibc
#endif

// Replays served by their holders (issue 29), as processes on loopback: a
// host streams 24 s (640x360, 1000 kbit/s) and ends its live; its replay is
// then served by 1 or by 3 holders (`lvbnode replays --serve` over copies),
// clean and with every path through `lvbnode impair --delay 20`. A player
// (`lvbnode join REPLAY-ID`) measures play → first frame (its first_frame,
// from the command) and 20 seeks → first frame (from writing /seek to its
// replay_frame line), and at the end how many bytes each holder served.
// Goal: p95 ≤ 300 ms for both; the biggest holder's share ≤ 1/N + 10 %.
enum ReplayBench {
    private typealias M = MediaBench
    static let seeks = 20, liveSeconds = 24.0, delayMS = 20.0
    static let goalP95 = 300.0

    struct Result {
        var play: Double?
        var seeks: [Double] = []
        var shares: [Double] = []
        var failures: [String] = []
    }

    static func runAndPrint(seconds: Double) {
        M.say("")
        M.say("replays from their holders: a 24 s live (640x360, 1000 kbit/s) kept by its host, served by 1 or 3 holders, "
              + "\(seeks) seeks at random times; processes on loopback")
        guard let (binary, dir) = M.processWorkspace("lvbnode-replay-bench", prefix: "  ") else { return }
        defer { _ = ProcessRunner.spawnAndWait("/bin/rm", ["-rf", dir], output: "/dev/null") }
        let recorded: (id: String, replays: String)
        do { recorded = try record(binary, dir) } catch { return M.say("  recording failed: \(error)") }
        for delay in [0.0, delayMS] {
            for holders in [1, 3] {
                let r = scenario(binary, dir, recorded, holders: holders, delay: delay)
                let label = "\(holders) holder\(holders == 1 ? "" : "s")\(delay > 0 ? ", delay \(M.fixed(delay, 0)) ms" : "")"
                let seekP = SwitchBench.pair(r.seeks)
                M.row("\(label): play → first frame", r.play.map { M.fixed($0, 1) + " ms" } ?? "none", goal: "≤ \(Int(goalP95)) ms",
                      ok: (r.play ?? .infinity) <= goalP95)
                M.row("\(label): seek → first frame p50/p95", seekP.text + " (\(r.seeks.count))", goal: "p95 ≤ \(Int(goalP95)) ms",
                      ok: r.seeks.count == seeks && seekP.p95 <= goalP95)
                if holders > 1, let top = r.shares.max() {
                    let goal = 1.0 / Double(holders) + 0.1
                    M.row("\(label): biggest holder's share", M.fixed(top * 100, 1) + " %", goal: "≤ \(M.fixed(goal * 100, 0)) %", ok: top <= goal,
                          note: "shares " + r.shares.map { M.fixed($0 * 100, 0) + " %" }.joined(separator: ", "))
                }
                for f in r.failures { M.say("    \(label): \(f)") }
            }
        }
    }

    /// A host streams `liveSeconds` and closes its room: its replay's id and its replays directory.
    static func record(_ binary: String, _ dir: String) throws -> (id: String, replays: String) {
        let home = "\(dir)/host"
        let log = "\(dir)/host.err"
        let (host, input) = try MixStage.startWithInput(binary, ["host", "--home", home, "--listen", "127.0.0.1:0", "--json",
                                                                 "--size", "640x360", "--fps", "30", "--gop", "2", "--bitrate", "1000"], log: log)
        defer { close(input); host.terminate() }
        guard let started = host.waitForLine(timeout: 10, { M.isEvent($0, "replay") }), let id = M.jsonString(started[...], "id") else {
            throw TextError("the host kept no replay" + M.exitNote(host, log))
        }
        ProcessRunner.sleep(liveSeconds)
        _ = "/quit\n".withCString { write(input, $0, strlen($0)) }
        _ = host.waitForExit(timeout: 10)
        return (id, "\(home)/replays")
    }

    static func scenario(_ binary: String, _ dir: String, _ recorded: (id: String, replays: String), holders: Int, delay: Double) -> Result {
        var r = Result()
        var children: [ChildProcess] = []
        defer { for c in children.reversed() { c.terminate() } }
        let tag = "\(holders)-\(Int(delay))"
        func start(_ name: String, _ arguments: [String]) throws -> (ChildProcess, Substring) {
            let log = "\(dir)/\(tag)-\(name).err"
            let child = try ChildProcess(binary, arguments, stderr: .file(log))
            children.append(child)
            guard let ready = child.waitForLine(timeout: 10, { M.isEvent($0, "ready") }) else {
                throw TextError("\(name): no ready event within 10 s" + M.exitNote(child, log))
            }
            return (child, ready[...])
        }
        func relay(_ name: String, to target: String) throws -> String {
            let (_, ready) = try start("impair-\(name)", ["impair", "--listen", "127.0.0.1:0", "--to", target, "--delay", M.fixed(delay, 0), "--json"])
            guard let listen = M.jsonString(ready, "listen") else { throw TextError("impair \(name): no listen address") }
            return listen
        }
        do {
            let (_, rvReady) = try start("rendezvous", ["rendezvous", "--ephemeral", "--listen", "127.0.0.1:0", "--json"])
            guard var rendezvous = M.jsonString(rvReady, "listen") else { throw TextError("rendezvous: no listen address") }
            if delay > 0 { rendezvous = try relay("rendezvous", to: rendezvous) }
            for n in 0..<holders {
                // A copy of the replay in a home of its own (its own identity).
                let home = "\(dir)/\(tag)-holder\(n)"
                guard ProcessRunner.spawnAndWait("/bin/cp", ["-r", recorded.replays, home + "-replays"], output: "/dev/null") == 0 else {
                    throw TextError("cannot copy the replay")
                }
                let port = try SwitchBench.freePort()
                var arguments = ["replays", "--serve", "--home", home, "--replay-dir", home + "-replays", "--rendezvous", rendezvous,
                                 "--listen", "127.0.0.1:\(port)", "--json"]
                if delay > 0 { arguments += ["--advertise", try relay("holder\(n)", to: "127.0.0.1:\(port)")] }
                _ = try start("holder\(n)", arguments)
            }
            // Until the rendezvous knows every holder.
            var listed = false
            for _ in 0..<50 where !listed {
                let lister = try ChildProcess(binary, ["rooms", "--rendezvous", rendezvous, "--json"])
                _ = lister.waitForExit(timeout: 10)
                listed = lister.lines().contains { $0.contains(recorded.id) && $0.contains("\"holders\":\(holders)") }
                if !listed { ProcessRunner.sleep(0.2) }
            }
            guard listed else { throw TextError("the rendezvous did not list the replay with \(holders) holders") }
            let log = "\(dir)/\(tag)-player.err"
            let (player, input) = try MixStage.startWithInput(binary, ["join", recorded.id, "--rendezvous", rendezvous, "--ephemeral",
                                                                       "--json", "--listen", "127.0.0.1:0"], log: log)
            children.append(player)
            defer { close(input) }
            guard let first = player.waitForLine(timeout: 10, { M.isEvent($0, "first_frame") }) else {
                throw TextError("no first frame" + M.exitNote(player, log))
            }
            r.play = M.jsonNumber(first[...], "ms")
            var random = SystemRandomNumberGenerator()
            for _ in 0..<seeks {
                ProcessRunner.sleep(0.5)
                let target = Double.random(in: 0...(liveSeconds - 3), using: &random)
                let before = player.lines().count
                let sent = ProcessRunner.now()
                _ = "/seek \(M.fixed(target, 2))\n".withCString { write(input, $0, strlen($0)) }
                guard SwitchBench.waitForNewLine(player, after: before, timeout: 5, { M.isEvent($0, "replay_frame") }) != nil else {
                    r.failures.append("a seek to \(M.fixed(target, 1)) s showed no picture within 5 s")
                    continue
                }
                r.seeks.append((ProcessRunner.now() - sent) * 1000)
            }
            // Played through, every holder's bytes.
            _ = "/seek 0\n".withCString { write(input, $0, strlen($0)) }
            _ = "/speed 4\n".withCString { write(input, $0, strlen($0)) }
            guard let exit = player.waitForLine(timeout: 30, { M.isEvent($0, "exit") }) else { throw TextError("the player did not end") }
            let marker = "\"bytes_from\":{"
            if let at = exit.indices.first(where: { exit[$0...].hasPrefix(marker) }) {
                let from = exit[exit.index(at, offsetBy: marker.count)...].prefix { $0 != "}" }
                let bytes = from.split(separator: ",").compactMap { $0.split(separator: ":").last.flatMap { Double($0) } }
                let total = bytes.reduce(0, +)
                r.shares = total > 0 ? bytes.map { $0 / total } : []
            }
        } catch {
            r.failures.append("\(error)")
        }
        return r
    }
}
