#if canImport(Glibc)
import Glibc
#endif

// Quick switch between rooms (issue 10), with the release binary as processes on
// loopback UDP, read through their --json lines. `LVBBench <seconds> switch` runs
// this alone.
//
// A rendezvous and two hosts (synthetic source, 640x360@30, GOP 2 s, 1 Mbit/s)
// announcing to it; a viewer joins the first room by its id through the rendezvous
// and sends /next `switches` times (so it goes back and forth between the two
// rooms). Each switch → first decoded frame is the viewer's first_frame event
// after it (ms from the switch command reaching the node to the first decoded
// picture of the new room; `preloaded` says whether the room was kept ready).
//   preloaded: the viewer's default (--preload 1): before each switch it waits for
//              the "preloaded" event of the room it is about to enter, then a
//              random 0–1 s (a random moment in the GOP);
//   cold:      a viewer with --preload 0: every switch dials, is admitted and
//              subscribes from scratch (the session with the other host may
//              still be up from an earlier visit for 1 s, then it is closed).
// Reference, measured in the same run: a new viewer process joining by room id,
// its start → first decoded frame (what a switch replaces), `joins` times.
//
// Then the same through `lvbnode impair --delay 20` (20 ms each way, RTT 40 ms):
// each host, the viewer and the rendezvous sit behind their own impair relay and
// hand out only its address (--advertise), and everyone reaches the rendezvous
// through its relay, so every path between the viewer and a host, dialled by
// either side, crosses one relay.
// Goals: preloaded p95 ≤ 50 ms; cold p95 ≤ 150 ms + 1 RTT.

enum SwitchBench {
    static let switches = 20, joins = 5
    static let delayMS = 20.0
    static let goalPreloadedP95 = 50.0, goalColdP95 = 150.0

    struct Scenario {
        var preloaded: [Double] = [], cold: [Double] = [], joins: [Double] = []
        var notPreloaded = 0
        var failures: [String] = []
    }

    static func runAndPrint(seconds: Double) {
        say("")
        say("room switch → first decoded frame: lvbnode as processes on loopback UDP (a rendezvous, 2 hosts 640x360@30 "
            + "GOP 2 s, a viewer sending /next \(switches) times), preloaded and cold; reference: a new viewer process's first frame")
        guard let (binary, dir) = MediaBench.processWorkspace("lvbbench-switch", prefix: "  ") else { return }
        defer { MediaBench.removeDirectory(dir) }
        for delay in [0.0, delayMS] {
            let s = scenario(binary, dir, delay: delay)
            let rtt = 2 * delay
            say(delay == 0 ? "  clean loopback" : "  through lvbnode impair --delay \(fixed(delay, 0)) (RTT \(fixed(rtt, 0)) ms)")
            for failure in s.failures { say("    FAILED: \(failure)") }
            let pre = pair(s.preloaded), cold = pair(s.cold)
            row("preloaded switch p50 / p95", pre.text + " (\(s.preloaded.count))", goal: "p95 ≤ \(fixed(goalPreloadedP95, 0)) ms",
                ok: !s.preloaded.isEmpty && pre.p95 <= goalPreloadedP95,
                note: s.notPreloaded > 0 ? "\(s.notPreloaded) switches found the room not ready" : nil)
            row("cold switch p50 / p95", cold.text + " (\(s.cold.count))", goal: "p95 ≤ \(fixed(goalColdP95 + rtt, 0)) ms",
                ok: !s.cold.isEmpty && cold.p95 <= goalColdP95 + rtt)
            let joined = pair(s.joins)
            row("reference: new viewer process", joined.text + " (\(s.joins.count))",
                note: "start → first frame; preloaded / reference p50 \(ratio(pre.p50, joined.p50))")
        }
    }

