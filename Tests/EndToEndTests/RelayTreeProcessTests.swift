import Foundation
import LVBMedia
import Testing

/// The media tree between real processes over loopback (issue 11): a host
/// and 30 viewers, most of them `--no-media` (they relay without decoding),
/// the last few decoding to Y4M files. Every viewer takes the stream from a
/// parent, the host serves at most its slots, the tree is deeper than one
/// hop; a relay with decoding children is killed and its children move to
/// their backups within 2 s while the frame numbers they decode go on.
@Suite(.serialized, .ownThread) struct RelayTreeProcessTests {
    static let hostSlots = 4, fps = 15
    /// In join order: the host's 4 children relay to 2 each, the 8 below
    /// them to 4 each; the 18 after them (the last 4 decoding) all land at
    /// depth 3, below relays that can be killed. (Not `--relay-slots 0`: a
    /// leaf that decodes nothing takes no stream at all.)
    static let layout: [(count: Int, slots: Int, decodes: Bool)] = [(4, 2, false), (8, 4, false), (14, 4, false), (4, 4, true)]

    /// One viewer process and what the test knows of it.
    struct Viewer {
        let process: NodeProcess
        let id: String
        let y4m: String?
        var decodes: Bool { y4m != nil }
    }

    /// The `tree` object of a node's latest periodic `stats` line (not a `/stats` answer).
    private func latestTree(_ p: NodeProcess) -> [String: Any]? {
        p.events.last { $0["event"] as? String == "stats" && $0["transport"] == nil && $0["tree"] != nil }?["tree"] as? [String: Any]
    }

    private static func tree(_ stats: [String: Any]?) -> [String: Any]? { stats?["tree"] as? [String: Any] }
    private static func parent(_ stats: [String: Any]?) -> String? { tree(stats)?["parent"] as? String }
    private static func frames(_ stats: [String: Any]?) -> Int? { (stats?["media"] as? [String: Any])?["frames"] as? Int }

    @Test func thirtyViewersShareTheStreamAndARelaysChildrenRecoverWithinTwoSeconds() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // A small picture with a keyframe every second, so 31 processes fit on two cores.
        let host = try NodeProcess(["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json", "--size", "160x96",
                                    "--fps", "\(Self.fps)", "--gop", "1", "--bitrate", "150", "--audio", "none",
                                    "--relay-slots", "\(Self.hostSlots)"])
        let ready = try #require(host.waitFor("ready"), "host never became ready: \(host.stderr)")
        let ticket = try #require(ready["ticket"] as? String), hostID = try #require(ready["id"] as? String)

        // One after another, each once it is admitted.
        var viewers: [Viewer] = []
        for (count, slots, decodes) in Self.layout {
            for _ in 0..<count {
                let n = viewers.count
                let y4m = decodes ? "\(dir)/viewer\(n).y4m" : nil
                let p = try NodeProcess(["join", ticket, "--ephemeral", "--json", "--listen", "127.0.0.1:0", "--relay-slots", "\(slots)"]
                                        + (y4m.map { ["--video-out", $0] } ?? ["--no-media"]))
                let id = try #require(p.waitFor("ready")?["id"] as? String, "viewer \(n): \(p.stderr)")
                #expect(p.waitFor("admitted", timeout: 10) != nil, "viewer \(n) not admitted: \(p.stderr)")
                viewers.append(Viewer(process: p, id: id, y4m: y4m))
            }
        }
        #expect(viewers.count == 30)
        let decoding = viewers.filter(\.decodes)
        for v in decoding {
            #expect(v.process.waitFor("first_frame", timeout: 5) != nil, "no first frame: \(v.process.stderr)")
        }

