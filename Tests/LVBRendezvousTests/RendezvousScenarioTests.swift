import LVBCore
import LVBCrypto
import LVBGossip
import LVBMedia
import LVBRoom
import LVBTestSupport
import LVBTransport
import Testing
@testable import LVBRendezvous

/// A rendezvous, hosts that announce to it and nodes that ask it, on the
/// virtual network and clock.
private final class RendezvousWorld {
    let net = VirtualNetwork(seed: 91, defaultImpairment: Impairment(loss: 0.05, delay: .milliseconds(10)))
    let server: SimulatedNode
    let service: RendezvousService
    var hosts: [SimLiveNode] = []
    var announcers: [RoomAnnouncer] = []
    private var timers: [TimerHandle] = []

    init() {
        var config = TransportConfig()
        config.hello = Hello(agent: "test", role: .rendezvous)
        server = net.makeNodes(1, seed: 92, config: config)[0]
        service = RendezvousService(core: server.core, clock: net.clock)
        server.recordsEvents = false
        server.onTransportEvent = { [unowned self] in service.handle($0) }
        timers.append(net.every(.seconds(1)) { [unowned self] in service.tick() })
    }

    func addHost(_ n: UInt64, title: String, announcing: [PeerAddress]? = nil, publishing: Bool = false) throws -> SimLiveNode {
        let sim = net.makeNodes(1, seed: 100 + n)[0]
        let random = SeededRandom(seed: n)
        let policy = AdmissionPolicy(room: RoomID.random(random), host: sim.core.identity, mode: .open, clock: net.clock)
        var plan = NodePlan(part: .host(policy, info: RoomInfo(title: title, startedAt: net.clock.wallTime().milliseconds)))
        plan.profile = Profile(nickname: "host\(n)")
        if publishing {
            var setup = try PublisherSetup.open(video: .synthetic, audio: .synthetic, size: (320, 180), fps: 30, clock: net.clock)
            setup.gopSeconds = 1
            setup.bitrateKbps = 400
            plan.publish = setup
        }
        let host = try SimLiveNode(sim, plan: plan, network: net, random: random)
        let announcer = RoomAnnouncer(room: host.room, clock: net.clock, rendezvous: [server.address], addresses: announcing ?? [sim.address])
        host.node.register(announcer)
        // As the binary does: a thumbnail from a keyframe once per announcement interval.
        host.node.publishing.makeThumbnails(every: RendezvousConstants.announceInterval) { announcer.setThumbnail($0) }
        hosts.append(host)
        announcers.append(announcer)
        return host
    }

    /// A node that asks the rendezvous; returns it with everything it was answered.
    func client(_ n: UInt64) -> (SimulatedNode, RendezvousClient, Box) {
        let sim = net.makeNodes(1, seed: 300 + n)[0]
        let client = RendezvousClient(core: sim.core, clock: net.clock, random: SeededRandom(seed: n))
        timers.append(net.every(.milliseconds(100)) { client.tick() })
        let box = Box()
        client.onAnswer = { box.answers.append($0) }
        sim.onTransportEvent = { client.handle($0) }
        sim.core.connect(to: server.address, expecting: nil)
        return (sim, client, box)
    }

    final class Box { var answers: [RendezvousClient.Answer] = [] }
}