    /// One network (clean or delayed): the preloaded viewer, the cold one, the reference joins.
    static func scenario(_ binary: String, _ dir: String, delay: Double) -> Scenario {
        var s = Scenario()
        var children: [ChildProcess] = []
        defer { for c in children.reversed() { c.terminate() } }
        let tag = delay == 0 ? "clean" : "delay"
        func start(_ name: String, _ arguments: [String]) throws -> (ChildProcess, Substring) {
            let log = "\(dir)/\(tag)-\(name).err"
            let child = try ChildProcess(binary, arguments, stderr: .file(log))
            children.append(child)
            guard let ready = child.waitForLine(timeout: 10, { isEvent($0, "ready") }) else {
                throw TextError("\(name): no ready event within 10 s" + MediaBench.exitNote(child, log))
            }
            return (child, ready[...])
        }
        /// A relay in front of `target` (delayed runs): its listening address.
        func relay(_ name: String, to target: String) throws -> String {
            let (_, ready) = try start("impair-\(name)", ["impair", "--listen", "127.0.0.1:0", "--to", target,
                                                           "--delay", fixed(delay, 0), "--json"])
            guard let listen = jsonString(ready, "listen") else { throw TextError("impair \(name): no listen address") }
            return listen
        }
        do {
            let (_, rvReady) = try start("rendezvous", ["rendezvous", "--ephemeral", "--listen", "127.0.0.1:0", "--json"])
            guard var rendezvous = jsonString(rvReady, "listen") else { throw TextError("rendezvous: no listen address") }
            if delay > 0 { rendezvous = try relay("rendezvous", to: rendezvous) }
            var rooms: [String] = []
            for name in ["a", "b"] {
                // The host's port is chosen first, so its relay exists before it starts and it can advertise the relay.
                let port = try freePort()
                var extra: [String] = []
                if delay > 0 { extra = ["--advertise", try relay("host-\(name)", to: "127.0.0.1:\(port)")] }
                let (_, ready) = try start("host-\(name)", ["host", "--ephemeral", "--listen", "127.0.0.1:\(port)", "--json",
                                                            "--title", "bench \(name)", "--size", "640x360", "--fps", "30",
                                                            "--gop", "2", "--bitrate", "1000", "--audio", "synthetic",
                                                            "--rendezvous", rendezvous] + extra)
                guard let room = jsonString(ready, "room") else { throw TextError("host \(name): no room id") }
                rooms.append(room)
            }
            try waitListed(binary, rooms, rendezvous)
            func viewerArguments(_ name: String, preload: Int) throws -> [String] {
                let port = try freePort()
                var arguments = ["join", rooms[0], "--rendezvous", rendezvous, "--ephemeral", "--json",
                                 "--listen", "127.0.0.1:\(port)", "--preload", "\(preload)"]
                if delay > 0 { arguments += ["--advertise", try relay(name, to: "127.0.0.1:\(port)")] }
                return arguments
            }
            for (preload, name) in [(1, "preloaded"), (0, "cold")] {
                do {
                    let times = try switchRun(binary, dir, "\(tag)-\(name)", try viewerArguments(name, preload: preload),
                                              rooms: rooms, preloaded: preload > 0)
                    if preload > 0 {
                        s.preloaded = times.filter(\.preloaded).map(\.ms)
                        s.notPreloaded = times.filter { !$0.preloaded }.count
                    } else {
                        s.cold = times.map(\.ms)
                    }
                } catch { s.failures.append("\(name): \(error)") }
            }
            for n in 0..<joins {
                ProcessRunner.sleep(Double.random(in: 0...2))
                let log = "\(dir)/\(tag)-join\(n).err"
                let joiner = try ChildProcess(binary, try viewerArguments("join\(n)", preload: 0) + ["--duration", "4"],
                                              stderr: .file(log))
                children.append(joiner)
                if let first = joiner.waitForLine(timeout: 10, { isEvent($0, "first_frame") }), let ms = jsonNumber(first[...], "ms") {
                    s.joins.append(ms)
                } else {
                    s.failures.append("join \(n): no first_frame" + MediaBench.exitNote(joiner, log))
                }
                joiner.terminate()
            }
        } catch {
            s.failures.append("\(error)")
        }
        return s
    }

