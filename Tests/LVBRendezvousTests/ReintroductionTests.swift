import LVBCore
import LVBCrypto
import LVBGossip
import LVBRoom
import LVBTestSupport
import LVBTransport
import Testing
@testable import LVBRendezvous

/// A joiner whose NAT rebinds after the introduction, before its session with
/// the host is up: both NATs filter by address and port, so the host's dials
/// to the old port die at the joiner's NAT and the joiner's from its new port
/// die at the host's. Only a fresh introduction (the joiner asks again while
/// it has no session; the rendezvous sees it at its new port and tells the
/// host) gets them together.
@Suite struct ReintroductionTests {
    struct Run {
        var admitted: Bool
        var reintroductions: Int
        var hostDialled: Int
    }

    static func join(rebind: Bool, seed: UInt64) throws -> Run {
        let net = VirtualNetwork(seed: seed, defaultImpairment: Impairment(delay: .milliseconds(20)))
        var config = TransportConfig()
        config.hello = Hello(agent: "test", role: .rendezvous)
        let server = net.makeNodes(1, seed: seed ^ 1, config: config)[0]
        let service = RendezvousService(core: server.core, clock: net.clock)
        server.recordsEvents = false
        server.onTransportEvent = { service.handle($0) }
        let ticker = net.every(.seconds(1)) { service.tick() }
        defer { ticker.cancel() }

        let hostNAT = net.makeNAT(behavior: .portRestrictedCone)
        let joinerNAT = net.makeNAT(behavior: .portRestrictedCone)
        let sims = net.makeNodes(behind: [hostNAT, joinerNAT], seed: seed ^ 2)
        let random = SeededRandom(seed: seed)
        let policy = AdmissionPolicy(room: RoomID.random(random), host: sims[0].core.identity, mode: .open, clock: net.clock)
        let host = try SimLiveNode(sims[0], plan: NodePlan(part: .host(policy, info: RoomInfo(title: "rebind"))), network: net, random: random)
        let announcer = RoomAnnouncer(room: host.room, clock: net.clock, rendezvous: [server.address], addresses: [sims[0].address])
        host.node.register(announcer)
        #expect(net.run(until: { service.registry.listing(host.room.room) != nil }, timeout: .seconds(5)))
        net.run(for: .milliseconds(200))

        // Host and joiner cannot reach each other until the joiner's NAT has rebound.
        net.cut(sims[0].address, sims[1].address)
        let plan = NodePlan(part: .join(room: host.room.room, host: host.id, proof: .none, addresses: []))
        let joiner = try SimLiveNode(sims[1], plan: plan, network: net, random: SeededRandom(seed: seed ^ 3))
        let introducer = RoomIntroducer(core: sims[1].core, clock: net.clock, random: SeededRandom(seed: seed ^ 4),
                                        rendezvous: [server.address], room: host.room.room, host: host.id, addresses: [sims[1].address])
        joiner.node.register(introducer)
        #expect(net.run(until: { introducer.introduced && announcer.introductionsDialled == 1 }, timeout: .seconds(5)))
        net.run(for: .milliseconds(300))
        if rebind { joinerNAT.forgetMappings() }
        net.heal(sims[0].address, sims[1].address)
        let admitted = net.run(until: { joiner.room.isAdmitted }, timeout: .seconds(5))
        // Once the session is up, nobody asks again.
        let asked = service.stats.introduceRequests
        net.run(for: .seconds(3))
        if admitted { #expect(service.stats.introduceRequests == asked, "asked again after the session came up") }
        return Run(admitted: admitted, reintroductions: service.stats.reintroductions, hostDialled: announcer.introductionsDialled)
    }

    @Test func aJoinerWhoseNATRebindsBeforeItsSessionIsIntroducedAgain() throws {
        let moved = try Self.join(rebind: true, seed: 71)
        #expect(moved.admitted, "not admitted after the joiner's NAT rebound")
        #expect(moved.reintroductions >= 1)
        #expect(moved.hostDialled >= 2)
    }

    /// Without a move, asking again costs the host nothing more than an
    /// occasional repeat (the first introduction may have been lost).
    @Test func aJoinerThatDidNotMoveIsNotReintroduced() throws {
        let still = try Self.join(rebind: false, seed: 72)
        #expect(still.admitted)
        #expect(still.reintroductions == 0)
    }
}
