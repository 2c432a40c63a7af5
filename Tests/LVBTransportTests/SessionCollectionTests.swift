import LVBCore
import LVBCrypto
import LVBTestSupport
import Testing
@testable import LVBTransport

/// Sessions neither side needs end (`collectSessions`), one either side
/// needs or sends on stays; a relayed session's direct paths are punched by
/// both sides again (`punch`), and a probe beside a relayed session never
/// rekeys it over the relay.
@Suite struct SessionCollectionTests {
    private static func config(_ role: NodeRole, relayKbps: Int = 0) -> TransportConfig {
        var c = TransportConfig()
        c.hello = Hello(agent: "test", role: role)
        c.relayKbps = relayKbps
        return c
    }

    private static func node(_ net: VirtualNetwork, _ random: SeededRandom, _ role: NodeRole = .viewer, relayKbps: Int = 0,
                             behind nat: VirtualNAT? = nil) -> SimulatedNode {
        SimulatedNode(network: net, identity: try! Identity(seed: random.bytes(32)), random: SeededRandom(seed: random.uint64()),
                      config: config(role, relayKbps: relayKbps), address: nat?.nextPrivateAddress())
    }

    @Test func aSessionNeitherSideNeedsEndsAndOneEitherSideNeedsStays() {
        let net = VirtualNetwork(seed: 71, defaultImpairment: Impairment(delay: .milliseconds(10)))
        let random = SeededRandom(seed: 71)
        let a = Self.node(net, random), b = Self.node(net, random), c = Self.node(net, random)
        let rendezvous = Self.node(net, random, .rendezvous)
        for other in [b, c, rendezvous] { a.core.connect(to: other.address, expecting: other.id) }
        #expect(net.run(until: { [b, c, rendezvous].allSatisfy { a.established(with: $0) } }, timeout: .seconds(5)))
        // A needs its session with C (C itself does not); nobody needs A–B; nobody needs the rendezvous's.
        let collect = net.every(.seconds(1)) {
            a.core.collectSessions { $0 == c.id }
            b.core.collectSessions { _ in false }
            c.core.collectSessions { _ in false }
        }
        net.run(for: .seconds(25))
        collect.cancel()
        #expect(!a.established(with: b) && !b.established(with: a), "A–B ended")
        #expect(a.goneEvents.contains { $0 == (b.id, .idle) } && b.goneEvents.contains { $0 == (a.id, .idle) })
        #expect(a.established(with: c) && c.established(with: a), "A needs A–C: it stays though C released it")
        #expect(a.established(with: rendezvous), "a rendezvous's session is never released")
        #expect(a.core.stats.sessionsClosedIdle + b.core.stats.sessionsClosedIdle == 2)
        #expect(c.core.stats.sessionsReleased == 1 && a.core.stats.sessionsReleased == 1)
        // A session ended as idle is dialled again like any other.
        a.core.connect(to: b.address, expecting: b.id)
        #expect(net.run(until: { a.established(with: b) }, timeout: .seconds(5)))
    }

    @Test func sendingOnASessionKeepsItAndTakesAReleaseBack() {
        let net = VirtualNetwork(seed: 72, defaultImpairment: Impairment(delay: .milliseconds(10)))
        let random = SeededRandom(seed: 72)
        let a = Self.node(net, random), b = Self.node(net, random)
        a.core.connect(to: b.address, expecting: b.id)
        #expect(net.run(until: { a.established(with: b) }, timeout: .seconds(5)))
        let collect = net.every(.seconds(1)) {
            a.core.collectSessions { _ in false }
            b.core.collectSessions { _ in false }
        }
        // B alone talks, every 4 s: A released the session long ago, B never does.
        let talk = net.every(.seconds(4)) { try? b.core.send([1, 2, 3], channel: .gossip, to: a.id) }
        net.run(for: .seconds(40))
        #expect(a.established(with: b), "B uses the session")
        #expect(a.core.stats.sessionsReleased >= 1 && b.core.stats.sessionsReleased == 0)
        talk.cancel()
        // Once B stops, both release it and it ends.
        #expect(net.run(until: { !a.established(with: b) && !b.established(with: a) }, timeout: .seconds(25)))
        #expect(a.goneEvents.contains { $0 == (b.id, .idle) })
        // A release taken back: A released, then sends again before B released.
        a.core.connect(to: b.address, expecting: b.id)
        #expect(net.run(until: { a.established(with: b) }, timeout: .seconds(5)))
        var sent = 0
        let bTalks = net.every(.seconds(2)) { try? b.core.send([9], channel: .gossip, to: a.id) }
        net.run(for: .seconds(20))
        let released = a.core.stats.sessionsReleased
        try? a.core.send([7], channel: .gossip, to: b.id)
        sent += 1
        bTalks.cancel()
        net.run(for: .seconds(3))
        #expect(a.established(with: b), "A took its release back (sent on it)")
        net.run(for: .seconds(25))
        collect.cancel()
        #expect(!a.established(with: b), "and released it again later: \(released) → \(a.core.stats.sessionsReleased)")
        #expect(a.core.stats.sessionsReleased > released && sent == 1)
    }

