#if canImport(Glibc)
import Glibc
#endif
import LVBCore
import LVBCrypto
import LVBGossip
import LVBMedia
import LVBRendezvous
import LVBRoom
import LVBTestSupport
import LVBTransport
import Testing

/// Where the crowd's nodes live.
enum CrowdNetwork: String, CustomTestStringConvertible {
    case open, nats, dualStack
    var behindNATs: Bool { self != .open }
    var name: String {
        switch self {
        case .open: "200 viewers"
        case .nats: "200 viewers behind NATs"
        case .dualStack: "200 viewers behind NATs, half dual-stack"
        }
    }
    var testDescription: String { rawValue }
}

/// A large room on the virtual network and clock: a host with 4 relay slots
/// and up to 200 viewers with 4 each, none decoding (every viewer relays;
/// what matters is which pictures reach it: `PictureLedger`). Either every
/// node reachable from every other, joining by the host's address, or
/// (`behindNATs`) every node behind a NAT of its own in a realistic mix,
/// the host too, joining by room id through a public rendezvous that
/// introduces and relays (`NATMix`); and (`Network.dualStack`) the same
/// with every other node, the host first, also holding a global IPv6
/// address behind its home router's stateful firewall.
private final class Crowd {

    let net: VirtualNetwork
    let ledger: PictureLedger
    let host: SimLiveNode
    /// Viewers in the room now, by id.
    private(set) var viewers: [NodeID: SimLiveNode] = [:]
    /// When each viewer (ever) came, and went.
    private(set) var joined: [NodeID: Instant] = [:]
    private(set) var gone: [NodeID: Instant] = [:]
    /// The most full subscribers the host had at once.
    private(set) var hostCopiesMax = 0
    /// Behind NATs: the rendezvous, and the kind of NAT in front of each viewer.
    let rendezvous: (sim: SimulatedNode, service: RendezvousService)?
    private(set) var natKind: [NodeID: String] = [:]
    private var mix: NATMix?
    private let dualStack: Bool
    private var placedNodes = 0
    private let room: RoomID
    private let random: SeededRandom
    private var seed: UInt64

    init(viewers count: Int, seed: UInt64, network setting: CrowdNetwork = .open) throws {
        let behindNATs = setting.behindNATs
        dualStack = setting == .dualStack
        self.seed = seed
        net = VirtualNetwork(seed: seed, defaultImpairment: Impairment(delay: .milliseconds(5)))
        ledger = PictureLedger(clock: net.clock)
        random = SeededRandom(seed: seed ^ 0x5CA1E)
        room = RoomID.random(random)
        let network = net
        let mix = behindNATs ? NATMix(network: network) : nil
        self.mix = mix
        rendezvous = behindNATs ? Self.rendezvous(on: network, seed: seed ^ 0xAD, relayKbps: 50_000) : nil
        // (Behind NATs the host relays as the binary's does: `--relay-kbps`'s default for a host.)
        var hostConfig = TransportConfig()
        if mix != nil { hostConfig.relayKbps = RoomConstants.defaultHostRelayKbps }
        let sim = network.makeNodes(behind: [mix?.hostNAT], seed: seed, config: hostConfig)[0]
        if mix != nil {
            sim.core.config.nat = .easy
            sim.core.config.natKeepsPort = true
        }
        let hostAddresses = Self.own(sim, on: network, ipv6: setting == .dualStack)
        let policy = AdmissionPolicy(room: room, host: sim.core.identity, mode: .open, clock: net.clock)
        var plan = NodePlan(part: .host(policy, info: RoomInfo(title: "crowd")))
        // A small picture, no sound: the load of 200 nodes stays in the tests' budget.
        var setup = try PublisherSetup.open(video: .synthetic, audio: .none, size: (96, 64), fps: 15, clock: net.clock)
        setup.gopSeconds = 2
        setup.bitrateKbps = 120
        plan.publish = setup
        plan.relaySlots = 4
        plan.addresses = hostAddresses
        host = try SimLiveNode(sim, plan: plan, network: net, random: random)
        host.recordsOutputs = false
        host.node.publishing.tap(video: { [unowned self] in ledger.sent($0) })
        if let rendezvous {
            let relay = RelayClient(core: sim.core)
            host.node.register(relay)
            host.node.register(RoomAnnouncer(room: host.room, clock: net.clock, rendezvous: [rendezvous.sim.address], addresses: hostAddresses,
                                           relay: relay))
            guard net.run(until: { rendezvous.service.registry.listing(self.room) != nil }, timeout: .seconds(5)) else {
                throw CrowdError.notListed
            }
        }
        _ = net.every(.milliseconds(100)) { [unowned self] in
            hostCopiesMax = max(hostCopiesMax, host.node.media.publisher?.fullSubscriberCount ?? 0)
        }
        // A flash crowd: 20 joins a second (the host dials at most 20
        // introductions a second).
        for _ in 0..<count {
            try add()
            net.run(for: .milliseconds(50))
        }
    }

