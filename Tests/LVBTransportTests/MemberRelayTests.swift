import LVBCore
import LVBCrypto
import LVBTestSupport
import Testing
@testable import LVBTransport

/// Members relay before the rendezvous (`MemberRelay`): two nodes behind
/// random-port NATs (no punch, no birthday between them) start on the
/// rendezvous's relay; after `memberRelayFirstAfter` their session moves
/// to the relay of the room's host, which both reach directly, and the
/// rendezvous relays nothing more.
@Suite struct MemberRelayTests {
    @Test func twoHardNATsMoveFromTheRendezvousRelayToTheHosts() {
        let net = VirtualNetwork(seed: 60, defaultImpairment: Impairment(delay: .milliseconds(15)))
        func config(_ role: NodeRole, relayKbps: Int) -> TransportConfig {
            var c = TransportConfig()
            c.hello = Hello(agent: "test", role: role)
            c.relayKbps = relayKbps
            return c
        }
        let random = SeededRandom(seed: 60)
        func node(_ role: NodeRole, relayKbps: Int = 0, behind nat: VirtualNAT? = nil) -> SimulatedNode {
            SimulatedNode(network: net, identity: try! Identity(seed: random.bytes(32)), random: SeededRandom(seed: random.uint64()),
                          config: config(role, relayKbps: relayKbps), address: nat?.nextPrivateAddress())
        }
        let rendezvous = node(.rendezvous, relayKbps: 5000)
        let host = node(.host, relayKbps: 2500)
        let hard = NATMix.symmetricRandom
        let a = node(.viewer, behind: net.makeNAT(behavior: hard.with { $0.portAllocation = .random(startPort: 1024, seed: 1) }))
        let b = node(.viewer, behind: net.makeNAT(behavior: hard.with { $0.portAllocation = .random(startPort: 1024, seed: 2) }))
        for n in [a, b] {
            n.core.config.nat = .hard
            n.core.connect(to: rendezvous.address, expecting: rendezvous.id)
            n.core.connect(to: host.address, expecting: host.id)
        }
        #expect(net.run(until: { [a, b].allSatisfy { $0.established(with: rendezvous) && $0.established(with: host) } }, timeout: .seconds(5)))
        net.run(for: .milliseconds(500))
        a.core.reach(b.id, at: [])
        #expect(net.run(until: { a.established(with: b) }, timeout: .seconds(5)))
        #expect(a.core.link(to: b.id).hasPrefix("rendezvous relay"), "\(a.core.link(to: b.id))")
        // Traffic both ways the whole time.
        var sent = 0
        let talk = net.every(.milliseconds(100)) {
            sent += 1
            try? a.core.send(Array("a\(sent)".utf8), channel: .gossip, to: b.id)
            try? b.core.send(Array("b\(sent)".utf8), channel: .gossip, to: a.id)
        }
        #expect(net.run(until: { a.core.link(to: b.id).hasPrefix("member relay") && b.core.link(to: a.id).hasPrefix("member relay") },
                        timeout: .seconds(15)), "\(a.core.link(to: b.id)), \(b.core.link(to: a.id))")
        #expect(a.core.link(to: b.id) == "member relay via \(host.id.text)")
        #expect(a.core.stats.memberRelayMoves + b.core.stats.memberRelayMoves >= 1)
        net.run(for: .seconds(1))  // what was in flight along the rendezvous's relay
        let (viaRendezvous, viaHost) = (rendezvous.core.stats.relayedBytes, host.core.stats.relayedBytes)
        let received = (a.received.count, b.received.count)
        net.run(for: .seconds(10))
        talk.cancel()
        print("member relay: the rendezvous relayed \(viaRendezvous) bytes before the move, \(rendezvous.core.stats.relayedBytes - viaRendezvous) after; the host \(host.core.stats.relayedBytes - viaHost) after")
        // (At most a handshake retry of the side that moved second: 180 bytes.)
        #expect(rendezvous.core.stats.relayedBytes - viaRendezvous <= 400, "the rendezvous relays no data any more")
        #expect(host.core.stats.relayedBytes - viaHost > 5000)
        #expect(a.received.count >= received.0 + 95 && b.received.count >= received.1 + 95, "messages both ways over the host's relay")
        #expect(a.core.link(to: b.id).hasPrefix("member relay") && b.core.link(to: a.id).hasPrefix("member relay"))
    }
}
