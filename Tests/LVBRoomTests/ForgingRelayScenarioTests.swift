import LVBCore
import LVBCrypto
import LVBGossip
import LVBMedia
import LVBTestSupport
import LVBTransport
import Testing
@testable import LVBRoom

/// A relay that lies, on the virtual network and clock with the library's
/// own driver, real encoders and decoders: its children refuse every
/// picture the host did not sign, leave it within a second for good, and
/// play on; an honest relay below it, which passes the lie on before it
/// can know, says so and is not blamed, nor is the host.
final class LyingRoom {
    let net: VirtualNetwork
    let host: SimLiveNode
    var viewers: [SimLiveNode] = []
    /// Per viewer: each decoded picture's time, frame number (nil: unreadable) and whether it is magenta.
    var pictures: [[(at: Instant, number: Int?, magenta: Bool)]] = []
    /// Per viewer: when its parent last changed.
    var moved: [Instant?] = []

    init(viewers count: Int, seed: UInt64) throws {
        net = VirtualNetwork(seed: seed, defaultImpairment: Impairment(delay: .milliseconds(5)))
        let sims = net.makeNodes(count + 1, seed: seed)
        let random = SeededRandom(seed: seed ^ 0x11E)
        let room = RoomID.random(random)
        let policy = AdmissionPolicy(room: room, host: sims[0].core.identity, mode: .open, clock: net.clock)
        var plan = NodePlan(part: .host(policy, info: RoomInfo(title: "lies")))
        var setup = try PublisherSetup.open(video: .synthetic, audio: .synthetic, size: (160, 96), fps: 30, clock: net.clock)
        setup.gopSeconds = 2
        setup.bitrateKbps = 400
        plan.publish = setup
        plan.relaySlots = 2
        plan.addresses = [sims[0].address]
        host = try SimLiveNode(sims[0], plan: plan, network: net, random: random)
        for (i, sim) in sims.dropFirst().enumerated() {
            var plan = NodePlan(part: .join(room: room, host: host.id, proof: .none, addresses: [host.sim.address]))
            plan.receive = SinkOptions()
            plan.relaySlots = 2
            plan.addresses = [sim.address]
            let viewer = try SimLiveNode(sim, plan: plan, network: net, random: random)
            pictures.append([])
            moved.append(nil)
            viewer.node.viewing.onHostVideo = { [unowned self] f in
                let u = f.image.u[f.image.u.count / 2], v = f.image.v[f.image.v.count / 2]
                pictures[i].append((net.clock.now(), SyntheticVideo.readFrameNumber(f.image), u > 190 && v > 190))
            }
            viewers.append(viewer)
        }
    }

    func parent(_ i: Int) -> NodeID? { viewers[i].node.tree?.parent }
    func children(of id: NodeID) -> [Int] { viewers.indices.filter { parent($0) == id } }
    func descendants(of id: NodeID) -> [Int] { children(of: id).flatMap { [$0] + descendants(of: viewers[$0].id) } }
    func name(_ id: NodeID?) -> String {
        guard let id else { return "none" }
        return id == host.id ? "host" : viewers.firstIndex { $0.id == id }.map(String.init) ?? id.short
    }
}

@Suite struct ForgingRelayScenarioTests {
    @Test(arguments: RelayLieMode.allCases, [601, 602, 603] as [UInt64])
    func childrenOfALyingRelayShowNoneOfItLeaveItWithinASecondAndPlayOn(mode: RelayLieMode, seed: UInt64) throws {
        let r = try LyingRoom(viewers: 9, seed: seed)
        #expect(r.net.run(until: { r.viewers.indices.allSatisfy { r.parent($0) != nil && !r.pictures[$0].isEmpty } }, timeout: .seconds(15)))
        r.net.run(for: .seconds(3))
        // The liar: a relay below the host with the most below it (with
        // luck a chain, so an honest relay sits between it and a leaf).
        let tops = r.children(of: r.host.id)
        let liar = try #require(tops.max { r.descendants(of: r.viewers[$0].id).count < r.descendants(of: r.viewers[$1].id).count })
        let liarID = r.viewers[liar].id
        let direct = r.children(of: liarID), below = r.descendants(of: liarID)
        try #require(!direct.isEmpty)
        let parentsBefore = r.viewers.indices.map(r.parent)
        let enabled = r.net.clock.now()
        let lie = RelayLie(mode: mode, identity: r.viewers[liar].sim.core.identity)
        r.viewers[liar].node.media.lie = lie
        // (A replay needs two seconds of the past to send.)
        try #require(r.net.run(until: { lie.firstLie != nil }, timeout: .seconds(3)))
        let start = try #require(lie.firstLie)
        var left: [Int: Instant] = [:]
        r.net.run(until: {
            for i in direct where left[i] == nil && r.parent(i) != liarID { left[i] = r.net.clock.now() }
            return left.count == direct.count
        }, timeout: .seconds(3))
        r.net.run(for: .seconds(3))
        let since = r.net.clock.now()
        r.net.run(for: .seconds(2))
        let report = "liar \(liar) (\(mode)), its children \(direct), below it \(below); parents now \(r.viewers.indices.map { r.name(r.parent($0)) })"

        // Every child of the liar left it within a second, blaming it alone, and for good.
        for i in direct {
            let took = left[i].map { $0 - start }
            #expect(took.map { $0 <= .seconds(1) } ?? false, "viewer \(i) left the liar after \(took.map { "\($0.milliseconds) ms" } ?? "never"); \(report)")
            #expect(r.viewers[i].node.tree?.liars == [liarID], "viewer \(i) blamed \(r.viewers[i].node.tree?.liars.map(r.name) ?? []); \(report)")
        }
        // Nobody blamed the host or an honest relay; honest relays below the liar were excused.
        for i in r.viewers.indices where !direct.contains(i) {
            #expect(r.viewers[i].node.tree?.liars.isEmpty ?? true, "viewer \(i) blamed \(r.viewers[i].node.tree?.liars.map(r.name) ?? []); \(report)")
        }
        for i in below where !direct.contains(i) {
            #expect(r.parent(i) == parentsBefore[i] || r.parent(i) != liarID, "\(report)")
        }
        // Not one forged picture anywhere: every picture readable, none
        // magenta, frame numbers only rising; and everyone plays on.
        for i in r.viewers.indices {
            let shown = r.pictures[i].filter { $0.at >= enabled }
            #expect(shown.allSatisfy { $0.number != nil && !$0.magenta }, "viewer \(i) showed \(shown.filter { $0.number == nil || $0.magenta }.count) forged pictures; \(report)")
            let numbers = shown.compactMap(\.number)
            #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 }, "viewer \(i) showed frame numbers out of order; \(report)")
            let recent = r.pictures[i].filter { $0.at >= since }.count
            #expect(recent >= 50, "viewer \(i): \(recent) pictures in 2 s after the liar was left; \(report)")
            #expect(r.parent(i) != liarID, "viewer \(i) is still below the liar; \(report)")
        }
        // The liar's children refused what it sent, and it says so in their counters.
        let refused = direct.map { r.viewers[$0].node.media.receivers[r.host.id]?.checker.stats.refusedTotal ?? 0 }
        #expect(refused.allSatisfy { $0 > 0 }, "\(refused)")
    }
}
