import Foundation
import LVBMesh
import Testing

/// Real NATs: network namespaces made for the test (`NATLab`: an "internet"
/// with the rendezvous, and two sites, each a node behind a router that
/// masquerades with nftables), the binary as processes in them. Needs root, `ip` and
/// `nft` (Scripts/setup installs nftables); skipped without them. Nothing
/// leaves the namespaces, and they are removed afterwards.
@Suite(.serialized, .ownThread, .enabled(if: NATLab.available)) struct NATNamespaceProcessTests {
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

    /// A room joined by ticket, no rendezvous: a host on the internet with
    /// one slot, two viewers behind hard NATs and one behind an ordinary
    /// one. No pair of viewers can punch (a hard NAT's port differs for each
    /// destination; the others filter by port), so the host, which
    /// introduces them, relays (`--relay-kbps`, 2500 by default): every
    /// viewer plays and every chat line arrives. Without it
    /// (`--relay-kbps 0`) a viewer below another gets nothing.
    @Test(arguments: [true, false])
    func aTicketRoomsHostRelaysForViewersThatCannotPunch(hostRelays: Bool) throws {
        let lab = try NATLab(tag: "lvk\(getpid() % 1000)", sites: 3, hard: [1, 2])
        defer { lab.remove() }
        let host = try lab.run("rv", ["host", "--ephemeral", "--listen", "0.0.0.0:7400", "--advertise", "\(lab.outside(0)):7400", "--json",
                                      "--relay-slots", "1", "--size", "320x180"] + (hostRelays ? [] : ["--relay-kbps", "0"]))
        defer { host.signal(SIGTERM); _ = host.waitExit() }
        let ticket = try #require(host.waitFor("ready")?["ticket"] as? String, "host: \(host.stderr)")
        let hostID = try #require(host.waitFor("ready")?["id"] as? String)
        var viewers: [NodeProcess] = []
        for site in 1...3 {
            viewers.append(try lab.run(String(site), ["join", ticket, "--ephemeral", "--json", "--nick", "v\(site)", "--relay-slots", "2", "--duration", "14"]))
        }
        defer { for v in viewers where v.process.isRunning { v.signal(SIGKILL) } }
        for v in viewers { _ = v.waitFor("admitted", timeout: 10) }
        Thread.sleep(forTimeInterval: 4)
        for (i, v) in viewers.enumerated() { v.send("a line from v\(i + 1)") }
        for v in viewers { _ = v.waitExit(timeout: 30) }
        let frames = viewers.map { ($0.waitFor("exit", timeout: 1)?["media"] as? [String: Any])?["frames"] as? Int ?? 0 }
        let paths = viewers.flatMap { v in v.events.compactMap { ($0["tree"] as? [String: Any])?["parent_path"] as? String } }
        let heard = viewers.enumerated().map { i, v in
            (1...3).filter { $0 != i + 1 }.allSatisfy { n in v.events.contains { $0["event"] as? String == "chat" && $0["text"] as? String == "a line from v\(n)" } }
        }
        print("ticket room, host relays \(hostRelays): frames \(frames), parent paths \(Set(paths)), lines heard \(heard)")
        if hostRelays {
            #expect(frames.allSatisfy { $0 > 100 }, "every viewer plays: \(frames)")
            #expect(paths.contains("relay via \(hostID)"), "a viewer takes the stream from another through the host: \(Set(paths))")
            #expect(heard.allSatisfy { $0 }, "every viewer shows the others' lines")
            host.signal(SIGTERM)
            _ = host.waitExit()
            let transport = host.waitFor("exit", timeout: 1)?["stats"] as? [String: Any] ?? [:]
            #expect((transport["relayed_bytes"] as? Int ?? 0) > 100_000, "\(transport)")
        } else {
            #expect(frames.contains { $0 < 100 }, "a viewer that can only take the stream from another, through a relay, gets (almost) nothing: \(frames)")
        }
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