    /// Two nodes behind port-restricted NATs (each lets in only what its
    /// inside sent to) whose punch failed (the path was down) run on the
    /// rendezvous's relay. Once the path is up, a one-sided probe would
    /// die at the other NAT; the punch both sides make through the relay's
    /// node (`punch`) takes the session direct, and the relay carries nothing more.
    @Test func aRelayedSessionIsPunchedByBothSidesOnceThePathIsUp() {
        let net = VirtualNetwork(seed: 73, defaultImpairment: Impairment(delay: .milliseconds(15)))
        let random = SeededRandom(seed: 73)
        let rendezvous = Self.node(net, random, .rendezvous, relayKbps: 5000)
        let a = Self.node(net, random, behind: net.makeNAT(behavior: NATMix.linuxMasquerade))
        let b = Self.node(net, random, behind: net.makeNAT(behavior: NATMix.linuxMasquerade))
        for n in [a, b] { n.core.connect(to: rendezvous.address, expecting: rendezvous.id) }
        #expect(net.run(until: { [a, b].allSatisfy { $0.established(with: rendezvous) } }, timeout: .seconds(5)))
        net.run(for: .milliseconds(500))
        net.cut(a.address, b.address)
        a.core.reach(b.id, at: [])
        #expect(net.run(until: { a.established(with: b) && b.established(with: a) }, timeout: .seconds(5)))
        #expect(a.core.link(to: b.id).hasPrefix("rendezvous relay"), "\(a.core.link(to: b.id))")
        var received = 0
        b.onTransportEvent = { if case .message(_, .gossip, _) = $0 { received += 1 } }
        let talk = net.every(.milliseconds(100)) { try? a.core.send([1], channel: .gossip, to: b.id) }
        // (Past the first punch's own direct tries, which go on beside the
        // session the relay won for about 6 s: `ResumedPunch`.)
        net.run(for: .seconds(8))
        let handshakes = a.core.stats.handshakesCompleted + b.core.stats.handshakesCompleted
        net.heal(a.address, b.address)
        #expect(net.run(until: { a.core.link(to: b.id).hasPrefix("direct") && b.core.link(to: a.id).hasPrefix("direct") },
                        timeout: .seconds(20)), "\(a.core.link(to: b.id)), \(b.core.link(to: a.id))")
        #expect(a.core.stats.punchesAsked + b.core.stats.punchesAsked >= 1)
        #expect(a.core.stats.repunches >= 1 && b.core.stats.repunches >= 1, "both sides punched")
        net.run(for: .seconds(1))
        let relayed = rendezvous.core.stats.relayedBytes, got = received
        net.run(for: .seconds(5))
        talk.cancel()
        #expect(rendezvous.core.stats.relayedBytes == relayed, "the rendezvous relays nothing once the session is direct")
        #expect(received >= got + 45)
        // The punches that met (each side's initiation, counted by both sides), no rekeys over the relay.
        #expect(a.core.stats.handshakesCompleted + b.core.stats.handshakesCompleted - handshakes <= 4)
    }

    /// Behind two random-port NATs nothing direct can meet: the probes of
    /// the direct paths go on and lapse, and the session is never rekeyed
    /// over the relay because of them (it was every few seconds: each
    /// unanswered probe was retried to every address, the relay's first).
    @Test func probesBesideARelayedSessionLapseWithoutRekeyingIt() {
        let net = VirtualNetwork(seed: 74, defaultImpairment: Impairment(delay: .milliseconds(15)))
        let random = SeededRandom(seed: 74)
        let rendezvous = Self.node(net, random, .rendezvous, relayKbps: 5000)
        let hard = NATMix.symmetricRandom
        let a = Self.node(net, random, behind: net.makeNAT(behavior: hard.with { $0.portAllocation = .random(startPort: 1024, seed: 3) }))
        let b = Self.node(net, random, behind: net.makeNAT(behavior: hard.with { $0.portAllocation = .random(startPort: 1024, seed: 4) }))
        for n in [a, b] { n.core.connect(to: rendezvous.address, expecting: rendezvous.id) }
        #expect(net.run(until: { [a, b].allSatisfy { $0.established(with: rendezvous) } }, timeout: .seconds(5)))
        net.run(for: .milliseconds(500))
        a.core.reach(b.id, at: [])
        #expect(net.run(until: { a.established(with: b) && b.established(with: a) }, timeout: .seconds(5)))
        let talk = net.every(.milliseconds(200)) {
            try? a.core.send([1], channel: .gossip, to: b.id)
            try? b.core.send([2], channel: .gossip, to: a.id)
        }
        net.run(for: .seconds(2))
        let handshakes = a.core.stats.handshakesCompleted + b.core.stats.handshakesCompleted
        net.run(for: .seconds(40))
        talk.cancel()
        #expect(a.core.link(to: b.id).hasPrefix("rendezvous relay"))
        #expect(a.core.stats.punchesAsked + b.core.stats.punchesAsked >= 4, "the direct paths were punched again and again")
        #expect(a.core.stats.handshakesCompleted + b.core.stats.handshakesCompleted == handshakes, "no rekey over the relay")
    }
}
