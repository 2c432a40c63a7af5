import LVBCore
import LVBCrypto
import LVBTestSupport
import Testing
@testable import LVBTransport

/// Birthday punching (`Birthday`) on the virtual network: a node behind a
/// NAT that gives every destination a new random port (Linux's
/// `random,fully-random`, `NATMix.symmetricRandom`) and one behind a
/// masquerade that keeps one port (`NATMix.linuxMasquerade`), introduced
/// by a public rendezvous that relays them; both know their NATs.
@Suite struct BirthdayTests {
    struct Pair {
        let net: VirtualNetwork
        let rendezvous: SimulatedNode, easy: SimulatedNode, hard: SimulatedNode
    }

    /// Sets the pair up and has the easy side reach the hard one through the rendezvous.
    static func pair(seed: UInt64, easyKind: NATKind = .easy, easy easyNAT: NATBehavior = NATMix.linuxMasquerade,
                     hard hardNAT: NATBehavior = NATMix.symmetricRandom) -> Pair {
        let net = VirtualNetwork(seed: seed, defaultImpairment: Impairment(delay: .milliseconds(15)))
        var rendezvousConfig = TransportConfig()
        rendezvousConfig.hello = Hello(agent: "test", role: .rendezvous)
        rendezvousConfig.relayKbps = 5000
        let hardNAT = hardNAT.with { $0.portAllocation = .random(startPort: 1024, seed: seed) }
        let nodes = net.makeNodes(behind: [nil, net.makeNAT(behavior: easyNAT), net.makeNAT(behavior: hardNAT)], seed: seed)
        let (rendezvous, easy, hard) = (nodes[0], nodes[1], nodes[2])
        rendezvous.core.config = rendezvousConfig
        // (TransportCore reads relayKbps at init: a rendezvous made with it.)
        let relay = SimulatedNode(network: net, identity: rendezvous.core.identity, random: SeededRandom(seed: seed ^ 7),
                                  config: rendezvousConfig, address: rendezvous.address)
        rendezvous.crash()
        easy.core.config.nat = easyKind
        easy.core.config.natKeepsPort = easyNAT.portPreservation
        hard.core.config.nat = .hard
        for n in [easy, hard] { n.core.connect(to: relay.address, expecting: relay.id) }
        _ = net.run(until: { easy.established(with: relay) && hard.established(with: relay) }, timeout: .seconds(5))
        net.run(for: .milliseconds(500))  // hellos: each knows the rendezvous by its role
        easy.core.reach(hard.id, at: [])
        return Pair(net: net, rendezvous: relay, easy: easy, hard: hard)
    }

    static func birthdays(_ node: SimulatedNode) -> [(met: Bool, after: Duration)] {
        node.events.compactMap { if case let .birthday(_, met, after) = $0 { (met, after) } else { nil } }
    }

    @Test func aHardAndAnEasyNATMeetWithoutTheRelay() {
        var met = 0, times: [Int] = [], probes: [Int] = []
        let runs = 20
        for seed in 1...UInt64(runs) {
            let p = Self.pair(seed: seed)
            #expect(p.net.run(until: { p.easy.established(with: p.hard) }, timeout: .seconds(5)), "seed \(seed): no session")
            #expect(p.easy.core.isRelayed(p.hard.id), "seed \(seed): the ordinary punch cannot meet a random-port NAT")
            let direct = p.net.run(until: { !p.easy.core.isRelayed(p.hard.id) && !p.hard.core.isRelayed(p.easy.id) }, timeout: .seconds(15))
            guard direct else { continue }
            met += 1
            #expect(p.hard.core.link(to: p.easy.id) == "birthday IPv4")
            #expect(p.easy.core.link(to: p.hard.id) == "birthday IPv4")
            #expect(p.hard.core.stats.birthdayMet == 1 && p.easy.core.stats.birthdayMet == 1)
            #expect(p.hard.endpoint.spares.count == 1, "the other spares are closed")
            // The easy side (a masquerade, which keeps ports) probed from a
            // spare of its own, whose port its acceptance named; that spare
            // carries the session now.
            #expect(p.easy.endpoint.spares.count == 1)
            #expect(p.easy.core.stats.birthdaySpares == 1)
            // The session goes on direct: the relay passes nothing more
            // (once what was in flight along it has arrived).
            p.net.run(for: .seconds(1))
            let relayed = p.rendezvous.core.stats.relayedBytes
            try? p.easy.core.send(Array("after".utf8), channel: .gossip, to: p.hard.id)
            try? p.hard.core.send(Array("back".utf8), channel: .gossip, to: p.easy.id)
            p.net.run(for: .seconds(20))
            #expect(p.hard.received.contains { $0.2 == Array("after".utf8) } && p.easy.received.contains { $0.2 == Array("back".utf8) })
            #expect(p.rendezvous.core.stats.relayedBytes == relayed)
            #expect(p.easy.core.link(to: p.hard.id) == "birthday IPv4", "keepalives hold the path")
            times += Self.birthdays(p.hard).filter(\.met).map { Int($0.after.milliseconds) }
            probes.append(p.easy.core.stats.birthdayProbes)
        }
        print("birthday punching, virtual network: met in \(met) of \(runs) pairs; hard side's ms \(times.sorted()); probes sent \(probes.sorted())")
        // 2,048 probes against 256 spares meet with 99.97 %.
        #expect(met >= runs - 1)
        #expect(abs(BirthdayConstants.chance() - 0.9997) < 0.0002)
        #expect(abs(BirthdayConstants.chance(probes: 1024) - 0.983) < 0.002)
    }

