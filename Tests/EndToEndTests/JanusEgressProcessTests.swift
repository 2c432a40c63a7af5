import Foundation
import LVBMesh
import Testing

/// Issue 31: a room handed to a real Janus (Debian's, with the mountpoint
/// shipped in docs/janus) and watched through it by a WebRTC subscriber
/// (aiortc, Tests/Janus/subscriber.py), everything behind real NATs in the
/// NAT lab: the rendezvous and Janus on the "internet", the host behind home
/// 1, the egress viewer behind home 2, two more viewers (one of them later a
/// guest on stage) and the subscriber behind home 3. The host has two relay
/// slots, which the two viewers fill, so the egress viewer takes the stream
/// from one of them; that one is killed at the end.
@Suite(.serialized, .ownThread, .enabled(if: JanusLab.runnable, "\(JanusLab.missing ?? ""); Scripts/setup installs it"))
struct JanusEgressProcessTests {
    @Test func aWebRTCSubscriberThroughJanusSeesTheHostAtOnceAcrossAGuestOnStageAndAFailover() throws {
        if let missing = JanusLab.missing {
            Issue.record("the Janus test cannot run here: \(missing)")
            return
        }
        let lab = try NATLab(tag: "lvj\(getpid() % 1000)", sites: 3)
        defer { lab.remove() }
        let janus = try JanusLab(lab: lab)
        defer { janus.stop() }
        // A keyframe every 30 s: a first picture within a second or two can only come from a keyframe request.
        let (rv, host, room, _) = try lab.room(hostArguments: ["--size", "320x180", "--fps", "30", "--gop", "30", "--bitrate", "400",
                                                               "--relay-slots", "2"])
        var nodes = [host, rv]
        defer { for p in nodes { p.signal(SIGTERM); _ = p.waitExit() } }
        var viewers: [NodeProcess] = []
        for (nick, port) in [("relay", 7501), ("singer", 7502)] {
            let v = try lab.run("3", ["join", room, "--rendezvous", lab.rendezvous, "--ephemeral", "--json", "--nick", nick,
                                      "--listen", "0.0.0.0:\(port)"])
            nodes.append(v)
            viewers.append(v)
            #expect(v.waitFor("first_frame", timeout: 15) != nil, "\(nick): \(v.stderr)")
        }
        let guest = viewers[1]
        let ids = try viewers.map { try #require($0.waitFor("ready")?["id"] as? String) }
        let egress = try lab.run("2", ["join", room, "--rendezvous", lab.rendezvous, "--ephemeral", "--json", "--nick", "egress",
                                       "--egress", JanusLab.address])
        nodes.append(egress)
        #expect(egress.waitFor("first_frame", timeout: 15) != nil, "egress: \(egress.stderr)")
        // The host's two slots are taken: the egress viewer is fed by one of the two viewers.
        let fed = egress.waitFor("tree", timeout: 10, where: { ($0["parent"] as? String).map(ids.contains) == true })
        let parent = try #require((fed?["parent"] as? String).flatMap { ids.firstIndex(of: $0) },
                                  "the egress viewer should take the stream from a viewer: \(egress.events.filter { $0["event"] as? String == "tree" })")
        Thread.sleep(forTimeInterval: 2)
        let keyframesBefore = Self.media(host.events.last { $0["event"] as? String == "stats" })?["keyframes"] as? Int ?? 0

        // The subscriber watches for 22 s: the start, 6 s with the guest on stage, the egress viewer's parent killed.
        let subscriber = try janus.subscribe(from: lab, site: "3", seconds: 22)
        Thread.sleep(forTimeInterval: 5)
        guest.send("/linkmic hello Janus")
        #expect(host.waitFor("linkmic_request", timeout: 10) != nil, "host: \(host.stderr)")
        host.send("/accept singer")
        #expect(host.waitFor("linkmic_started", timeout: 10, where: { $0["id"] as? String == ids[1] }) != nil, "host: \(host.stderr)")
        let onStage = Date()
        Thread.sleep(forTimeInterval: 6)
        host.send("/hangup")
        #expect(host.waitFor("linkmic_ended", timeout: 10, where: { $0["id"] as? String == ids[1] }) != nil, "host: \(host.stderr)")
        let offStage = Date()
        Thread.sleep(forTimeInterval: 2)
        let parents = egress.events.filter { $0["event"] as? String == "tree" }.count
        viewers[parent].signal(SIGKILL)
        let killed = Date()
        #expect(egress.waitFor("tree", after: parents, timeout: 10) != nil, "the egress viewer never moved on: \(egress.stderr)")
        let result = try subscriber.finish(timeout: 40)
        let stats = Self.media(egress.waitFor("stats", after: egress.events.count, timeout: 5))

        // What the subscriber saw: the host's pictures, in order, from a keyframe asked for at once.
        let video = result.video
        let numbered = video.filter { $0.frame != nil }
        let first = try #require(numbered.first, "the subscriber decoded no numbered picture: \(result.log)")
        let firstDelay = first.t - result.watching
        print("janus: first picture \(firstDelay) ms after watching; \(video.count) pictures, \(numbered.count) numbered; "
              + "audio seconds \(result.audio.count); host keyframes \(keyframesBefore) before; egress stats \(stats ?? [:])")
        #expect(firstDelay <= 2000, "the first picture came \(firstDelay) ms after watching: no keyframe was asked for (GOP 30 s)")
        let numbers = numbered.compactMap(\.frame)
        let backwards = zip(numbers, numbers.dropFirst()).filter { a, b in Int16(bitPattern: UInt16(truncatingIfNeeded: b - a)) <= 0 }.count
        #expect(Set(numbers).count >= 300, "only \(Set(numbers).count) distinct frame numbers in 24 s at 30 fps")
        #expect(backwards <= 2, "frame numbers went back \(backwards) times: \(numbers.prefix(50))")
        // It kept playing: through the guest going on and off stage with no
        // gap over 0.5 s, and past the parent's death after no more than the
        // tree's own failover (its children play again within 2 s: NATRoomProcessTests).
        func ms(_ d: Date) -> Int64 { Int64(d.timeIntervalSince1970 * 1000) }
        let times = video.map(\.t)
        let gaps = zip(times, times.dropFirst()).map { (at: $0, gap: $1 - $0) }
        let long = gaps.filter { $0.gap > 300 }.map { "\($0.gap) ms at \($0.at - ms(onStage)) ms" }
        print("janus: gaps over 300 ms (times from the guest going on stage; off at \(ms(offStage) - ms(onStage)) ms, "
              + "the egress viewer's parent killed at \(ms(killed) - ms(onStage)) ms): \(long)")
        let stage = gaps.filter { $0.at >= ms(onStage) - 1000 && $0.at < ms(killed) - 500 }.map(\.gap)
        let failover = gaps.filter { $0.at >= ms(killed) - 500 && $0.at <= ms(killed) + 3000 }.map(\.gap)
        #expect(stage.count > 100 && (stage.max() ?? 0) <= 500, "a gap of \(stage.max() ?? -1) ms around the guest on stage: \(long)")
        #expect((failover.max() ?? 0) <= 2500, "a gap of \(failover.max() ?? -1) ms after the parent died: \(long)")
        #expect(times.last.map { $0 >= ms(killed) + 3000 } == true, "pictures stopped after the parent died: \(long)")
        // And heard the host's tone.
        let loud = result.audio.filter { $0.rms > 300 }.count
        #expect(loud >= result.audio.count - 3 && result.audio.count >= 18, "audio seconds \(result.audio.map(\.rms))")

        // The egress said what it did and got.
        let e = try #require(stats, "no stats from the egress viewer: \(egress.stderr)")
        #expect((e["egress_video_packets"] as? Int ?? 0) > 500 && (e["egress_audio_packets"] as? Int ?? 0) > 500)
        #expect((e["egress_plis"] as? Int ?? 0) >= 1 && (e["egress_keyframe_requests"] as? Int ?? 0) >= 1, "\(e)")
        #expect((e["egress_sender_reports"] as? Int ?? 0) >= 20, "\(e)")
        let keyframesAfter = Self.media(host.waitFor("stats", after: host.events.count, timeout: 5))?["keyframes"] as? Int ?? 0
        #expect(keyframesAfter > keyframesBefore, "the host made no keyframe for the subscriber (\(keyframesBefore) → \(keyframesAfter))")
        // The egress viewer is an ordinary member: the host lists it.
        host.send("/viewers")
        let list = host.waitFor("viewers", timeout: 5)?["viewers"] as? [[String: Any]] ?? []
        #expect(list.contains { $0["nick"] as? String == "egress" }, "the host's viewer list: \(list)")
    }