@Suite("Rendezvous on the virtual network")
struct RendezvousScenarioTests {
    @Test func hostsAreListedWithTheirCountsResolvedByRoomIDAndLeaveTheListWhenTheyGo() throws {
        let w = RendezvousWorld()
        let a = try w.addHost(1, title: "morning show")
        let b = try w.addHost(2, title: "night radio")
        // Two viewers in room b: it lists first.
        var viewers: [SimLiveNode] = []
        for n in 0..<2 {
            let sim = w.net.makeNodes(1, seed: 200 + UInt64(n))[0]
            let plan = NodePlan(part: .join(room: b.room.room, host: b.id, proof: .none, addresses: [b.sim.address]))
            viewers.append(try SimLiveNode(sim, plan: plan, network: w.net, random: SeededRandom(seed: 50 + UInt64(n))))
        }
        // A later announcement carries the viewers (on this lossy link one may be lost: the next one comes 10 s later).
        #expect(w.net.run(until: { w.service.registry.listing(b.room.room)?.announcement.viewers == 2 }, timeout: .seconds(45)))
        #expect(w.service.registry.count == 2)
        #expect(viewers.allSatisfy { $0.room.isAdmitted })

        let (sim, client, box) = w.client(1)
        #expect(w.net.run(until: { sim.established(with: w.server) }, timeout: .seconds(10)))
        client.list(page: 0, from: w.server.id)
        client.resolve(a.room.room, from: w.server.id)
        #expect(w.net.run(until: { box.answers.count == 2 }, timeout: .seconds(5)))
        guard case let .page(page, total, rooms) = box.answers.first(where: { if case .page = $0 { true } else { false } }) else {
            Issue.record("no page: \(box.answers)")
            return
        }
        #expect(page == 0 && total == 2)
        #expect(rooms.map(\.info.title) == ["night radio", "morning show"])
        #expect(rooms.map(\.viewers) == [2, 0])
        #expect(rooms.first?.hostNickname == "host2")
        #expect(rooms.first?.addresses == [b.sim.address])
        #expect(box.answers.contains(.resolved(a.room.room, rooms.last)))

        // Host b leaves: its room leaves the list at once. Host a dies: its
        // room is gone one TTL after its last announcement.
        b.node.leave()
        w.net.run(for: .seconds(1))
        #expect(w.service.registry.listing(b.room.room) == nil)
        #expect(w.service.registry.listing(a.room.room) != nil)
        a.crash()
        w.net.run(for: RendezvousConstants.announceTTL + RendezvousConstants.announceInterval)
        #expect(w.service.registry.count == 0)
        #expect(w.service.stats.refused == 0)
    }

    @Test func aHostsThumbnailReachesABrowsingViewerSignedAndLeavesWithTheRoom() throws {
        let w = RendezvousWorld()
        let a = try w.addHost(1, title: "with pictures", publishing: true)
        let sim = w.net.makeNodes(1, seed: 500)[0]
        let browser = RoomBrowser(core: sim.core, clock: w.net.clock, random: SeededRandom(seed: 5))
        browser.fetchesThumbnails = true
        var arrived: [RoomID] = []
        browser.onThumbnail = { arrived.append($0) }
        sim.onTransportEvent = { browser.handle(.transport($0)) }
        let ticker = w.net.every(.milliseconds(50)) { browser.tick() }
        defer { ticker.cancel() }
        sim.core.connect(to: w.server.address, expecting: nil)
        #expect(w.net.run(until: { !browser.servers.isEmpty && w.service.thumbnails.count == 1 }, timeout: .seconds(15)))
        browser.list(page: 0)
        #expect(w.net.run(until: { browser.thumbnails[a.room.room] != nil }, timeout: .seconds(10)))
        let thumbnail = try #require(browser.thumbnails[a.room.room])
        #expect(thumbnail.verify(host: a.id))
        #expect(Array(thumbnail.jpeg.prefix(2)) == [0xFF, 0xD8] && thumbnail.jpeg.count <= MediaConstants.maxThumbnailBytes)
        #expect(arrived == [a.room.room])

        // A newer thumbnail follows an announcement interval later; asking again with the one it has brings only that.
        let first = thumbnail.seq
        w.net.run(for: RendezvousConstants.announceInterval + .seconds(1))
        browser.list(page: 0)
        #expect(w.net.run(until: { (browser.thumbnails[a.room.room]?.seq ?? 0) > first }, timeout: .seconds(10)))
        #expect(w.service.stats.thumbnailRefused == 0)

        // The host closes its room: the rendezvous forgets the thumbnail at once.
        // The closed announcement is one datagram, and this world loses 5 %:
        // one lost would leave the room (and its thumbnail) listed until its
        // TTL, as the first test shows, so this link is made clean for it.
        w.net.setImpairment(.none, between: a.sim.address, and: w.server.address)
        a.node.leave()
        #expect(w.net.run(until: { w.service.thumbnails.count == 0 }, timeout: .seconds(5)))
    }

