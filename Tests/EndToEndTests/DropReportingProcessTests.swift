import Foundation
import LVBCore
import LVBCrypto
import LVBTransport
import Testing

/// What lvbnode(1) promises about bad datagrams and start-up output, checked
/// against the binary: every drop is counted under the documented counter
/// and, at --log-level debug, logged with its reason.
@Suite(.serialized, .ownThread) struct DropReportingProcessTests {
    @Test func everyDropReasonIsCountedAndLoggedAtDebug() throws {
        let host = try NodeProcess(["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json", "--video", "none",
                                    "--audio", "none", "--log-level", "debug"])
        defer { host.signal(SIGKILL) }
        let ready = try #require(host.waitFor("ready"), "host never became ready: \(host.stderr)")
        let hostID = try JoinTicket(text: try #require(ready["ticket"] as? String)).host
        let port = try #require((ready["listen"] as? String)?.split(separator: ":").last.flatMap { UInt16($0) })
        let probe = try UDPProbe()
        let hostAddress = PeerAddress.ipv4(127, 0, 0, 1, port: port)

        // A real session, so that transport packets can fail in the ways only a session allows.
        let node = CraftedNode()
        node.core.connect(to: hostAddress, expecting: hostID)
        for d in node.take() { probe.send(d, toPort: port) }
        let response = try #require(probe.receive(timeout: 10), "no handshake response")
        node.core.receive(response, from: hostAddress)
        try node.core.send(Array("one".utf8), channel: .gossip, to: hostID)
        try node.core.send(Array("two".utf8), channel: .gossip, to: hostID)
        let transport = node.take().filter { $0.first == PacketType.transport.rawValue }
        try #require(transport.count >= 2)
        probe.send(transport[0], toPort: port)                      // accepted: the session is up
        probe.send(transport[0], toPort: port)                      // replay
        var forged = transport[1]
        forged[forged.count - 1] ^= 0x01                            // fails authentication
        probe.send(forged, toPort: port)

        var badMAC1 = CraftedNode.ikInitiation(to: hostID, port: port)
        badMAC1[badMAC1.count - 20] ^= 0x01                         // inside mac1
        probe.send(badMAC1, toPort: port)
        probe.send([9] + [UInt8](repeating: 0, count: 40), toPort: port)                  // unknown type
        probe.send([3, 0, 0, 0] + (0..<60).map { UInt8($0) }, toPort: port)              // cookie reply, unknown index
        probe.send([4, 0, 0, 0, 1, 2, 3, 4] + [UInt8](repeating: 7, count: 40), toPort: port)  // transport, unknown index

        Thread.sleep(forTimeInterval: 0.5)
        host.signal(SIGTERM)
        #expect(host.waitExit() == 0)
        let stats = try #require(host.events.last(where: { $0["event"] as? String == "exit" })?["stats"] as? [String: Any])
        #expect(stats["dropped_malformed"] as? Int == 1)
        #expect(stats["dropped_mac1"] as? Int == 1)
        #expect(stats["dropped_decrypt"] as? Int == 1)
        #expect(stats["dropped_replay"] as? Int == 1)
        #expect(stats["dropped_unknown_index"] as? Int == 2, "a random cookie reply counts as an unknown index")
        #expect(stats["dropped"] as? Int == 6)

        let from = "dropped datagram from 127.0.0.1:\(probe.port): "
        let lines = host.stderr.split(separator: "\n").filter { $0.contains(" debug ") && $0.contains(from) }
        for reason in ["malformed: unknown packet type 9", "ikInitiation with a wrong mac1",
                       "cookie reply for unknown index", "transport packet for unknown index",
                       "transport packet failed authentication", "transport packet replayed"] {
            #expect(lines.contains { $0.contains(from + reason) }, "no debug line for '\(reason)' in:\n\(lines.joined(separator: "\n"))")
        }
        #expect(lines.count == 6)
    }

    /// lvbnode(1) JSON OUTPUT: the host prints what it announces at start,
    /// its own joined, its profile (with --nick) and room_info, before ready.
    @Test func theHostPrintsItsOwnAnnouncementsBeforeReady() throws {
        let (status, out, err) = try runToEnd(["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json", "--video", "none",
                                               "--audio", "none", "--nick", "ana", "--title", "T", "--duration", "0.5"])
        #expect(status == 0, "\(err)")
        let events = out.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
        let names = events.compactMap { $0["event"] as? String }
        #expect(Array(names.prefix(4)) == ["joined", "profile", "room_info", "ready"])
        #expect(events.first?["role"] as? String == "host")
        #expect(events.dropFirst().first?["nick"] as? String == "ana")
        #expect(events.dropFirst(2).first?["title"] as? String == "T")
    }
}