    static func media(_ stats: [String: Any]?) -> [String: Any]? { stats?["media"] as? [String: Any] }
}

/// Janus (Debian's) in the NAT lab's rendezvous namespace, on the "internet":
/// the mountpoint from docs/janus, the HTTP API on port 8088.
struct JanusLab {
    static let executable = "/usr/bin/janus"
    static let address = "198.18.0.2"
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// What keeps the test from running here (nil: nothing).
    static let missing: String? = {
        if let why = NATLab.unavailable { return why }
        if access(executable, X_OK) != 0 { return "Janus is not installed (Debian's janus)" }
        // The python3 on PATH, as the subscriber will run.
        let check = Process()
        check.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        check.arguments = ["python3", "-c", "import aiortc, numpy"]
        check.standardOutput = FileHandle.nullDevice
        check.standardError = FileHandle.nullDevice
        guard (try? check.run()) != nil else { return "python3 is not on PATH" }
        check.waitUntilExit()
        if check.terminationStatus != 0 { return "aiortc is not installed (PyPI)" }
        return nil
    }()

    /// Runs when everything is there, and always under CI (where a missing piece is a failure).
    static var runnable: Bool { missing == nil || ProcessInfo.processInfo.environment["CI"] != nil }

    let dir: String
    let process: Process

