import LVBCore
import LVBCrypto
import LVBTestSupport
import Testing
@testable import LVBTransport

/// A punch the relay won (`ResumedPunch`): two nodes behind ordinary NATs
/// (Linux's masquerade: one outside port, replies only) are introduced by
/// a rendezvous that relays. The initiation along the relay is answered
/// before either NAT has opened, so the session starts there; the punch's
/// direct initiations go on beside it and the session is direct within a
/// few hundred milliseconds, not at the first direct probe a second later.
@Suite struct ResumedPunchTests {
    @Test func aSessionTheRelayWonGoesDirectWithinTheFirstPunch() {
        let net = VirtualNetwork(seed: 61, defaultImpairment: Impairment(delay: .milliseconds(15)))
        let random = SeededRandom(seed: 61)
        func node(_ role: NodeRole, relayKbps: Int = 0, behind nat: VirtualNAT? = nil) -> SimulatedNode {
            var c = TransportConfig()
            c.hello = Hello(agent: "test", role: role)
            c.relayKbps = relayKbps
            return SimulatedNode(network: net, identity: try! Identity(seed: random.bytes(32)), random: SeededRandom(seed: random.uint64()),
                                 config: c, address: nat?.nextPrivateAddress())
        }
        let rendezvous = node(.rendezvous, relayKbps: 5000)
        let a = node(.viewer, behind: net.makeNAT(behavior: NATMix.linuxMasquerade))
        let b = node(.viewer, behind: net.makeNAT(behavior: NATMix.linuxMasquerade))
        for n in [a, b] { n.core.connect(to: rendezvous.address, expecting: rendezvous.id) }
        #expect(net.run(until: { [a, b].allSatisfy { $0.established(with: rendezvous) } }, timeout: .seconds(5)))
        net.run(for: .milliseconds(500))
        a.core.reach(b.id, at: [])
        #expect(net.run(until: { a.established(with: b) }, timeout: .seconds(5)))
        let start = net.clock.now()
        #expect(a.core.link(to: b.id).hasPrefix("rendezvous relay"), "the relay answers first: \(a.core.link(to: b.id))")
        #expect(net.run(until: { a.core.link(to: b.id) == "direct IPv4" && b.core.link(to: a.id) == "direct IPv4" }, timeout: .seconds(3)),
                "\(a.core.link(to: b.id)), \(b.core.link(to: a.id))")
        let took = net.clock.now() - start
        print("resumed punch: direct \(took) after the session came up on the relay; resumed \(a.core.stats.punchesResumed + b.core.stats.punchesResumed), direct probes \(a.core.stats.directProbes + b.core.stats.directProbes)")
        #expect(a.core.stats.punchesResumed + b.core.stats.punchesResumed >= 1)
        // (The first direct probe would come a second after the relay won.)
        #expect(took < TransportConstants.directProbeFirst / 2, "direct after \(took)")
        #expect(a.core.stats.punchesAsked + b.core.stats.punchesAsked == 0, "no second introduction was needed")
    }
}
