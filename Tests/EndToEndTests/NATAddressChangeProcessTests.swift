import Foundation
import LVBMesh
import Testing

/// A home whose outside address changes mid-stream (issue 48; an ISP's new
/// lease, simulated by giving the NAT router a new outside address, which
/// drops its conntrack entries): a host behind an ordinary NAT with one
/// relay slot, viewer 2 its child and viewer 3 viewer 2's child, each
/// behind its own ordinary NAT, the rendezvous relaying. Viewer 2's home
/// is renumbered. Viewer 2 notices (the rendezvous sees it elsewhere),
/// moves to a new socket and has every session punched again: neither
/// viewer waits more than 2 s for a new picture, viewer 2's parent link
/// is direct again within 5 s (not left on the rendezvous's relay), and
/// chat goes both ways.
@Suite(.serialized, .ownThread, .enabled(if: NATLab.available)) struct NATAddressChangeProcessTests {
    static let fps = 15

    private static func tree(_ stats: [String: Any]?) -> [String: Any]? { stats?["tree"] as? [String: Any] }
    private static func frames(_ stats: [String: Any]?) -> Int? { (stats?["media"] as? [String: Any])?["frames"] as? Int }

    @Test func aViewersHomeChangesItsAddressAndThePictureGoesOn() throws {
        let lab = try NATLab(tag: "lvm\(getpid() % 1000)", sites: 3)
        defer { lab.remove() }
        let (rv, host, room, hostID) = try lab.room(relayKbps: 8000, hostArguments: [
            "--size", "160x96", "--fps", "\(Self.fps)", "--gop", "1", "--bitrate", "150", "--audio", "none", "--relay-slots", "1"])
        var all = [rv, host]
        defer { for p in all { p.signal(SIGTERM); _ = p.waitExit() } }
        var viewers: [NodeProcess] = []
        for site in 2...3 {
            let v = try lab.run("\(site)", ["join", room, "--rendezvous", lab.rendezvous, "--ephemeral", "--json",
                                            "--nick", "v\(site)", "--relay-slots", "1"])
            all.append(v)
            viewers.append(v)
            #expect(v.waitFor("first_frame", timeout: 15) != nil, "viewer \(site) never played: \(v.stderr)")
        }
        let (mover, below) = (viewers[0], viewers[1])
        let moverID = try #require(mover.waitFor("ready")?["id"] as? String)
        // The tree: host → viewer 2 → viewer 3, every link direct.
        var links: [String] = []
        let settle = Date().addingTimeInterval(10)
        repeat {
            Thread.sleep(forTimeInterval: 0.5)
            links = viewers.snapshot().map { "\(Self.tree($0)?["parent"] as? String ?? "none") \(Self.tree($0)?["parent_path"] as? String ?? "none")" }
        } while Date() < settle && links != ["\(hostID) direct", "\(moverID) direct"]
        // (Viewer 3's link may still run through the rendezvous's relay.)
        print("address change: the tree before the move: \(links)")
        try #require(links.first == "\(hostID) direct" && links.last?.hasPrefix(moverID) == true, "the tree before the move: \(links)")

        try lab.renumber(2, to: 3)
        let movedAt = Date()
        var stall = [0.0, 0.0], last = viewers.snapshot().map { Self.frames($0) ?? 0 }, lastNew = [movedAt, movedAt]
        var directAgain: Double?
        while Date().timeIntervalSince(movedAt) < 8 {
            Thread.sleep(forTimeInterval: 0.1)
            let stats = viewers.snapshot(timeout: 1)
            for i in 0..<2 {
                let f = Self.frames(stats[i]) ?? last[i]
                if f > last[i] { last[i] = f; lastNew[i] = Date() }
                stall[i] = max(stall[i], Date().timeIntervalSince(lastNew[i]))
            }
            let path = Self.tree(stats[0])?["parent_path"] as? String
            let address = Self.tree(stats[0])?["parent_address"] as? String
            if directAgain == nil, path == "direct", Date().timeIntervalSince(lastNew[0]) < 0.3, Date().timeIntervalSince(movedAt) > 0.5,
               mover.events.contains(where: { $0["event"] as? String == "moved" }) {
                directAgain = Date().timeIntervalSince(movedAt)
                print("address change: direct again via \(address ?? "?")")
            }
        }
        let moved = mover.events.first { $0["event"] as? String == "moved" }
        print("address change: moved \(moved?["from"] as? String ?? "?") → \(moved?["to"] as? String ?? "?"); longest wait for a picture: viewer 2 \(String(format: "%.2f", stall[0])) s, viewer 3 \(String(format: "%.2f", stall[1])) s; viewer 2's parent link direct again after \(directAgain.map { String(format: "%.2f", $0) } ?? "never") s")
        #expect((moved?["to"] as? String)?.hasPrefix("\(lab.internet.rawValue).2.3:") ?? false,
                "viewer 2 never noticed its new address: \(String(describing: moved))")
        #expect(stall[0] <= 2, "viewer 2 waited \(stall[0]) s for a picture")
        #expect(stall[1] <= 2, "viewer 3 waited \(stall[1]) s for a picture")
        #expect(directAgain.map { $0 <= 5 } ?? false, "viewer 2's parent link not direct again within 5 s")

        // Chat both ways across the moved home.
        mover.send("from the moved home")
        host.send("to the moved home")
        for (name, member, line) in [("host", host, "from the moved home"), ("viewer 3", below, "from the moved home"),
                                     ("viewer 2", mover, "to the moved home")] {
            let deadline = Date().addingTimeInterval(5)
            while Date() < deadline, !member.events.contains(where: { $0["event"] as? String == "chat" && $0["text"] as? String == line }) {
                Thread.sleep(forTimeInterval: 0.1)
            }
            #expect(member.events.contains { $0["event"] as? String == "chat" && $0["text"] as? String == line }, "\(name) never got \"\(line)\"")
        }
    }
}