    enum CrowdError: Error { case notListed }

    /// A public rendezvous that introduces and relays, up to `relayKbps`.
    private static func rendezvous(on net: VirtualNetwork, seed: UInt64, relayKbps: Int) -> (sim: SimulatedNode, service: RendezvousService) {
        var config = TransportConfig()
        config.hello = Hello(agent: "test", role: .rendezvous)
        config.relayKbps = relayKbps
        let server = net.makeNodes(1, seed: seed, config: config)[0]
        let service = RendezvousService(core: server.core, clock: net.clock, relayKbps: relayKbps)
        server.recordsEvents = false
        server.onTransportEvent = { service.handle($0) }
        _ = net.every(.seconds(1)) { service.tick() }
        return (server, service)
    }

    /// A node's own addresses: its IPv4 one and, dual-stack (`ipv6`), a
    /// global IPv6 one behind its home's firewall.
    private static func own(_ sim: SimulatedNode, on net: VirtualNetwork, ipv6: Bool) -> [PeerAddress] {
        var own = [sim.address]
        if ipv6 { own.append(net.addIPv6(to: sim.endpoint)) }
        sim.core.config.ownAddresses = own
        return own
    }

    /// Bytes the rendezvous relayed, and bytes the room's members sent
    /// (media, gossip, sessions), so far.
    func byteCounts(_ rv: (sim: SimulatedNode, service: RendezvousService)) -> (relayed: Int, sent: Int) {
        (rv.sim.core.stats.relayedBytes + rv.service.stats.relayedBytes,
         viewers.values.reduce(host.sim.core.stats.bytesOut) { $0 + $1.sim.core.stats.bytesOut })
    }

    /// How each viewer's tree link (to its parent) and gossip links (to its
    /// active neighbours) run: direct, through a relay, or missing (no
    /// parent, or no session with it).
    func linkShares() -> (tree: [String: Int], gossip: [String: Int]) {
        func kind(_ core: TransportCore, _ peer: NodeID?) -> String {
            guard let peer, core.isEstablished(with: peer) else { return "missing" }
            let link = core.link(to: peer)
            return link.hasPrefix("direct") ? link : link.hasPrefix("birthday") ? "birthday"
                : link.hasPrefix("member") ? "member relay" : "rendezvous relay"
        }
        var tree: [String: Int] = [:], gossip: [String: Int] = [:]
        for v in viewers.values {
            tree[kind(v.sim.core, v.node.tree?.parent), default: 0] += 1
            for n in v.room.gossip.active { gossip[kind(v.sim.core, n), default: 0] += 1 }
        }
        return (tree, gossip)
    }

    /// The NAT kind a node behind `kind` measures: a new port per
    /// destination only behind the symmetric ones.
    static func measured(_ kind: String) -> NATKind {
        switch kind {
        case "public": .open
        case "symmetric": .hard
        default: .easy
        }
    }