    init(lab: NATLab) throws {
        precondition(lab.internet == .publicRange, "the Janus lab's address is on the public-range internet")
        dir = temporaryDirectory()
        // Tests/Janus/conf (Janus's own settings for the lab) and the mountpoint users get.
        for (from, name) in [("Tests/Janus/conf/janus.jcfg", "janus.jcfg"), ("Tests/Janus/conf/janus.transport.http.jcfg", "janus.transport.http.jcfg"),
                             ("docs/janus/janus.plugin.streaming.jcfg", "janus.plugin.streaming.jcfg")] {
            try FileManager.default.copyItem(atPath: Self.root.appendingPathComponent(from).path, toPath: dir + "/" + name)
        }
        let command = lab.command(in: "rv", [Self.executable, "-F", dir, "-o", "-N", "-L", dir + "/janus.log"])
        process = Process()
        process.executableURL = URL(fileURLWithPath: command.executable)
        process.arguments = command.arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            let log = (try? String(contentsOfFile: dir + "/janus.log", encoding: .utf8)) ?? ""
            if log.contains("HTTP webserver started") && log.contains("Streaming plugin initialized") { return }
            Thread.sleep(forTimeInterval: 0.1)
        }
        stop()
        throw NATLab.LabError(message: "Janus did not start: \(log)")
    }

    var log: String { (try? String(contentsOfFile: dir + "/janus.log", encoding: .utf8)) ?? "" }

    func stop() {
        if process.isRunning {
            process.interrupt()
            let deadline = Date().addingTimeInterval(5)
            while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// Starts Tests/Janus/subscriber.py behind home `site`, watching the mountpoint for `seconds`.
    func subscribe(from lab: NATLab, site: String, seconds: Double) throws -> Subscriber {
        let out = dir + "/subscriber-\(site).jsonl"
        let command = lab.command(in: site, ["/usr/bin/env", "python3", "-u", "-B", Self.root.appendingPathComponent("Tests/Janus/subscriber.py").path,
                                             "--janus", "http://\(Self.address):8088/janus", "--mountpoint", "7400", "--seconds", "\(seconds)"])
        return try Subscriber(executable: command.executable, arguments: command.arguments, output: out)
    }

    /// One run of subscriber.py; its JSON lines once it ends.
    final class Subscriber {
        struct Picture {
            var t: Int64
            var frame: Int?
            var capture: Int?
        }
        struct Result {
            var watching: Int64
            var video: [Picture]
            var audio: [(t: Int64, rms: Double)]
            var log: String
        }

        let process = Process()
        let output: String

        init(executable: String, arguments: [String], output: String) throws {
            self.output = output
            _ = FileManager.default.createFile(atPath: output, contents: nil)
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            let file = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
            process.standardOutput = file
            process.standardError = file
            process.standardInput = FileHandle.nullDevice
            try process.run()
        }

        func finish(timeout: Double) throws -> Result {
            let deadline = Date().addingTimeInterval(timeout)
            while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            var result = Result(watching: 0, video: [], audio: [], log: String(text.suffix(3000)))
            for line in text.split(separator: "\n") {
                guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                      let t = (o["t"] as? NSNumber)?.int64Value else { continue }
                switch o["event"] as? String {
                case "watching": result.watching = t
                case "video": result.video.append(Picture(t: t, frame: o["frame"] as? Int, capture: o["capture"] as? Int))
                case "audio": result.audio.append((t, (o["rms"] as? NSNumber)?.doubleValue ?? 0))
                default: break
                }
            }
            if result.watching == 0 { throw NATLab.LabError(message: "the subscriber never watched: \(result.log)") }
            return result
        }
    }
}
