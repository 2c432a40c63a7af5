import LVBCore
import LVBCrypto
import LVBGossip
import LVBRoom
import LVBTestSupport
import LVBTransport
import Testing
@testable import LVBRendezvous

/// Which pairs of NATs a join by room id gets through, and how fast: a
/// public rendezvous, a host behind one NAT announcing to it, a joiner
/// behind another asking it for an introduction, both dialling at once —
/// the library's own roles on the virtual network with RFC 4787 NATs.
@Suite struct NATMatrixTests {
    static let kinds: [(name: String, behavior: NATBehavior?)] = [
        ("public", nil), ("full cone", .fullCone), ("restricted", .restrictedCone),
        ("port-restricted", .portRestrictedCone), ("address-dependent", .addressDependent), ("symmetric", .symmetric),
    ]

    /// How a join went: admitted after how long (nil: not within 10 s), and
    /// whether its session ran over the relay 3 s later.
    struct Outcome {
        var admitted: Duration?
        var relayed: Bool
        /// On the relay when admitted (before a direct path was proven).
        var startedOnRelay = false
    }

    static func join(host hostNAT: NATBehavior?, joiner joinerNAT: NATBehavior?, seed: UInt64, relayKbps: Int = 0) throws -> Outcome {
        let net = VirtualNetwork(seed: seed, defaultImpairment: Impairment(delay: .milliseconds(20)))
        let (server, service, ticker) = rendezvous(on: net, seed: seed ^ 1, relayKbps: relayKbps)
        defer { ticker.cancel() }

        let nats = [hostNAT.map { net.makeNAT(behavior: $0) }, joinerNAT.map { net.makeNAT(behavior: $0) }]
        let sims = net.makeNodes(behind: nats, seed: seed ^ 2)
        let random = SeededRandom(seed: seed)
        let policy = AdmissionPolicy(room: RoomID.random(random), host: sims[0].core.identity, mode: .open, clock: net.clock)
        let host = try SimLiveNode(sims[0], plan: NodePlan(part: .host(policy, info: RoomInfo(title: "matrix"))), network: net, random: random)
        let hostRelay = RelayClient(core: sims[0].core)
        host.node.register(hostRelay)
        host.node.register(RoomAnnouncer(room: host.room, clock: net.clock, rendezvous: [server.address], addresses: [sims[0].address],
                                       relay: hostRelay))
        guard net.run(until: { service.registry.listing(host.room.room) != nil }, timeout: .seconds(5)),
              let listing = service.registry.listing(host.room.room) else { return Outcome(admitted: nil, relayed: false) }
        net.run(for: .milliseconds(200))  // the announcement naming the reflexive address

        let started = net.clock.now()
        let plan = NodePlan(part: .join(room: listing.announcement.room, host: host.id, proof: .none,
                                        addresses: service.registry.listing(host.room.room)?.announcement.addresses ?? []))
        let joiner = try SimLiveNode(sims[1], plan: plan, network: net, random: SeededRandom(seed: seed ^ 3))
        let joinerRelay = RelayClient(core: sims[1].core)
        joiner.node.register(joinerRelay)
        joiner.node.register(RoomIntroducer(core: sims[1].core, clock: net.clock, random: SeededRandom(seed: seed ^ 4),
                                          rendezvous: [server.address], room: host.room.room, host: host.id, addresses: [sims[1].address],
                                          relay: joinerRelay))
        guard net.run(until: { joiner.room.isAdmitted }, timeout: .seconds(10)) else { return Outcome(admitted: nil, relayed: false) }
        let took = net.clock.now() - started
        let startedOnRelay = sims[1].core.isRelayed(host.id)
        net.run(for: .seconds(3))
        // Still in the room, and chat still flows both ways, on whichever path.
        try joiner.room.chat("still here")
        net.run(for: .seconds(1))
        guard host.room.state?.chatLog.contains(where: { $0.author == joiner.id }) == true else { return Outcome(admitted: nil, relayed: false) }
        return Outcome(admitted: took, relayed: sims[1].core.isRelayed(host.id) || sims[0].core.isRelayed(joiner.id),
                       startedOnRelay: startedOnRelay)
    }