    /// A new viewer dials the host, or behind its NAT asks the rendezvous to introduce it.
    func add() throws {
        seed &+= 1
        let nat = mix?.next()
        let sim = net.makeNodes(behind: [nat?.nat], seed: seed)[0]
        // What `NATWatch` measures from a rendezvous's two ports on a real
        // network (the NAT lab tests it), known here from the mix.
        if let nat {
            sim.core.config.nat = Self.measured(nat.kind)
            // A masquerade keeps the socket's port where it can (`NATMix.linuxMasquerade`).
            sim.core.config.natKeepsPort = nat.kind == "port-restricted"
        }
        var plan = NodePlan(part: .join(room: room, host: host.id, proof: .none, addresses: mix == nil ? [host.sim.address] : []))
        plan.relaySlots = 4
        // Dual-stack: the host and every other viewer (the second, fourth, …).
        placedNodes += 1
        let own = Self.own(sim, on: net, ipv6: dualStack && placedNodes % 2 == 0)
        plan.addresses = own
        let viewer = try SimLiveNode(sim, plan: plan, network: net, random: SeededRandom(seed: seed))
        viewer.recordsOutputs = false
        let id = viewer.id
        if let rendezvous, let nat {
            natKind[id] = nat.kind + (own.count > 1 ? "+IPv6" : "")
            let relay = RelayClient(core: sim.core)
            viewer.node.register(relay)
            viewer.node.register(RoomIntroducer(core: sim.core, clock: net.clock, random: SeededRandom(seed: seed ^ 7),
                                              rendezvous: [rendezvous.sim.address], room: room, host: host.id, addresses: own,
                                              relay: relay))
        }
        viewer.node.media.tapArrivals { [unowned self] _, packet in ledger.arrived(packet, at: id) }
        viewers[id] = viewer
        joined[id] = net.clock.now()
    }

    /// Takes a viewer out: its process dies, or it leaves as a user would.
    func remove(_ id: NodeID, crash: Bool) {
        guard let viewer = viewers.removeValue(forKey: id) else { return }
        gone[id] = net.clock.now()
        if crash {
            viewer.crash()
        } else {
            viewer.node.leave()
            // The process exits once the leave is out.
            net.schedule(after: RoomConstants.leaveWait) { viewer.crash() }
        }
    }

    func parent(_ id: NodeID) -> NodeID? { viewers[id]?.node.tree?.parent }
    func children(of id: NodeID) -> [NodeID] { viewers.keys.filter { parent($0) == id } }
    var allAttached: Bool { viewers.values.allSatisfy { $0.node.tree?.parent != nil } }

    func delivered(_ id: NodeID, from start: Instant, to end: Instant) -> (got: Int, of: Int) { ledger.delivered(id, from: start, to: end) }
    func lastPicture(_ id: NodeID) -> Instant? { ledger.lastPicture(id) }
}

/// The long forms (200 viewers churning for 5 minutes) take tens of minutes
/// in a debug build: `LVBNODE_LONG_TESTS=1 swift test --filter RelayTreeScale`.
private let long = getenv("LVBNODE_LONG_TESTS").map { String(cString: $0) } == "1"

