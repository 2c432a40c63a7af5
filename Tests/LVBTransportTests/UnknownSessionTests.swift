import LVBCore
import LVBCrypto
import LVBTestSupport
import Testing
@testable import LVBTransport

/// Unknown-session packets (type 8, issue 47): a node restarted under a
/// running session (a rendezvous with its home, or one with a new identity
/// on the same address) answers the other side's next packet, which then
/// takes the session as lost at once, dials again and hears the new
/// session's hello; a forged or untimely one changes nothing.
@Suite struct UnknownSessionTests {
    static let link = Impairment(delay: .milliseconds(10))

    private func hellos(_ node: SimulatedNode, from id: NodeID) -> Int {
        node.events.reduce(0) { if case let .hello(h, _) = $1, h == id { $0 + 1 } else { $0 } }
    }

    /// `server` (its identity, at its address) dialled by `client`, by id or by address alone.
    private func pair(seed: UInt64, blind: Bool) -> (VirtualNetwork, server: SimulatedNode, client: SimulatedNode) {
        let net = VirtualNetwork(seed: seed, defaultImpairment: Self.link)
        let nodes = net.makeNodes(2, seed: seed &+ 100)
        nodes[1].core.connect(to: nodes[0].address, expecting: blind ? nil : nodes[0].id)
        #expect(net.run(until: { self.hellos(nodes[1], from: nodes[0].id) == 1 && nodes[0].established(with: nodes[1]) }, timeout: .seconds(2)))
        return (net, nodes[0], nodes[1])
    }

    /// The process at `old`'s address starts again (its sessions gone), with `identity`.
    private func restart(_ old: SimulatedNode, as identity: Identity, in net: VirtualNetwork, seed: UInt64) -> SimulatedNode {
        old.crash()
        return SimulatedNode(network: net, identity: identity, random: SeededRandom(seed: seed), address: old.address)
    }

    @Test func aRestartedPeerIsNoticedAtTheNextPacketAndTheSessionStartsAgain() throws {
        let (net, server, client) = pair(seed: 1, blind: false)
        net.run(for: .seconds(2))
        let again = restart(server, as: server.core.identity, in: net, seed: 7)
        net.run(for: .milliseconds(300))
        #expect(client.goneEvents.isEmpty, "nothing sent yet, nothing known")
        let sentAt = net.clock.now()
        try client.core.send([1], channel: .gossip, to: server.id)
        #expect(net.run(until: { !client.goneEvents.isEmpty }, timeout: .seconds(1)))
        #expect(client.goneEvents.first?.1 == .reset)
        #expect(net.clock.now() - sentAt < .milliseconds(100), "one round trip, not 15 s of silence")
        #expect(again.core.stats.unknownSessionsSent == 1 && client.core.stats.sessionsReset == 1)
        // Dialled again at once; the new session's hello is reported again (the layers above start over).
        #expect(net.run(until: { self.hellos(client, from: server.id) == 2 && again.established(with: client) }, timeout: .seconds(2)))
        try client.core.send([2], channel: .gossip, to: server.id)
        net.run(for: .milliseconds(50))
        #expect(again.received.last?.2 == [2])
    }

    @Test func aPeerRestartedRightAfterSpeakingIsAskedAndTakenAsLostWhenItCannotAnswer() throws {
        let (net, server, client) = pair(seed: 6, blind: false)
        try server.core.send([1], channel: .gossip, to: client.id)
        net.run(for: .milliseconds(20))
        let again = restart(server, as: server.core.identity, in: net, seed: 10)
        let sentAt = net.clock.now()
        try client.core.send([2], channel: .gossip, to: server.id)
        #expect(net.run(until: { !client.goneEvents.isEmpty }, timeout: .seconds(3)))
        #expect(client.goneEvents.first?.1 == .reset)
        let took = net.clock.now() - sentAt
        #expect(took >= TransportConstants.unknownSessionQuiet && took < TransportConstants.unknownSessionQuiet + .milliseconds(300), "\(took)")
        #expect(net.run(until: { self.hellos(client, from: server.id) == 2 && again.established(with: client) }, timeout: .seconds(2)))
    }

