import Foundation
import LVBMesh
import Testing

/// Real NATs: network namespaces made for the test (`NATLab`: an "internet"
/// with the rendezvous, and two sites, each a node behind a router that
/// masquerades with nftables), the binary as processes in them. Needs root, `ip` and
/// `nft` (Scripts/setup installs nftables); skipped without them. Nothing
/// leaves the namespaces, and they are removed afterwards.
@Suite(.serialized, .enabled(if: NATLab.available)) struct NATNamespaceProcessTests {
    @Test func behindSymmetricNATsAViewerJoinsThroughTheRelayAndWatches() throws {
        let lab = try NATLab(tag: "lvs\(getpid() % 1000)", sites: 2, hard: [1, 2])
        defer { lab.remove() }
        let (rv, host, room, _) = try lab.room(relayKbps: 4000)
        defer { for p in [host, rv] { p.signal(SIGTERM); _ = p.waitExit() } }
        let viewer = try lab.run("2", ["join", room, "--rendezvous", lab.rendezvous, "--ephemeral", "--json", "--duration", "5"])
        #expect(viewer.waitFor("first_frame", timeout: 10) != nil, "viewer: \(viewer.stderr)")
        #expect(viewer.waitExit(timeout: 20) == 0, "\(viewer.stderr)")
        let media = try #require(viewer.waitFor("exit", timeout: 1)?["media"] as? [String: Any])
        #expect((media["frames"] as? Int ?? 0) > 90, "\(media)")
        rv.signal(SIGTERM)
        #expect(rv.waitExit() == 0)
        let counters = try #require(rv.waitFor("exit", timeout: 1)?["rendezvous"] as? [String: Any])
        #expect(counters["introductions"] as? Int == 1 && (counters["relayed_datagrams"] as? Int ?? 0) > 100, "\(counters)")
    }

    /// Two ordinary Linux NATs (masquerade keeps ports): no relay needed,
    /// the introduction's simultaneous dial punches through, and the session
    /// runs straight to the host's NAT.
    @Test func behindPortPreservingNATsAViewerPunchesThroughDirectly() throws {
        let lab = try NATLab(tag: "lvd\(getpid() % 1000)", sites: 2)
        defer { lab.remove() }
        let (rv, host, room, hostID) = try lab.room()
        defer { for p in [host, rv] { p.signal(SIGTERM); _ = p.waitExit() } }
        let viewer = try lab.run("2", ["join", room, "--rendezvous", lab.rendezvous, "--ephemeral", "--json", "--duration", "4"])
        let session = viewer.waitFor("session", timeout: 10, where: { $0["peer"] as? String == hostID })
        #expect(session?["address"] as? String == "198.18.1.2:7400", "the host's NAT, straight: \(String(describing: session)) \(viewer.stderr)")
        #expect(viewer.waitFor("first_frame", timeout: 10) != nil)
        #expect(viewer.waitExit(timeout: 20) == 0, "\(viewer.stderr)")
    }

    @Test func behindSymmetricNATsWithoutARelayTheJoinFailsWithOneLine() throws {
        let lab = try NATLab(tag: "lvn\(getpid() % 1000)", sites: 2, hard: [1, 2])
        defer { lab.remove() }
        let (rv, host, room, _) = try lab.room(hostArguments: ["--video", "none", "--audio", "none"])
        defer { for p in [host, rv] { p.signal(SIGTERM); _ = p.waitExit() } }
        let viewer = try lab.run("2", ["join", room, "--rendezvous", lab.rendezvous, "--ephemeral", "--json", "--no-media", "--duration", "4"])
        #expect(viewer.waitExit(timeout: 20) == 1)
        #expect(viewer.stderr.contains("never connected"), "\(viewer.stderr)")
    }
}