/// The cases run side by side: each is one thread of virtual time.
@Suite struct RelayTreeScaleTests {
    /// Reachable from everywhere, and behind NATs (issue 26): every node,
    /// the host too, behind its own NAT in `NATMix`'s mix, joining by room
    /// id through a rendezvous that introduces and relays; parents and
    /// neighbours are reached through the host's and the rendezvous's
    /// introductions. Every chat line reaches every member either way.
    @Test(arguments: [CrowdNetwork.open, .nats, .dualStack])
    func twoHundredViewersGetThePictureTheHostSendsFourCopiesAndKilledRelaysHeal(network: CrowdNetwork) throws {
        let c = try Crowd(viewers: 200, seed: 401, network: network)
        let name = network.name, behindNATs = network.behindNATs
        #expect(c.net.run(until: { c.allAttached }, timeout: .seconds(30)),
                "\(name): \(c.viewers.values.filter { $0.node.tree?.parent == nil }.count) viewers unattached")
        c.net.run(for: .seconds(3))
        // Join to first picture (the joins all start at once).
        let firsts = c.viewers.keys.compactMap { id in c.ledger.firstPicture(id).map { ($0 - c.joined[id]!).milliseconds } }.sorted()
        let p50 = firsts.isEmpty ? 0 : firsts[firsts.count / 2], p95 = firsts.isEmpty ? 0 : firsts[firsts.count * 95 / 100]
        print("\(name): join to first picture p50 \(Int(p50)) ms, p95 \(Int(p95)) ms (\(firsts.count) of \(c.viewers.count))")
        let links = c.linkShares()
        print("\(name): tree links \(links.tree), gossip links \(links.gossip)")
        #expect(links.tree["missing", default: 0] == 0 && links.gossip["missing", default: 0] == 0, "\(name): \(links)")
        if behindNATs, let rv = c.rendezvous {
            // The relay's share of every byte the room's members sent (media, gossip, sessions).
            let (relayed, sent) = c.byteCounts(rv)
            print("\(name): the rendezvous relayed \(relayed) bytes, \(Int(100 * Double(relayed) / Double(max(1, sent)))) % of the \(sent) bytes the members sent")
            let cores = [c.host.sim.core] + c.viewers.values.map(\.sim.core)
            let b = cores.reduce(into: [0, 0, 0, 0, 0]) { t, core in
                for (i, n) in [core.stats.birthdayOffers, core.stats.birthdayRuns, core.stats.birthdayMet, core.stats.birthdayFailed,
                               core.stats.birthdayDeclined].enumerated() { t[i] += n }
            }
            var pairs: [String: Int] = [:]
            for v in c.viewers.values {
                guard let parent = v.node.tree?.parent, v.sim.core.link(to: parent).contains("relay") else { continue }
                pairs["\(c.natKind[v.id] ?? "?") under \(parent == c.host.id ? "host" : c.natKind[parent] ?? "?")", default: 0] += 1
            }
            print("\(name): relayed tree links by NATs (child under parent): \(pairs)")
            print("\(name): birthday offers \(b[0]), accepted \(b[1]), met \(b[2]) (counted by both sides), failed \(b[3]), declined \(b[4])")
        }
        // Ten viewers chat: every member gets every line.
        let speakers = Array(c.viewers.values.sorted { $0.id.text < $1.id.text }.prefix(10))
        for (i, v) in speakers.enumerated() { try v.room.chat("line \(i)") }
        func lines(_ member: SimLiveNode) -> Int {
            Set((member.room.state?.chatLog ?? []).compactMap { event -> String? in
                if let text = event.body.as(ChatLine.self)?.text { return text }
                return nil
            }).count
        }
        // Most arrive by eager push within a second; a line whose push was
        // lost comes with the next digest or graft.
        let members = [c.host] + Array(c.viewers.values)
        c.net.run(until: { members.allSatisfy { lines($0) == 10 } }, timeout: .seconds(10))
        for member in members {
            #expect(lines(member) == 10, "\(name): \(member.id.short) has \(lines(member)) of 10 chat lines")
        }
        let start = c.net.clock.now()
        let audience = Array(c.viewers.values), everyone = [c.host] + audience
        let positionBytes = audience.map(\.room.positionBytesIn), published = everyone.reduce(0) { $0 + ($1.node.tree?.positionBytesPublished ?? 0) }
        let before = c.rendezvous.map(c.byteCounts)
        c.net.run(for: .seconds(6))
        if let rv = c.rendezvous, let before {
            // Once the room has settled (every viewer attached, 3 s since, chat under way): the relay's share over 6 s.
            let after = c.byteCounts(rv)
            let share = Double(after.relayed - before.relayed) / Double(max(1, after.sent - before.sent))
            let links = c.linkShares()
            let direct: Int = links.tree.filter { $0.key.hasPrefix("direct") || $0.key == "birthday" }.values.reduce(0, +)
            let hundredths = Int((10_000 * share).rounded())
            let percent = "\(hundredths / 100).\(hundredths % 100 < 10 ? "0" : "")\(hundredths % 100)"
            let relayedBytes = after.relayed - before.relayed, sentBytes = after.sent - before.sent
            print("\(name), settled: the rendezvous relayed \(relayedBytes) bytes in 6 s, \(percent) % of the \(sentBytes) the members sent; "
                  + "tree links \(direct) of \(c.viewers.count) direct; \(links)")
            // Issue 48's goal: at least 95 % of the tree links direct (over
            // IPv4, IPv6 or by birthday punching) once the room has settled;
            // measured 190-199 of 200, held to 90 % here (the runs differ:
            // dictionaries iterate in another order in each process).
            #expect(direct * 100 >= 90 * c.viewers.count, "\(name): \(direct) of \(c.viewers.count) tree links direct: \(links.tree)")
            // Sessions a member holds: those it or its peers need (about 45
            // before sessions nobody needed ended; measured 15-17 now, the
            // room's youngest ones not yet idle for `sessionIdleAfter`).
            let sessions = c.viewers.values.map { $0.sim.core.peers.filter(\.established).count }
            let relayedSessions = c.viewers.values.reduce(0) { $0 + $1.sim.core.peers.filter { $0.established && $0.relayed }.count }
            let closed = c.viewers.values.reduce(0) { $0 + $1.sim.core.stats.sessionsClosedIdle }
            print("\(name), settled: sessions per viewer \(sessions.reduce(0, +) / sessions.count) (mean), \(sessions.max() ?? 0) (most), "
                  + "\(relayedSessions) relayed in all; \(closed) ended as idle so far")
            #expect(sessions.reduce(0, +) <= 30 * sessions.count, "\(name): \(sessions.reduce(0, +) / sessions.count) sessions per viewer")
        }
        // What placement costs a member now that positions travel along the
        // tree, against what the room signs (each member's cost when they were gossiped).
        let perSecond = zip(positionBytes, audience).map { Double($1.room.positionBytesIn - $0) / 6 }
        let signed = Double(everyone.reduce(0) { $0 + ($1.node.tree?.positionBytesPublished ?? 0) } - published) / 6
        print("\(name): relay positions in per viewer \(Int(perSecond.reduce(0, +) / Double(perSecond.count))) B/s (mean), "
              + "\(Int(perSecond.max() ?? 0)) B/s (most); the room signed \(Int(signed)) B/s of them")
        // A member holds the directory, its own chain and its children, not the room's tree.
        let views = audience.map { $0.room.state?.tree.count ?? 0 }
        print("\(name): positions a viewer holds \(views.min() ?? 0)...\(views.max() ?? 0), the host \(c.host.room.state?.tree.count ?? 0)")
        #expect(views.allSatisfy { $0 <= 120 }, "\(name): a viewer holds \(views.max() ?? 0) positions of 201")
        var worst = 1.0
        for id in c.viewers.keys {
            let d = c.delivered(id, from: start, to: c.net.clock.now())
            worst = min(worst, Double(d.got) / Double(max(1, d.of)))
            // Behind NATs a few viewers still lose a picture now and then
            // (issue 26 stays open for it): a known issue there, a hard check here.
            withKnownIssue("behind NATs a picture is lost now and then below a relayed link", isIntermittent: true) {
                #expect(Double(d.got) >= 0.995 * Double(d.of),
                        "\(name): viewer \(id.short): \(d.got) of \(d.of) pictures \(c.ledger.misses(id, from: start, to: c.net.clock.now()))")
            } when: { behindNATs }
        }
        #expect(c.hostCopiesMax <= 4, "the host served \(c.hostCopiesMax) at once")
        #expect(c.children(of: c.host.id).count <= 4)
        // The host's view of the tree places every viewer (a move just made,
        // or one under way, reaches it within a few publish intervals).
        var depths: [Int] = []
        let placed = c.net.run(until: {
            let placement = TreePlacement(host: c.host.id, tree: c.host.room.state?.tree ?? [:])
            depths = c.viewers.keys.compactMap { placement.depth(of: $0) }
            return depths.count == 200
        }, timeout: .seconds(5))
        // Now and then one viewer's position stays missing from the host's
        // view (since joins come at 20 a second; its picture is not affected).
        withKnownIssue("a viewer's relay position is missing from the host's view now and then", isIntermittent: true) {
            #expect(placed, "\(name): the host places \(depths.count) of 200 viewers")
        }

        // A tenth of the relays die at once, each with children.
        let relays = c.viewers.keys.filter { !c.children(of: $0).isEmpty }.sorted { $0.text < $1.text }
        let victims = Array(relays.prefix(20))
        let orphans = Set(victims.flatMap { c.children(of: $0) }).subtracting(victims)
        #expect(victims.count == 20 && orphans.count >= 20)
        let killedAt = c.net.clock.now()
        for v in victims { c.remove(v, crash: true) }
        var healedAt: [NodeID: Instant] = [:]
        let healed = c.net.run(until: {
            for o in orphans where healedAt[o] == nil
                && c.parent(o).map({ !victims.contains($0) }) == true && (c.lastPicture(o) ?? killedAt) > killedAt {
                healedAt[o] = c.net.clock.now()
            }
            return healedAt.count == orphans.count
        }, timeout: .seconds(2))
        func steps(_ o: NodeID) -> String {
            let log = (c.viewers[o]?.node.tree?.attachmentLog ?? []).filter { $0.at >= killedAt }
            return log.map { entry -> String in
                var line = "\(Int((entry.at - killedAt).milliseconds)) ms \(entry.step)"
                for v in victims { line = line.replacing(v.short, with: "\(v.short) (dead)") }
                return line
            }.joined(separator: ", ")
        }
        let unhealed = orphans.filter { healedAt[$0] == nil }.map { o -> String in
            let p = c.parent(o)
            let parentText = p.map { victims.contains($0) ? " (dead)" : orphans.contains($0) ? " (an orphan)" : "" } ?? ""
            let last = c.lastPicture(o).map { "\(($0 - killedAt).milliseconds) ms after the kill" } ?? "none"
            return "\(o.short): parent \(p?.short ?? "none")\(parentText), failovers \(c.viewers[o]?.node.tree?.failovers ?? -1), last picture \(last); \(steps(o))"
        }
        // Behind NATs, once in about eight runs (issue 48's note), one orphan
        // still names its dead parent 2 s after the kill, 0 failovers,
        // although pictures reach it: parent silence is judged by the
        // host's stream heard from anyone, and a node still feeding it (a
        // stale subscription) hides the death. A known issue there.
        withKnownIssue("behind NATs an orphan that a stale subscription still feeds keeps its dead parent now and then", isIntermittent: true) {
            #expect(healed, "\(orphans.count - healedAt.count) of \(orphans.count) orphans without a live parent or a new picture 2 s after the kill: \(unhealed)")
        } when: {
            behindNATs && orphans.filter { healedAt[$0] == nil }.allSatisfy { (c.lastPicture($0) ?? killedAt) > killedAt }
        }
        let repairs = healedAt.values.map { ($0 - killedAt).milliseconds }.sorted()
        print("\(name): worst delivery \(worst), depth max \(depths.max() ?? 0), host copies at most \(c.hostCopiesMax);"
              + " \(orphans.count) orphans of 20 killed relays re-attached in \(repairs.first ?? 0)...\(repairs.last ?? 0) ms")
        // Nobody stays without media.
        c.net.run(for: .seconds(2))
        let after = c.net.clock.now()
        c.net.run(for: .seconds(3))
        for id in c.viewers.keys {
            let d = c.delivered(id, from: after, to: c.net.clock.now())
            withKnownIssue("behind NATs a picture is lost now and then below a relayed link", isIntermittent: true) {
                #expect(Double(d.got) >= 0.99 * Double(d.of), "\(name): viewer \(id.short) after the kill: \(d.got) of \(d.of)")
            } when: { behindNATs }
        }
        #expect(c.hostCopiesMax <= 4)
    }

    /// A fifth of the audience replaced each minute (half of those leaving
    /// as users do, half dying), at an even pace; every viewer present gets
    /// at least 99 % of the pictures sent while it was there (from 3 s after
    /// it came, the time to enter and be placed).
    @Test(arguments: [CrowdNetwork.open, .nats, .dualStack])
    func churnOfAFifthPerMinuteKeepsThePictureFlowing(network: CrowdNetwork) throws {
        let (count, minutes) = long ? (200, 5) : (50, 1)
        let c = try Crowd(viewers: count, seed: 402, network: network)
        #expect(c.net.run(until: { c.allAttached }, timeout: .seconds(20)))
        c.net.run(for: .seconds(3))
        let start = c.net.clock.now()
        let perMinute = count / 5
        let pace = Duration.seconds(60) / perMinute
        let picker = SeededRandom(seed: 4020)
        for step in 0..<(perMinute * minutes) {
            let ids = c.viewers.keys.sorted { $0.text < $1.text }
            c.remove(ids[Int(picker.uint64() % UInt64(ids.count))], crash: step % 2 == 0)
            try c.add()
            c.net.run(for: pace)
        }
        let end = c.net.clock.now()
        var got = 0, of = 0
        for (id, joined) in c.joined {
            let from = max(start, joined + .seconds(3))
            let to = min(end, c.gone[id] ?? end)
            guard from < to else { continue }
            let d = c.delivered(id, from: from, to: to)
            got += d.got
            of += d.of
        }
        let continuity = Double(got) / Double(max(1, of))
        print("churn (\(network.rawValue)): \(count) viewers, \(perMinute * minutes) replaced in \(minutes) min: continuity \(continuity) (\(got) of \(of) pictures)")
        #expect(continuity >= 0.99)
        #expect(c.hostCopiesMax <= 4)
    }
}
