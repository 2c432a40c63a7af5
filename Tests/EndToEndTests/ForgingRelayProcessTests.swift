import Foundation
import LVBMedia
import Testing

/// A relay that lies, between real processes over loopback (issue 32): the
/// host's two slots go to a liar (`--lie MODE`, four slots) and an honest
/// relay (two); of the three viewers that join next (one slot each) one at
/// least takes the liar (the honest relay has room for two) and gets from
/// it media the host did not make. Each refuses all of it, says so in a
/// `warning` event, leaves the liar within a second of the first lie, and
/// plays on: the frame numbers it writes only rise, none magenta; nobody
/// blames the host or an honest relay.
@Suite(.serialized, .ownThread) struct ForgingRelayProcessTests {
    static let fps = 30

    private static func parent(_ stats: [String: Any]?) -> String? { (stats?["tree"] as? [String: Any])?["parent"] as? String }
    private static func media(_ stats: [String: Any]?) -> [String: Any]? { stats?["media"] as? [String: Any] }

    @Test(arguments: RelayLieMode.allCases)
    func childrenOfALyingRelayRefuseItLeaveItWithinASecondAndPlayOn(mode: RelayLieMode) throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let host = try NodeProcess(["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json", "--size", "160x96",
                                    "--fps", "\(Self.fps)", "--gop", "2", "--bitrate", "300", "--relay-slots", "2"])
        let ready = try #require(host.waitFor("ready"), "host never became ready: \(host.stderr)")
        let ticket = try #require(ready["ticket"] as? String), hostID = try #require(ready["id"] as? String)
        func join(_ extra: [String]) throws -> (NodeProcess, String) {
            let p = try NodeProcess(["join", ticket, "--ephemeral", "--json", "--listen", "127.0.0.1:0"] + extra)
            let id = try #require(p.waitFor("ready")?["id"] as? String, "\(p.stderr)")
            #expect(p.waitFor("admitted", timeout: 10) != nil, "not admitted: \(p.stderr)")
            return (p, id)
        }
        let (liar, liarID) = try join(["--lie", mode.rawValue, "--relay-slots", "4", "--no-media"])
        #expect(liar.waitFor("tree", timeout: 5) { $0["parent"] as? String == hostID } != nil, "the liar is not below the host")
        let (honest, _) = try join(["--relay-slots", "2", "--no-media"])
        #expect(honest.waitFor("tree", timeout: 5) { $0["parent"] as? String == hostID } != nil, "the honest relay is not below the host")
        // Give their positions time to reach the room: joiners see the liar with four free slots.
        Thread.sleep(forTimeInterval: 1.5)
        var viewers: [(process: NodeProcess, id: String, y4m: String)] = []
        for i in 0..<3 {
            let y4m = "\(dir)/viewer\(i).y4m"
            let (p, id) = try join(["--relay-slots", "1", "--video-out", y4m])
            viewers.append((p, id, y4m))
        }
        Thread.sleep(forTimeInterval: 3)

        // Each viewer the liar fed refuses what it sent, blames it alone,
        // and is fed by another within a second of the first refusal (the
        // blame comes 300 ms after it).
        var lied = 0
        for (i, v) in viewers.enumerated() {
            let warnings = v.process.events.filter { $0["event"] as? String == "warning" && $0["kind"] as? String == "forged_media" }
            #expect(warnings.count <= 1, "viewer \(i): \(warnings)")
            guard let warning = warnings.first else { continue }
            lied += 1
            #expect(warning["peer"] as? String == liarID, "viewer \(i) blamed \(warning): \(v.process.stderr)")
            let reason = warning["reason"] as? String
            switch mode {
            case .alter, .inject, .replay: #expect(reason == "signature" || reason == "audio", "viewer \(i): \(reason ?? "none")")
            case .strip: #expect(reason == "unsealed", "viewer \(i): \(reason ?? "none")")
            }
            let blamedAt = warning["_at"] as? Double ?? 0
            let moved = v.process.waitFor("tree", timeout: 5) {
                ($0["_at"] as? Double ?? 0) >= blamedAt && $0["parent"] as? String != nil && $0["parent"] as? String != liarID
            }
            let took = (moved?["_at"] as? Double).map { $0 - blamedAt + 0.3 }
            #expect(took.map { $0 <= 1.0 } ?? false, "viewer \(i) left the liar \(took.map { "\(Int($0 * 1000)) ms" } ?? "never") after its first refusal")
        }
        #expect(lied >= 1, "no viewer took the liar: \(viewers.map(\.process).snapshot().map { Self.parent($0).map { String($0.prefix(6)) } ?? "none" })")
        // They play on: 2 s later, about 2 s of pictures more.
        let before = viewers.map(\.process).snapshot().map { Self.media($0)?["frames"] as? Int ?? 0 }
        Thread.sleep(forTimeInterval: 2)
        let after = viewers.map(\.process).snapshot()
        for (i, s) in after.enumerated() {
            let frames = Self.media(s)?["frames"] as? Int ?? 0
            #expect(frames - before[i] >= Self.fps, "viewer \(i): \(frames - before[i]) frames in 2 s after leaving the liar")
            #expect(Self.parent(s) != nil && Self.parent(s) != liarID, "viewer \(i) is fed by \(Self.parent(s) ?? "none")")
            #expect((Self.media(s)?["lying_parents"] as? Int ?? 9) <= 1, "\(String(describing: Self.media(s)))")
        }
        // Nobody else blamed anyone.
        for p in [host, liar, honest] {
            #expect(!p.events.contains { $0["kind"] as? String == "forged_media" }, "\(p.events.filter { $0["kind"] as? String == "forged_media" })")
        }

        for p in [host, liar, honest] + viewers.map(\.process) { p.signal(SIGTERM) }
        for v in viewers { #expect(v.process.waitExit() == 0, "\(v.process.stderr)") }
        for p in [host, liar, honest] { _ = p.waitExit() }

        // What they wrote: every picture the host's, numbers only rising, none magenta.
        for (i, v) in viewers.enumerated() {
            let reader = try Y4MReader(path: v.y4m)
            var numbers: [Int] = [], unreadable = 0, magenta = 0
            while let f = try reader.nextFrame() {
                if let n = SyntheticVideo.readFrameNumber(f) { numbers.append(n) } else { unreadable += 1 }
                if f.u[f.u.count / 2] > 190 && f.v[f.v.count / 2] > 190 { magenta += 1 }
            }
            #expect(numbers.count >= 2 * Self.fps, "viewer \(i) wrote \(numbers.count) pictures")
            #expect(unreadable == 0 && magenta == 0, "viewer \(i): \(unreadable) unreadable, \(magenta) magenta pictures")
            #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 }, "viewer \(i): frame numbers go backwards")
        }
    }
}
