import Foundation
import LVBMesh
import Testing

/// Dual-stack homes (issue 48, IPv6 candidates): every home behind a hard
/// IPv4 NAT (random ports: no IPv4 punch can meet) and with a global IPv6
/// address behind its router's stateful firewall, the rendezvous reached
/// over IPv4 and relaying. Each node lists its IPv6 address among its
/// own, introductions pass it on, both sides send at once, and every
/// viewer's parent link ends up direct over IPv6: the rendezvous relays
/// only while a punch is under way. Before, nodes offered IPv4 alone and
/// every such link ran through the rendezvous.
@Suite(.serialized, .ownThread, .enabled(if: NATLab.available)) struct NATDualStackProcessTests {
    static let viewers = 5, hostSlots = 2

    private static func tree(_ stats: [String: Any]?) -> [String: Any]? { stats?["tree"] as? [String: Any] }

    @Test func everyViewersParentLinkIsDirectOverIPv6BehindHardIPv4NATs() throws {
        let lab = try NATLab(tag: "lv4\(getpid() % 1000)", sites: 1 + Self.viewers, hard: Set(1...(1 + Self.viewers)), ipv6: true)
        defer { lab.remove() }
        let rv = try lab.run("rv", ["rendezvous", "--ephemeral", "--listen", "[::]:7600", "--json", "--relay-kbps", "8000"])
        var all = [rv]
        defer { for p in all { p.signal(SIGTERM); _ = p.waitExit() } }
        #expect(rv.waitFor("ready") != nil, "rendezvous: \(rv.stderr)")
        let host = try lab.run("1", ["host", "--ephemeral", "--listen", "[::]:7400", "--json", "--rendezvous", lab.rendezvous,
                                     "--size", "160x96", "--fps", "15", "--gop", "1", "--bitrate", "150", "--audio", "none",
                                     "--relay-slots", "\(Self.hostSlots)"])
        all.append(host)
        let ready = try #require(host.waitFor("ready"), "host: \(host.stderr)")
        let room = try #require(ready["room"] as? String)
        Thread.sleep(forTimeInterval: 1)
        var viewers: [NodeProcess] = []
        for site in 2...(1 + Self.viewers) {
            viewers.append(try lab.run("\(site)", ["join", room, "--rendezvous", lab.rendezvous, "--ephemeral", "--json",
                                                   "--listen", "[::]:0", "--relay-slots", "2", "--nick", "v\(site)"]))
            all.append(viewers.last!)
            Thread.sleep(forTimeInterval: 0.3)
        }
        for (n, v) in viewers.enumerated() {
            #expect(v.waitFor("first_frame", timeout: 15) != nil, "viewer \(n + 2) never played: \(v.stderr)")
        }
        // Within 10 s every parent link is direct, over IPv6 (a relayed start probes the direct paths and moves).
        var links: [String] = []
        let deadline = Date().addingTimeInterval(10)
        repeat {
            Thread.sleep(forTimeInterval: 0.5)
            links = viewers.snapshot().map { s in
                let t = Self.tree(s)
                return "\(t?["parent_path"] as? String ?? "none") \(t?["parent_address"] as? String ?? "-")"
            }
        } while Date() < deadline && !links.allSatisfy { $0.hasPrefix("direct [2001:db8:") }
        print("dual-stack homes behind hard IPv4 NATs: parent links \(links)")
        #expect(links.allSatisfy { $0.hasPrefix("direct [2001:db8:") }, "\(links)")
        let host6 = (Self.tree([host].snapshot().first ?? nil)?["children"] as? Int) ?? 0
        #expect(host6 <= Self.hostSlots)
    }
}