    /// Every pair that has a way through gets through directly: where one
    /// side's NAT maps and filters independently of the endpoint enough for
    /// the other's first packets to arrive. The rest (a port-restricted or
    /// address-dependent side facing a NAT whose mapping depends on the
    /// destination) needs the relay.
    @Test func theMatrixOfDirectJoins() throws {
        var rows: [String] = []
        var failures: [String] = []
        for (hi, h) in Self.kinds.enumerated() {
            var cells: [String] = []
            for (ji, j) in Self.kinds.enumerated() {
                let took = try Self.join(host: h.behavior, joiner: j.behavior, seed: UInt64(100 + hi * 10 + ji)).admitted
                cells.append(took.map { "\(Int($0.milliseconds)) ms" } ?? "no")
                let expected = Self.expectDirect(h.behavior, j.behavior)
                if (took != nil) != expected { failures.append("host \(h.name), joiner \(j.name): \(took.map { "\($0)" } ?? "no join")") }
                if let took { #expect(took < .seconds(2), "host \(h.name), joiner \(j.name): \(took)") }
            }
            rows.append("\(h.name): " + cells.joined(separator: ", "))
        }
        print("NAT matrix (host rows, joiner columns \(Self.kinds.map(\.name))):\n" + rows.joined(separator: "\n"))
        #expect(failures.isEmpty, "\(failures)")
    }

    /// Direct is possible when each side's first packets can cross the other's
    /// NAT: the joiner's arrive from the port the host was told (the joiner's
    /// mapping is endpoint-independent) or the host's NAT does not filter by
    /// port (endpoint-independent or address-dependent filtering with an
    /// endpoint-independent mapping); and the same the other way round.
    static func expectDirect(_ a: NATBehavior?, _ b: NATBehavior?) -> Bool {
        reaches(from: b, to: a) || reaches(from: a, to: b)
    }

    /// Whether packets from a node behind `from` reach one behind `to` that has
    /// already sent towards `from`'s observed address (which opens `to`).
    private static func reaches(from: NATBehavior?, to: NATBehavior?) -> Bool {
        guard let to else { return true }  // a public receiver filters nothing
        let samePort = from.map { $0.mapping == .endpointIndependent } ?? true
        switch to.filtering {
        case .endpointIndependent: return to.mapping == .endpointIndependent
        case .addressDependent: return to.mapping == .endpointIndependent
        case .addressAndPortDependent: return to.mapping == .endpointIndependent && samePort
        }
    }

    /// With the rendezvous's relay, every pair gets in, within a second:
    /// the relay path races the direct ones from the first handshake, and a
    /// pair that can go direct ends up direct (a handshake on the direct path
    /// moves the session off the relay); the others stay on the relay.
    @Test func withTheRelayEveryPairGetsInAndDirectWhereverPossible() throws {
        var rows: [String] = []
        var failures: [String] = []
        var upgraded = 0
        for (hi, h) in Self.kinds.enumerated() {
            var cells: [String] = []
            for (ji, j) in Self.kinds.enumerated() {
                let o = try Self.join(host: h.behavior, joiner: j.behavior, seed: UInt64(500 + hi * 10 + ji), relayKbps: 5000)
                if o.startedOnRelay && !o.relayed { upgraded += 1 }
                cells.append(o.admitted.map { "\(o.relayed ? "relay" : o.startedOnRelay ? "relay→direct" : "direct") \(Int($0.milliseconds)) ms" } ?? "no")
                let direct = Self.expectDirect(h.behavior, j.behavior)
                if o.admitted == nil || o.relayed == direct {
                    failures.append("host \(h.name), joiner \(j.name): \(cells.last ?? "")")
                }
                if let t = o.admitted { #expect(t < .seconds(1), "host \(h.name), joiner \(j.name): \(t)") }
            }
            rows.append("\(h.name): " + cells.joined(separator: ", "))
        }
        print("NAT matrix with the relay (host rows, joiner columns \(Self.kinds.map(\.name))):\n" + rows.joined(separator: "\n"))
        #expect(failures.isEmpty, "\(failures)")
        // Pairs whose first answer came over the relay moved to the direct path.
        #expect(upgraded > 0, "no pair started on the relay and moved to the direct path")
    }

    /// A host behind a NAT asks a STUN server (here another rendezvous's
    /// port, as it would any public one) from its own socket: it learns the
    /// address its NAT gave it and announces that as well.
    @Test func aHostLearnsItsReflexiveAddressFromAnySTUNServerAndAnnouncesIt() throws {
        let net = VirtualNetwork(seed: 77, defaultImpairment: Impairment(delay: .milliseconds(20)))
        var config = TransportConfig()
        config.hello = Hello(agent: "test", role: .rendezvous)
        let servers = net.makeNodes(2, seed: 78, config: config)
        let services = servers.map { RendezvousService(core: $0.core, clock: net.clock) }
        for (server, service) in zip(servers, services) {
            server.recordsEvents = false
            server.onTransportEvent = { service.handle($0) }
        }
        let nat = net.makeNAT(behavior: .portRestrictedCone)
        let sim = net.makeNodes(behind: [nat], seed: 79)[0]
        let random = SeededRandom(seed: 80)
        let policy = AdmissionPolicy(room: RoomID.random(random), host: sim.core.identity, mode: .open, clock: net.clock)
        let host = try SimLiveNode(sim, plan: NodePlan(part: .host(policy, info: RoomInfo(title: "stun"))), network: net, random: random)
        let announcer = RoomAnnouncer(room: host.room, clock: net.clock, rendezvous: [servers[0].address], addresses: [sim.address])
        host.node.register(announcer)
        let stun = STUNClient(core: sim.core, clock: net.clock, random: SeededRandom(seed: 81), servers: [servers[1].address])
        var heard: [(PeerAddress, PeerAddress)] = []
        stun.onReflexive = { address, server in
            heard.append((address, server))
            announcer.noteReflexive(address, from: server)
        }
        host.node.register(stun)
        #expect(net.run(until: { !heard.isEmpty }, timeout: .seconds(3)))
        let external = try #require(nat.externalAddress(of: sim.address, to: servers[1].address))
        #expect(heard.first?.0 == external && heard.first?.1 == servers[1].address)
        #expect(services[1].stats.stunAnswered >= 1)
        net.run(for: .seconds(1))
        #expect(services[0].registry.listing(host.room.room)?.announcement.addresses.contains(external) == true)
        // Asked again every stunRefresh, which also keeps the mapping up; no change, no new announcement.
        let answered = services[1].stats.stunAnswered
        net.run(for: RendezvousConstants.stunRefresh + .seconds(1))
        #expect(services[1].stats.stunAnswered == answered + 1 && heard.count == 1)
    }
}

/// A public rendezvous on `net` that introduces, and relays up to
/// `relayKbps` (its members' pairs too), ticked every second.
func rendezvous(on net: VirtualNetwork, seed: UInt64, relayKbps: Int) -> (SimulatedNode, RendezvousService, TimerHandle) {
    var config = TransportConfig()
    config.hello = Hello(agent: "test", role: .rendezvous)
    config.relayKbps = relayKbps
    let server = net.makeNodes(1, seed: seed, config: config)[0]
    let service = RendezvousService(core: server.core, clock: net.clock, relayKbps: relayKbps)
    server.recordsEvents = false
    server.onTransportEvent = { service.handle($0) }
    return (server, service, net.every(.seconds(1)) { service.tick() })
}