    /// A viewer sending /next `switches` times: each switch's first_frame (ms, preloaded).
    static func switchRun(_ binary: String, _ dir: String, _ tag: String, _ arguments: [String], rooms: [String],
                          preloaded: Bool) throws -> [(ms: Double, preloaded: Bool)] {
        let log = "\(dir)/\(tag)-viewer.err"
        let (viewer, input) = try MixStage.startWithInput(binary, arguments, log: log)
        defer {
            close(input)
            viewer.terminate()
        }
        guard viewer.waitForLine(timeout: 15, { isEvent($0, "first_frame") }) != nil else {
            throw TextError("no first picture from the first room" + MediaBench.exitNote(viewer, log))
        }
        var times: [(Double, Bool)] = []
        var current = 0, lastSwitch = 0
        for n in 0..<switches {
            let next = 1 - current
            if preloaded {
                // The room about to be entered is ready again (it became the neighbour at the last switch).
                _ = waitForNewLine(viewer, after: lastSwitch, timeout: 10) {
                    isEvent($0, "preloaded") && jsonString($0[...], "room") == rooms[next]
                }
            }
            ProcessRunner.sleep(Double.random(in: 0...1))
            let seen = viewer.lines().count
            lastSwitch = seen
            MixStage.send("/next", to: input)
            guard let first = waitForNewLine(viewer, after: seen, timeout: 10, {
                isEvent($0, "first_frame") && jsonString($0[...], "room") == rooms[next]
            }), let ms = jsonNumber(first[...], "ms") else {
                throw TextError("switch \(n + 1): no first picture of the new room within 10 s" + MediaBench.exitNote(viewer, log))
            }
            times.append((ms, first.contains("\"preloaded\":true")))
            current = next
        }
        return times
    }

    /// The first line after the first `after` lines that matches, waiting up to `timeout`.
    static func waitForNewLine(_ child: ChildProcess, after: Int, timeout: Double, _ matches: (String) -> Bool) -> String? {
        let deadline = ProcessRunner.now() + timeout
        while ProcessRunner.now() < deadline {
            if let line = child.lines().dropFirst(after).first(where: matches) { return line }
            if !child.isRunning() { return nil }
            ProcessRunner.sleep(0.005)
        }
        return nil
    }

    /// Waits until the rendezvous lists every room (a host prints ready before its first announcement arrives).
    static func waitListed(_ binary: String, _ rooms: [String], _ rendezvous: String) throws {
        for _ in 0..<50 {
            let lister = try ChildProcess(binary, ["rooms", "--rendezvous", rendezvous, "--json"])
            _ = lister.waitForExit(timeout: 10)
            let text = lister.lines().joined(separator: "\n")
            if rooms.allSatisfy({ text.contains($0) }) { return }
            ProcessRunner.sleep(0.2)
        }
        throw TextError("the rendezvous did not list both rooms within 10 s")
    }

    /// A UDP port free on 127.0.0.1 right now.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw TextError("socket: " + String(cString: strerror(errno))) }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw TextError("bind: " + String(cString: strerror(errno))) }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func pair(_ values: [Double]) -> (p50: Double, p95: Double, text: String) {
        guard !values.isEmpty else { return (0, 0, "none") }
        let sorted = values.sorted()
        let p50 = percentile(sorted, 0.5), p95 = percentile(sorted, 0.95)
        return (p50, p95, "\(fixed(p50, 1)) / \(fixed(p95, 1)) ms")
    }

    static func ratio(_ a: Double, _ b: Double) -> String { b > 0 ? fixed(a / b, 2) : "?" }

    static func say(_ line: String) { MediaBench.say(line) }
    static func row(_ label: String, _ value: String, goal: String? = nil, ok: Bool = false, note: String? = nil) {
        MediaBench.row(label, value, goal: goal, ok: ok, note: note)
    }
    static func fixed(_ v: Double, _ decimals: Int) -> String { MediaBench.fixed(v, decimals) }
    static func isEvent(_ line: String, _ name: String) -> Bool { MediaBench.isEvent(line, name) }
    static func jsonString(_ line: Substring, _ key: String) -> String? { MediaBench.jsonString(line, key) }
    static func jsonNumber(_ line: Substring, _ key: String) -> Double? { MediaBench.jsonNumber(line, key) }
}
