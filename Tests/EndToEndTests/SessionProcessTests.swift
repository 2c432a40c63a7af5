import Foundation
import Testing

/// The real binary as separate processes over loopback: what a user sees.
@Suite(.serialized, .ownThread) struct SessionProcessTests {
    private func startHost(_ extra: [String] = []) throws -> (NodeProcess, ready: [String: Any]) {
        let host = try NodeProcess(["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json", "--video", "none", "--audio", "none"] + extra)
        let ready = try #require(host.waitFor("ready"), "host never became ready: \(host.stderr)")
        return (host, ready)
    }

    @Test func joinByTicketEstablishesAnIKSessionAndLeavesCleanly() throws {
        let (host, ready) = try startHost()
        let hostID = try #require(ready["id"] as? String)
        let ticket = try #require(ready["ticket"] as? String)
        #expect(ticket.hasPrefix("lvb1"))
        let viewer = try NodeProcess(["join", ticket, "--ephemeral", "--json"])
        let viewerReady = try #require(viewer.waitFor("ready"))
        let viewerID = try #require(viewerReady["id"] as? String)
        #expect(viewer.waitFor("connecting")?["pattern"] as? String == "IK")
        #expect(viewer.waitFor("session", where: { $0["peer"] as? String == hostID }) != nil)
        #expect(host.waitFor("session", where: { $0["peer"] as? String == viewerID }) != nil)
        #expect(viewer.waitFor("hello", where: { $0["role"] as? String == "host" }) != nil)
        #expect(host.waitFor("hello", where: { $0["role"] as? String == "viewer" }) != nil)
        // Keepalive pings measure the round trip.
        #expect(viewer.waitFor("rtt") != nil)

        viewer.send("/peers")
        let peers = try #require(viewer.waitFor("peers"))
        #expect((peers["peers"] as? [[String: Any]])?.first?["id"] as? String == hostID)

        viewer.send("/quit")
        #expect(viewer.waitExit() == 0)
        #expect(host.waitFor("peer_gone", timeout: 5, where: { $0["peer"] as? String == viewerID && $0["reason"] as? String == "bye" }) != nil)
        host.signal(SIGTERM)
        #expect(host.waitExit() == 0)
        #expect(host.events.last?["event"] as? String == "exit")
    }

    @Test func joinByAddressUsesXXAndReportsTheHostsID() throws {
        let (host, ready) = try startHost()
        let hostID = try #require(ready["id"] as? String)
        let port = try #require((ready["listen"] as? String)?.split(separator: ":").last.map(String.init))
        let viewer = try NodeProcess(["join", "localhost:\(port)", "--ephemeral", "--json", "--duration", "20"])
        #expect(viewer.waitFor("connecting")?["pattern"] as? String == "XX")
        #expect(viewer.waitFor("session")?["peer"] as? String == hostID)
        // Exit 0 means the node was in the room: stop it once admitted.
        #expect(viewer.waitFor("admitted") != nil)
        viewer.signal(SIGINT)
        #expect(viewer.waitExit() == 0)
        host.signal(SIGINT)
        #expect(host.waitExit() == 0)
    }

    @Test func sessionsComeUpThroughTheImpairmentRelayAtTwentyPercentLoss() throws {
        let (host, ready) = try startHost()
        let hostID = try #require(ready["id"] as? String)
        let hostListen = try #require(ready["listen"] as? String)
        let relay = try NodeProcess(["impair", "--listen", "127.0.0.1:0", "--to", hostListen,
                                     "--loss", "0.2", "--delay", "5", "--jitter", "5", "--seed", "7", "--json"])
        let relayAddress = try #require(relay.waitFor("ready")?["listen"] as? String)
        var viewers: [NodeProcess] = []
        for _ in 0..<2 {
            viewers.append(try NodeProcess(["join", relayAddress, "--ephemeral", "--json"]))
        }
        for v in viewers {
            // A handshake needs 3 datagrams through the loss: retries every 5 s.
            #expect(v.waitFor("session", timeout: 75, where: { $0["peer"] as? String == hostID }) != nil, "viewer stderr: \(v.stderr)")
        }
        for v in viewers { v.send("/quit"); _ = v.waitExit() }
        relay.signal(SIGTERM)
        _ = relay.waitExit()
        host.signal(SIGTERM)
        #expect(host.waitExit() == 0)
    }
}