    @Test func aHostCannotAnnounceAnotherHostsRoom() throws {
        let w = RendezvousWorld()
        let a = try w.addHost(1, title: "mine")
        w.net.run(for: .seconds(3))
        let listed = try #require(w.service.registry.listing(a.room.room))
        // Another node relays host a's own signed announcement with a higher seq forged: refused.
        let thief = w.net.makeNodes(1, seed: 400)[0]
        thief.core.connect(to: w.server.address, expecting: nil)
        #expect(w.net.run(until: { thief.established(with: w.server) }, timeout: .seconds(10)))
        try thief.core.send(RendezvousMessage.announce(listed.announcement.encoded).encoded, channel: .rendezvous, to: w.server.id)
        try thief.core.send([99, 1, 2], channel: .rendezvous, to: w.server.id)
        w.net.run(for: .seconds(1))
        #expect(w.service.stats.refused == 1)
        #expect(w.service.stats.unknownTypes == 1)
        #expect(w.service.registry.listing(a.room.room)?.announcement.host == a.id)
    }

    @Test func theRendezvousPortAnswersSTUNWithTheSourceAddress() throws {
        let w = RendezvousWorld()
        let probe = w.net.makeEndpoint()
        var answers: [[UInt8]] = []
        probe.onReceive = { bytes, _ in answers.append(bytes) }
        let request = STUNMessage(type: RendezvousConstants.MessageType.bindingRequest, transactionID: Array(1...12)).encoded
        probe.send(request, to: w.server.address)
        w.net.run(for: .milliseconds(100))
        let answer = try STUNMessage.parse(try #require(answers.first)[...])
        let xor = try #require(answer.attribute(RendezvousConstants.Attribute.xorMappedAddress))
        #expect(try STUNAddress.decodeXOR(xor.value, transactionID: answer.transactionID) == probe.address)
        #expect(w.service.stats.stunAnswered == 1)
        #expect(w.server.core.stats.sideChannelIn == 1 && w.server.core.stats.droppedTotal == 0)
    }

    /// Abuse: a flood of STUN from one address, or of requests over one
    /// session, is answered only up to its source's budget.
    @Test func floodsAreAnsweredOnlyUpToTheSourcesBudget() throws {
        let w = RendezvousWorld()
        let probe = w.net.makeEndpoint()
        var answers = 0
        probe.onReceive = { _, _ in answers += 1 }
        w.net.setImpairment(.none, between: probe.address, and: w.server.address)
        for n in 0..<100 {
            let request = STUNMessage(type: RendezvousConstants.MessageType.bindingRequest,
                                      transactionID: [UInt8](repeating: UInt8(n), count: 12)).encoded
            probe.send(request, to: w.server.address)
        }
        w.net.run(for: .milliseconds(100))
        #expect(answers == RendezvousConstants.stunBurst, "\(answers) answers to 100 requests at once")
        #expect(w.service.stats.rateLimited == 100 - RendezvousConstants.stunBurst)

        let flooder = w.net.makeNodes(1, seed: 500)[0]
        var pages = 0
        flooder.onTransportEvent = { if case .message(_, .rendezvous, _) = $0 { pages += 1 } }
        flooder.core.connect(to: w.server.address, expecting: nil)
        #expect(w.net.run(until: { flooder.established(with: w.server) }, timeout: .seconds(10)))
        w.net.setImpairment(.none, between: flooder.address, and: w.server.address)
        for n in 0..<50 {
            try flooder.core.send(RendezvousMessage.list(request: UInt32(n), page: 0).encoded, channel: .rendezvous, to: w.server.id)
        }
        w.net.run(for: .milliseconds(200))
        #expect(pages == RendezvousConstants.requestBurst, "\(pages) pages for 50 requests at once")
    }

    /// A host that announces only an address nobody can reach (a LAN
    /// address behind its NAT) is still reached: the rendezvous tells both
    /// sides where it sees the other, both dial at once, and the joiner gets in.
    @Test func anIntroductionReachesAHostWhoseAnnouncedAddressesDoNot() throws {
        let w = RendezvousWorld()
        let unreachable = PeerAddress.ipv4(192, 168, 77, 1, port: 7400)
        let host = try w.addHost(1, title: "behind a NAT", announcing: [unreachable])
        w.net.run(for: .seconds(2))
        // The host learnt where the rendezvous sees it and announced that first.
        let listed = try #require(w.service.registry.listing(host.room.room)).announcement.addresses
        #expect(listed == [host.sim.address, unreachable])

        let sim = w.net.makeNodes(1, seed: 400)[0]
        let plan = NodePlan(part: .join(room: host.room.room, host: host.id, proof: .none, addresses: [unreachable]))
        let joiner = try SimLiveNode(sim, plan: plan, network: w.net, random: SeededRandom(seed: 401))
        // It claims a public address that is not its own: the host must never be aimed at it.
        let stranger = PeerAddress.ipv4(8, 8, 8, 8, port: 53)
        var strangerGot = 0
        let victim = w.net.makeEndpoint(address: stranger)
        victim.onReceive = { _, _ in strangerGot += 1 }
        let introducer = RoomIntroducer(core: sim.core, clock: w.net.clock, random: SeededRandom(seed: 402), rendezvous: [w.server.address],
                                        room: host.room.room, host: host.id, addresses: [stranger, .ipv4(10, 9, 9, 9, port: 7000)])
        joiner.node.register(introducer)
        #expect(w.net.run(until: { joiner.room.isAdmitted }, timeout: .seconds(5)))
        #expect(introducer.introduced)
        #expect(w.service.stats.introductions == 1 && w.announcers[0].introductionsDialled == 1)
        w.net.run(for: .seconds(5))
        #expect(strangerGot == 0)
    }

    /// Amplification, request type by request type, from a source the
    /// rendezvous has not verified (a bare UDP socket, which could be spoofing
    /// a victim's address): STUN is answered with at most 3× its bytes;
    /// every rendezvous request outside a session gets nothing at all (they
    /// are answered only inside sessions, whose handshake proved the source).
    @Test func noRequestTypeAmplifiesFromAnUnverifiedSource() throws {
        let w = RendezvousWorld()
        let host = try w.addHost(1, title: "amplify")
        w.net.run(for: .seconds(1))
        let stranger = w.net.makeEndpoint(address: .ipv4(192, 0, 2, 66, port: 5555))
        var got: [Int] = []
        stranger.onReceive = { bytes, _ in got.append(bytes.count) }
        let peer = host.id
        let requests: [(String, [UInt8])] = [
            ("stun", STUNMessage(type: RendezvousConstants.MessageType.bindingRequest, transactionID: Array(1...12)).encoded),
            ("list", RendezvousMessage.list(request: 1, page: 0).encoded),
            ("resolve", RendezvousMessage.resolve(request: 2, room: host.room.room).encoded),
            ("introduce", RendezvousMessage.introduce(request: 3, room: host.room.room, addresses: [.ipv4(10, 0, 0, 9, port: 1)]).encoded),
            ("relay", RendezvousMessage.relay(peer: peer, piece: RelayPiece(id: 1, index: 0, count: 1, bytes: [4, 0, 0, 0, 1])).encoded),
            ("announce", RendezvousMessage.announce(try #require(w.service.registry.listing(host.room.room)).announcement.encoded).encoded),
        ]
        for (name, bytes) in requests {
            got.removeAll()
            for _ in 0..<5 { stranger.send(bytes, to: w.server.address) }
            w.net.run(for: .milliseconds(200))
            let limit = name == "stun" ? 3 * bytes.count : 0
            #expect(got.allSatisfy { $0 <= limit } && (name == "stun" ? !got.isEmpty : got.isEmpty), "\(name): \(got) for \(bytes.count)-byte requests")
        }
    }
}