    @Test func aPeerDialledByAddressIsFollowedToANewIdentityThere() throws {
        let (net, server, client) = pair(seed: 2, blind: true)
        net.run(for: .seconds(2))
        let newIdentity = try Identity(seed: [UInt8](repeating: 9, count: 32))
        let again = restart(server, as: newIdentity, in: net, seed: 8)
        try client.core.send([1], channel: .gossip, to: server.id)
        #expect(net.run(until: { client.goneEvents.first?.0 == server.id }, timeout: .seconds(1)))
        #expect(client.goneEvents.first?.1 == .reset)
        // Dialled again by address (XX), as at first: the node there now is another.
        #expect(net.run(until: { self.hellos(client, from: again.id) == 1 }, timeout: .seconds(2)))
        #expect(client.core.isEstablished(with: again.id) && !client.core.isEstablished(with: server.id))
    }

    @Test func aPeerDialledByAddressThatFellSilentIsDialledAgainByAddress() throws {
        let (net, server, client) = pair(seed: 3, blind: true)
        server.crash()
        #expect(net.run(until: { !client.goneEvents.isEmpty }, timeout: .seconds(20)))
        #expect(client.goneEvents.first?.1 == .silence)
        let again = SimulatedNode(network: net, identity: try Identity(seed: [UInt8](repeating: 5, count: 32)),
                                  random: SeededRandom(seed: 9), address: server.address)
        #expect(net.run(until: { self.hellos(client, from: again.id) == 1 }, timeout: .seconds(10)))
    }

    @Test func aForgedOrUntimelyUnknownSessionChangesNothing() throws {
        let (net, server, client) = pair(seed: 4, blind: false)
        let index = try #require(client.core.peersByID[server.id]?.current?.remoteIndex)
        // The right index while the peer spoke within the last second: a ping asks it, its pong clears the doubt.
        try server.core.send([1], channel: .gossip, to: client.id)
        net.run(for: .milliseconds(50))
        client.core.receive(Packet.unknownSession(index: index), from: server.address)
        // The wrong index, or the right one from another address: nobody's session.
        net.run(for: .seconds(2))
        client.core.receive(Packet.unknownSession(index: index &+ 1), from: server.address)
        client.core.receive(Packet.unknownSession(index: index), from: .ipv4(10, 9, 9, 9, port: 7400))
        // Not eight bytes: malformed.
        client.core.receive(Packet.unknownSession(index: index) + [0], from: server.address)
        net.run(for: .milliseconds(100))
        #expect(client.goneEvents.isEmpty && client.established(with: server))
        #expect(client.core.stats.droppedUnknownSession == 2 && client.core.stats.droppedMalformed == 1)
        #expect(client.core.stats.sessionsReset == 0)
    }

    @Test func answersAreSmallAndFewPerSource() throws {
        let (net, server, client) = pair(seed: 5, blind: false)
        _ = net
        let unauthenticatedBefore = server.core.stats.bytesSentToUnauthenticated
        var answers: [[UInt8]] = []
        client.inboundFilter = { d, _ in
            if d.first == PacketType.unknownSession.rawValue { answers.append(d) }
            return false
        }
        // 100 transport packets (32 bytes, the smallest) under an index the server does not hold, at once.
        for n in 0..<100 {
            var w = ByteWriter(capacity: 32)
            w.write(PacketType.transport.rawValue)
            w.writeZeros(3)
            w.writeLE(UInt32(0xDEAD_0000 + n))
            w.writeZeros(24)
            server.core.receive(w.bytes, from: client.address)
        }
        net.run(for: .milliseconds(100))
        #expect(answers.count == TransportConstants.unknownSessionBurst, "\(answers.count) answers")
        #expect(answers.allSatisfy { $0.count == 8 })
        #expect(server.core.stats.bytesSentToUnauthenticated - unauthenticatedBefore == 8 * answers.count)
    }
}
