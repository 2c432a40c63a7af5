#if canImport(Glibc)
import Glibc
#endif

// What a lying relay costs its child (issue 50), as processes on loopback:
// a host with one relay slot, a relay below it that tells the truth for
// 8 s and then lies (`--lie alter --lie-after 8`: its send history holds
// its lies, so it answers every NACK with another), with and without false
// excuses (`--lie-excuses`), and a decoding child below it. The child's
// CPU (utime + stime, sampled every 100 ms) while lied to, from the lie's
// start to the child's blame, against the same length of the honest
// stream just before; and the NACKs, signature checks and refusals the
// child's `forged_media` warning gives. `LVBBench <seconds> lie` runs this.
// Goals: at most 60 NACKs to the liar (300 under excuses), the child's CPU
// while lied to within 1.5× of the honest stream's.

enum LieBench {
    static let truthSeconds = 8.0
    static let goalNacks = 60, goalExcusedNacks = 300, goalCPURatio = 1.5

    static func runAndPrint(seconds: Double) {
        guard let (binary, dir) = MediaBench.processWorkspace("lvbbench-lie", prefix: "lying relay: ") else { return }
        defer { MediaBench.removeDirectory(dir) }
        MediaBench.say("")
        MediaBench.say("lying relay: host → liar (--lie alter, the truth for \(Int(truthSeconds)) s first) → decoding child, "
                       + "640x360@30 1 Mbit/s, as processes on loopback")
        for excuses in [false, true] {
            switch Result(catching: { try run(binary, dir, excuses: excuses) }) {
            case .failure(let error): MediaBench.say("  \(excuses ? "with" : "without") excuses: FAILED: \(error)")
            case .success(let line): MediaBench.say(line)
            }
        }
    }

    private static func run(_ binary: String, _ dir: String, excuses: Bool) throws -> String {
        let (host, _, ticket) = try MediaBench.startHost(binary, dir, "lie", [
            "--video", "synthetic", "--size", "640x360", "--fps", "30", "--gop", "2", "--bitrate", "1000", "--relay-slots", "1",
        ])
        var children = [host]
        defer { for c in children.reversed() { c.terminate() } }
        let liar = try ChildProcess(binary, ["join", ticket, "--ephemeral", "--json", "--listen", "127.0.0.1:0", "--relay-slots", "2",
                                             "--no-media", "--lie", "alter", "--lie-after", "\(Int(truthSeconds))"]
                                        + (excuses ? ["--lie-excuses"] : []), stderr: .file(dir + "/liar.err"))
        children.append(liar)
        guard liar.waitForLine(timeout: 10, { MediaBench.isEvent($0, "tree") && $0.contains("\"depth\":1") }) != nil else {
            throw TextError("the liar did not attach below the host" + MediaBench.exitNote(liar, dir + "/liar.err"))
        }
        let child = try ChildProcess(binary, ["join", ticket, "--ephemeral", "--json", "--listen", "127.0.0.1:0", "--relay-slots", "0"],
                                     stderr: .file(dir + "/child.err"))
        children.append(child)
        guard child.waitForLine(timeout: 10, { MediaBench.isEvent($0, "first_frame") }) != nil else {
            throw TextError("the child decoded nothing" + MediaBench.exitNote(child, dir + "/child.err"))
        }
        // CPU samples until the child blames the liar (or the liar's truth plus 12 s).
        var samples: [(at: Double, cpu: Double)] = []
        let deadline = ProcessRunner.now() + truthSeconds + 12
        var warning: String?
        while ProcessRunner.now() < deadline {
            if let cpu = child.cpuSeconds() { samples.append((ProcessRunner.now(), cpu)) }
            if let w = child.lines().first(where: { MediaBench.isEvent($0, "warning") && $0.contains("forged_media") }) {
                warning = w
                break
            }
            ProcessRunner.sleep(0.1)
        }
        guard let warning, let blamed = samples.last?.at else { throw TextError("the child never blamed the liar") }
        // The lie began the blame grace (and the excuses) before the blame.
        let lying = excuses ? 3.3 : 0.3, start = blamed - lying
        func rate(from a: Double, to b: Double) -> Double? {
            guard let first = samples.first(where: { $0.at >= a }), let last = samples.last(where: { $0.at <= b }), last.at > first.at else { return nil }
            return (last.cpu - first.cpu) / (last.at - first.at) * 100
        }
        let lied = rate(from: start + 0.1, to: blamed), honest = rate(from: start - 0.5 - lying, to: start - 0.5)
        let nacks = Int(MediaBench.jsonNumber(warning[...], "nacks") ?? -1)
        let checks = Int(MediaBench.jsonNumber(warning[...], "signature_checks") ?? -1)
        let refusals = Int(MediaBench.jsonNumber(warning[...], "refusals") ?? -1)
        let goal = excuses ? goalExcusedNacks : goalNacks
        // Under a second, /proc's 10 ms ticks do not resolve a few % of a core: no ratio.
        let ratio = lying < 1 ? nil : lied.flatMap { l in honest.map { l / max(0.01, $0) } }
        func pct(_ v: Double?) -> String { v.map { MediaBench.fixed($0, 1) + " %" } ?? "?" }
        return "  \(excuses ? "with false excuses   " : "without excuses      ")"
            + "\(nacks) NACKs to the liar (goal ≤ \(goal) \(nacks >= 0 && nacks <= goal ? "✓" : "✗")), \(checks) signature checks, "
            + "\(refusals) refusals; child CPU lied to \(pct(lied)) over \(MediaBench.fixed(lying, 1)) s, honest \(pct(honest)): "
            + (lying < 1 ? "too short a window to compare"
                : "\(ratio.map { MediaBench.fixed($0, 2) } ?? "?")× (goal ≤ \(goalCPURatio) \(ratio.map { $0 <= goalCPURatio } ?? false ? "✓" : "✗"))")
    }
}