    @Test(arguments: [false, true])
    func anAddressDependentNATThatLooksEasyMeetsToo(addressDependentIsTheRequester: Bool) {
        // An address-dependent NAT (a port per destination IP) looks
        // endpoint-independent to one rendezvous's two ports: both sides
        // think themselves easy, the punch fails, and after 3 s on the
        // relay one of them offers; whichever direction can meet does.
        let adm = NATBehavior.addressDependent, masquerade = NATMix.linuxMasquerade
        let p = Self.pair(seed: addressDependentIsTheRequester ? 50 : 51, easyKind: .easy,
                          easy: addressDependentIsTheRequester ? adm : masquerade, hard: addressDependentIsTheRequester ? masquerade : adm)
        p.hard.core.config.nat = .easy  // (it looks so)
        #expect(p.net.run(until: { p.easy.established(with: p.hard) }, timeout: .seconds(5)))
        #expect(p.easy.core.isRelayed(p.hard.id))
        #expect(p.net.run(until: { p.easy.core.link(to: p.hard.id) == "birthday IPv4" && p.hard.core.link(to: p.easy.id) == "birthday IPv4" },
                          timeout: .seconds(60)))
        print("address-dependent NAT behind \(addressDependentIsTheRequester ? "the requester" : "the target"): offers \(p.easy.core.stats.birthdayOffers) + \(p.hard.core.stats.birthdayOffers), met after \(Self.birthdays(p.easy) + Self.birthdays(p.hard))")
    }

    /// A coordinator whose own session with a peer runs over a relay knows
    /// only the addresses that peer claimed (its LAN's): an introduction
    /// naming them is no "seen" address, and birthday punching keeps aiming
    /// where the rendezvous saw the peer. (Taking the first claimed LAN
    /// address for it sent every later attempt of the pair to the wrong
    /// network: in the NAT lab, one host missed all its hard viewers.)
    @Test func anIntroductionOfClaimedAddressesIsNoSeenAddress() throws {
        let p = Self.pair(seed: 60)
        #expect(p.net.run(until: { p.easy.established(with: p.hard) }, timeout: .seconds(5)))
        let seen = try #require(p.easy.core.introductions.seen[p.hard.id])
        #expect(!seen.isLocalScope, "where the rendezvous sees the hard side: \(seen)")
        let lan = PeerAddress.ipv4(192, 168, 1, 2, port: 7400)
        p.rendezvous.core.sendIntroduce(.introduction(request: 0, peer: p.hard.id, relay: false, addresses: [lan]), to: p.easy.id)
        p.net.run(for: .milliseconds(100))
        #expect(p.easy.core.introductions.seen[p.hard.id] == seen)
        // Flagged as seen, it is taken (a coordinator that sees the peer there).
        let moved = PeerAddress(host: seen.host, port: seen.port &+ 1)
        p.rendezvous.core.sendIntroduce(.introduction(request: 0, peer: p.hard.id, relay: false, seen: true, addresses: [moved, lan]), to: p.easy.id)
        p.net.run(for: .milliseconds(100))
        #expect(p.easy.core.introductions.seen[p.hard.id] == moved)
    }

    /// The probing side's session runs on its own spare once met: a peer
    /// there sees that spare's mapping, not the node's, and saying so is
    /// no witness of the node's NAT (three such ports would have made an
    /// endpoint-independent NAT look hard) nor of a move.
    @Test func whereAPeerSeesTheProbingSpareIsNoWitness() throws {
        let p = Self.pair(seed: 3)
        #expect(p.net.run(until: { p.easy.core.link(to: p.hard.id) == "birthday IPv4" }, timeout: .seconds(15)))
        #expect(p.easy.endpoint.spares.count == 1)
        let seenAt = try #require(p.hard.core.endpoint(of: p.easy.id))
        #expect(seenAt.port != p.easy.address.port, "the spare's own port: \(seenAt)")
        p.hard.core.sendIntroduce(.introduction(request: 0, peer: p.easy.id, relay: false, seen: true, addresses: [seenAt]), to: p.easy.id)
        p.net.run(for: .milliseconds(200))
        #expect(p.easy.core.addressWatch.observed[p.hard.id] == nil)
        #expect(p.easy.core.config.nat == .easy && p.easy.core.stats.addressChanges == 0)
    }

    @Test func twoHardNATsDeclineWithoutOpeningSpares() {
        let p = Self.pair(seed: 40, easyKind: .hard, easy: NATMix.symmetricRandom)
        #expect(p.net.run(until: { p.easy.established(with: p.hard) }, timeout: .seconds(5)))
        p.net.run(for: .seconds(4))
        // Both offered (each is hard), each declined the other's offer: no spares, no probes.
        #expect(p.easy.core.stats.birthdayOffers >= 1 && p.hard.core.stats.birthdayOffers >= 1)
        #expect(p.easy.core.stats.birthdayDeclined >= 1 && p.hard.core.stats.birthdayDeclined >= 1)
        #expect(p.easy.core.stats.birthdaySpares == 0 && p.hard.core.stats.birthdaySpares == 0)
        #expect(p.easy.core.stats.birthdayProbes == 0 && p.hard.core.stats.birthdayProbes == 0)
        #expect(p.easy.core.isRelayed(p.hard.id))
        // Backed off: not offered again within the retry gap.
        let offers = p.hard.core.stats.birthdayOffers
        p.net.run(for: .seconds(20))
        #expect(p.hard.core.stats.birthdayOffers == offers)
    }

    @Test func aBusyEasySideIsOfferedAgainSoon() {
        // An easy peer probing for `probingAtOnce` others says busy; the
        // hard side offers again 2 s later, and they meet.
        let p = Self.pair(seed: 41)
        let others = (0..<BirthdayConstants.probingAtOnce).map { i in try! Identity(seed: [UInt8](repeating: UInt8(i + 1), count: 32)).nodeID }
        // (Made-up probings, for peers unknown here: each tick drops them, so they are put back until the offer comes.)
        let busy = p.net.every(.milliseconds(10)) {
            guard p.easy.core.stats.birthdayDeclined == 0 else { return }
            for id in others { p.easy.core.birthday.probing[id] = BirthdayState.Probing(host: .v4(1), accepted: p.net.clock.now()) }
        }
        #expect(p.net.run(until: { p.easy.established(with: p.hard) }, timeout: .seconds(5)))
        #expect(p.net.run(until: { p.easy.core.stats.birthdayDeclined == 1 }, timeout: .seconds(5)))
        busy.cancel()
        #expect(p.hard.core.stats.birthdaySpares == 0)
        #expect(p.net.run(until: { p.hard.core.link(to: p.easy.id) == "birthday IPv4" }, timeout: .seconds(6)))
        #expect(p.hard.core.stats.birthdayOffers == 2)
    }

    @Test func anOfferOverADirectSessionIsDeclined() {
        // Two public nodes: no relay, no coordinator named an address; an
        // offer (a peer asking to be probed) gets no probes.
        let net = VirtualNetwork(seed: 9)
        let nodes = net.makeNodes(2, seed: 9)
        nodes[0].core.connect(to: nodes[1].address, expecting: nodes[1].id)
        #expect(net.run(until: { nodes[0].established(with: nodes[1]) }, timeout: .seconds(3)))
        nodes[0].core.sendIntroduce(.birthday(step: .offer, count: 256), to: nodes[1].id)
        net.run(for: .seconds(2))
        #expect(nodes[1].core.stats.birthdayDeclined == 1)
        #expect(nodes[1].core.stats.birthdayProbes == 0)
    }
}