        // Every viewer settles below a parent, and each node's children are
        // exactly the viewers that name it as their parent.
        let all = [host] + viewers.map(\.process), ids = [hostID] + viewers.map(\.id)
        var stats: [[String: Any]?] = []
        var settled = false
        let settleBy = Date().addingTimeInterval(10)
        while !settled && Date() < settleBy {
            Thread.sleep(forTimeInterval: 0.5)
            stats = all.snapshot()
            let parents = stats.dropFirst().map(Self.parent)
            settled = parents.allSatisfy { $0 != nil } && zip(ids, stats).allSatisfy { id, s in
                Self.tree(s)?["children"] as? Int == parents.filter { $0 == id }.count
            }
        }
        let parents = stats.dropFirst().map(Self.parent)
        let depths = stats.dropFirst().map { Self.tree($0)?["depth"] as? Int }
        #expect(settled, "parents \(parents.map { $0.map { String($0.prefix(6)) } ?? "none" }), children \(stats.map { Self.tree($0)?["children"] ?? "?" })")
        #expect(depths.allSatisfy { ($0 ?? 0) >= 1 }, "every viewer has a depth: \(depths)")
        let hostChildren = try #require(Self.tree(stats[0])?["children"] as? Int, "host stats: \(String(describing: stats[0]))")
        let namingHost = parents.filter { $0 == hostID }.count
        #expect(hostChildren <= Self.hostSlots && namingHost <= Self.hostSlots,
                "the host serves \(hostChildren) directly, \(namingHost) viewers name it")
        #expect(depths.contains { ($0 ?? 0) > 1 }, "no viewer below another: \(depths)")
        // A viewer's depth is one more than its parent's; nobody has more children than slots.
        let depthOf = Dictionary(uniqueKeysWithValues: zip(ids, [0] + depths.map { $0 ?? -9 }))
        for (p, d) in zip(parents, depths) {
            if let p, let d { #expect(d == (depthOf[p] ?? -9) + 1, "depth \(d) below \(p.prefix(6)) at \(depthOf[p] ?? -9)") }
        }
        for s in stats {
            let t = Self.tree(s)
            #expect((t?["children"] as? Int ?? 0) <= (t?["slots"] as? Int ?? 0), "\(String(describing: t))")
        }

        // What each node forwards over its last 2 s interval: about its
        // children times the host's stream (taken once every child was on).
        Thread.sleep(forTimeInterval: 2.2)
        let hostMedia = host.events.last { $0["event"] as? String == "stats" && $0["transport"] == nil }?["media"] as? [String: Any]
        let streamKbps = try #require(hostMedia?["video_kbps"] as? Double)
        #expect(streamKbps > 20, "host video \(streamKbps) kbit/s")
        for (p, name) in zip(all, ["host"] + viewers.indices.map { "viewer \($0)" }) {
            guard let t = latestTree(p), let children = t["children"] as? Int, let kbps = t["forwarded_kbps"] as? Double else {
                Issue.record("\(name): no tree in its stats lines")
                continue
            }
            if children > 0 {
                let perChild = kbps / Double(children)
                #expect(perChild > 0.5 * streamKbps && perChild < 3 * streamKbps,
                        "\(name) forwards \(kbps) kbit/s to \(children) children; the stream is \(streamKbps) kbit/s")
            } else {
                #expect(kbps < 0.5 * streamKbps, "\(name) forwards \(kbps) kbit/s to no children")
            }
        }

        // The victim: a relay (not the host) that decoding viewers name as
        // their parent, the one with the most of them.
        let now = all.snapshot()
        let parentNow = Dictionary(uniqueKeysWithValues: zip(viewers.map(\.id), now.dropFirst().map(Self.parent)))
        let decoderParents = decoding.compactMap { parentNow[$0.id] ?? nil }.filter { $0 != hostID }
        let victimID = try #require(Dictionary(grouping: decoderParents, by: { $0 }).max { $0.value.count < $1.value.count }?.key,
                                    "no decoding viewer below a relay: \(decoding.map { parentNow[$0.id] ?? nil })")
        let victim = try #require(viewers.first { $0.id == victimID })
        let orphans = viewers.filter { parentNow[$0.id] == victimID }
        let orphanDecoders = orphans.filter(\.decodes)
        let framesAtKill = Dictionary(uniqueKeysWithValues: orphanDecoders.map { v in
            (v.id, Self.frames(now[1 + viewers.firstIndex { $0.id == v.id }!]) ?? 0)
        })
        victim.process.signal(SIGKILL)
        let killedAt = Date()

        // Each child names a new parent (the stream arrived from it) within 2 s.
        var recovered: [String: Double] = [:]
        while recovered.count < orphans.count && Date().timeIntervalSince(killedAt) < 4 {
            Thread.sleep(forTimeInterval: 0.1)
            let waiting = orphans.filter { recovered[$0.id] == nil }
            for (v, s) in zip(waiting, waiting.map(\.process).snapshot(timeout: 1)) {
                if let p = Self.parent(s), p != victimID, (Self.tree(s)?["failovers"] as? Int ?? 0) >= 1 {
                    recovered[v.id] = Date().timeIntervalSince(killedAt)
                }
            }
        }
        for v in orphans {
            let took = recovered[v.id]
            #expect(took.map { $0 < 2 } ?? false, "a child of the killed relay recovered after \(took.map { "\($0)" } ?? "over 4") s")
        }

        // The decoding children go on decoding.
        Thread.sleep(forTimeInterval: 3)
        for (v, s) in zip(orphanDecoders, orphanDecoders.map(\.process).snapshot()) {
            let before = framesAtKill[v.id] ?? 0, later = Self.frames(s) ?? 0
            #expect(later > before + 2 * Self.fps, "decoded \(before) frames at the kill, \(later) 3 s later")
        }
        // Nobody else lost its place, and the host still serves at most its slots.
        let remaining = viewers.filter { $0.id != victimID }
        let final = ([host] + remaining.map(\.process)).snapshot()
        for s in final.dropFirst() {
            #expect(Self.parent(s) != nil && Self.parent(s) != victimID, "\(String(describing: Self.tree(s)))")
        }
        #expect((Self.tree(final[0])?["children"] as? Int ?? .max) <= Self.hostSlots)
        // The decoding children resumed under their new parents where they stopped.
        let resumes = final.reduce(0) { $0 + (Self.tree($1)?["resumes"] as? Int ?? 0) }
        #expect(resumes >= orphanDecoders.count, "\(resumes) children resumed; \(orphanDecoders.count) decoding children lost their parent")

        for p in all where p !== victim.process { p.signal(SIGTERM) }
        for v in decoding { #expect(v.process.waitExit() == 0, "decoder: \(v.process.stderr)") }
        for p in all where p !== victim.process { _ = p.waitExit() }

        // The pictures the children decoded, as written: every frame number
        // the host drew, in order; the new parent sent what the outage missed.
        for v in orphanDecoders {
            let reader = try Y4MReader(path: try #require(v.y4m))
            var numbers: [Int] = []
            while let f = try reader.nextFrame() { if let n = SyntheticVideo.readFrameNumber(f) { numbers.append(n) } }
            let atKill = framesAtKill[v.id] ?? 0
            #expect(numbers.count > atKill + 2 * Self.fps, "\(numbers.count) pictures, \(atKill) of them before the kill")
            #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 }, "frame numbers go backwards")
            let gap = zip(numbers, numbers.dropFirst()).map { $1 - $0 }.max() ?? 0
            #expect(gap == 1, "\(gap - 1) pictures missing in a row")
        }
    }
}
