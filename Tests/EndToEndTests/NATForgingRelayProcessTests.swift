import Foundation
import LVBMedia
import LVBMesh
import Testing

/// A lying relay behind real NATs (issue 32): the room of
/// `ForgingRelayProcessTests` with every node behind a home NAT of its own
/// in `NATLab`'s namespaces, joined by room id through a rendezvous. The
/// viewers the liar feeds refuse what it sends, leave it within a second of
/// the first lie for a relay they reach through two NATs, and play on;
/// nobody blames the host or an honest relay. On a public-range internet
/// (the liar altering bytes) and on a private-range one with the viewers
/// behind hard NATs and the rendezvous relaying (the liar injecting
/// pictures of its own).
@Suite(.serialized, .ownThread, .enabled(if: NATLab.available)) struct NATForgingRelayProcessTests {
    enum Variant: String, CustomStringConvertible, CaseIterable {
        case publicRangeAlter, privateRangeHardInject
        var description: String { rawValue }
        var internet: NATLab.Internet { self == .privateRangeHardInject ? .privateRange : .publicRange }
        var hard: Set<Int> { self == .privateRangeHardInject ? [4, 5, 6] : [] }
        var relayKbps: Int { self == .privateRangeHardInject ? 8000 : 0 }
        var lie: RelayLieMode { self == .privateRangeHardInject ? .inject : .alter }
    }

    static let fps = 15

    private static func parent(_ stats: [String: Any]?) -> String? { (stats?["tree"] as? [String: Any])?["parent"] as? String }
    private static func media(_ stats: [String: Any]?) -> [String: Any]? { stats?["media"] as? [String: Any] }

    @Test(arguments: Variant.allCases)
    func viewersBehindNATsRefuseALyingRelayLeaveItAndPlayOn(_ variant: Variant) throws {
        let lab = try NATLab(tag: "lvl\(getpid() % 1000)", sites: 6, internet: variant.internet, hard: variant.hard)
        defer { lab.remove() }
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (rv, host, room, hostID) = try lab.room(relayKbps: variant.relayKbps, hostArguments: [
            "--size", "160x96", "--fps", "\(Self.fps)", "--gop", "1", "--bitrate", "150", "--relay-slots", "2"])
        var nodes: [NodeProcess] = []
        defer { for p in nodes + [host, rv] { p.signal(SIGTERM); _ = p.waitExit() } }
        func join(_ site: Int, _ extra: [String]) throws -> (NodeProcess, String) {
            let p = try lab.run("\(site)", ["join", room, "--rendezvous", lab.rendezvous, "--ephemeral", "--json"] + extra)
            nodes.append(p)
            let id = try #require(p.waitFor("ready")?["id"] as? String, "site \(site): \(p.stderr)")
            #expect(p.waitFor("admitted", timeout: 10) != nil, "site \(site) not admitted: \(p.stderr)")
            return (p, id)
        }
        let (liar, liarID) = try join(2, ["--lie", variant.lie.rawValue, "--relay-slots", "4", "--no-media"])
        #expect(liar.waitFor("tree", timeout: 10) { $0["parent"] as? String == hostID } != nil, "(\(variant)) the liar is not below the host")
        let (honest, _) = try join(3, ["--relay-slots", "2", "--no-media"])
        #expect(honest.waitFor("tree", timeout: 10) { $0["parent"] as? String == hostID } != nil, "(\(variant)) the honest relay is not below the host")
        Thread.sleep(forTimeInterval: 1.5)
        var viewers: [NodeProcess] = []
        for site in 4...6 { viewers.append(try join(site, ["--relay-slots", "1", "--video-out", "\(dir)/v\(site).y4m"]).0) }
        for (n, v) in viewers.enumerated() {
            #expect(v.waitFor("first_frame", timeout: 15) != nil, "(\(variant)) viewer \(n) never decoded a picture: \(v.stderr)")
        }
        Thread.sleep(forTimeInterval: 3)

        var lied = 0
        for (n, v) in viewers.enumerated() {
            let warnings = v.events.filter { $0["event"] as? String == "warning" && $0["kind"] as? String == "forged_media" }
            #expect(warnings.count <= 1, "(\(variant)) viewer \(n): \(warnings)")
            guard let warning = warnings.first else { continue }
            lied += 1
            #expect(warning["peer"] as? String == liarID, "(\(variant)) viewer \(n) blamed \(warning)")
            let blamedAt = warning["_at"] as? Double ?? 0
            let moved = v.waitFor("tree", timeout: 5) {
                ($0["_at"] as? Double ?? 0) >= blamedAt && $0["parent"] as? String != nil && $0["parent"] as? String != liarID
            }
            let took = (moved?["_at"] as? Double).map { $0 - blamedAt + 0.3 }
            #expect(took.map { $0 <= 1.0 } ?? false, "(\(variant)) viewer \(n) left the liar \(took.map { "\(Int($0 * 1000)) ms" } ?? "never") after its first refusal")
        }
        #expect(lied >= 1, "(\(variant)) no viewer took the liar")
        let before = viewers.snapshot().map { Self.media($0)?["frames"] as? Int ?? 0 }
        Thread.sleep(forTimeInterval: 2)
        let after = viewers.snapshot()
        print("NAT liar (\(variant)): \(lied) viewers lied to; parents now \(after.map { Self.parent($0).map { String($0.prefix(6)) } ?? "none" })")
        for (n, s) in after.enumerated() {
            let frames = Self.media(s)?["frames"] as? Int ?? 0
            #expect(frames - before[n] >= Self.fps, "(\(variant)) viewer \(n): \(frames - before[n]) frames in 2 s after the liar")
            #expect(Self.parent(s) != nil && Self.parent(s) != liarID, "(\(variant)) viewer \(n) is fed by \(Self.parent(s) ?? "none")")
        }
        for p in [host, liar, honest] {
            #expect(!p.events.contains { $0["kind"] as? String == "forged_media" }, "(\(variant)) \(p.events.filter { $0["kind"] as? String == "forged_media" })")
        }
        // What they wrote: the host's pictures only, numbers rising, none magenta.
        for v in viewers { v.signal(SIGTERM) }
        for (n, v) in viewers.enumerated() { #expect(v.waitExit() == 0, "(\(variant)) viewer \(n): \(v.stderr)") }
        for site in 4...6 {
            let reader = try Y4MReader(path: "\(dir)/v\(site).y4m")
            var numbers: [Int] = [], bad = 0
            while let f = try reader.nextFrame() {
                if let number = SyntheticVideo.readFrameNumber(f) { numbers.append(number) } else { bad += 1 }
                if f.u[f.u.count / 2] > 190 && f.v[f.v.count / 2] > 190 { bad += 1 }
            }
            #expect(numbers.count >= 3 * Self.fps && bad == 0, "(\(variant)) viewer at site \(site): \(numbers.count) pictures, \(bad) forged")
            #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 }, "(\(variant)) site \(site): frame numbers go backwards")
        }
    }
}
