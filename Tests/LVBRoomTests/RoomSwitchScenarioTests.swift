import LVBCore
import LVBCrypto
import LVBGossip
import LVBMedia
import LVBRoom
import LVBTestSupport
import LVBTransport
import Testing

/// Several hosts streaming, one viewer switching between their rooms over one
/// transport, on the virtual network and clock: each node the library's own
/// driver (`LiveNode`), media and admission included.
private final class Rooms {
    let net: VirtualNetwork
    var hosts: [SimLiveNode] = []
    var rooms: [RoomID] = []
    let viewer: SimLiveNode
    /// Every picture the viewer decoded: the sender's SSRC (which room) and when.
    var decoded: [(ssrc: UInt32?, at: Instant)] = []

    init(hosts count: Int, seed: UInt64, impairment: Impairment, gopSeconds: Double = 2) throws {
        net = VirtualNetwork(seed: seed, defaultImpairment: impairment)
        let nodes = net.makeNodes(count + 1, seed: seed)
        let random = SeededRandom(seed: seed ^ 0x5117C4)
        for i in 0..<count {
            let room = RoomID.random(random)
            let policy = AdmissionPolicy(room: room, host: nodes[i].core.identity, mode: .open, clock: net.clock)
            var plan = NodePlan(part: .host(policy, info: RoomInfo(title: "room \(i)")))
            var setup = try PublisherSetup.open(video: .synthetic, audio: .synthetic, size: (160, 96), fps: 30, clock: net.clock)
            setup.gopSeconds = gopSeconds
            setup.bitrateKbps = 500
            plan.publish = setup
            hosts.append(try SimLiveNode(nodes[i], plan: plan, network: net, random: random))
            rooms.append(room)
        }
        var plan = NodePlan(part: .join(room: rooms[0], host: hosts[0].id, proof: .none, addresses: [hosts[0].sim.address]))
        plan.receive = SinkOptions()
        viewer = try SimLiveNode(nodes[count], plan: plan, network: net, random: random)
        viewer.node.viewing.onHostVideo = { [unowned self] _ in
            decoded.append((viewer.node.media.receivers[viewer.room.host]?.video.mediaSSRC, net.clock.now()))
        }
    }

    func ssrc(_ i: Int) -> UInt32 { hosts[i].node.media.publisher!.videoSSRC }  // invariant: hosts publish

    /// Dials host `i` and keeps its room ready.
    func preload(_ i: Int) {
        viewer.sim.core.connect(to: hosts[i].sim.address, expecting: hosts[i].id)
        viewer.node.preload(rooms[i], host: hosts[i].id)
    }

    /// The viewer's `first_frame` reports, in order: (ms, preloaded).
    var firstFrames: [(ms: Double, preloaded: Bool)] {
        viewer.outputs.compactMap {
            if case let .sink(.firstFrame(ms, _, _, _, preloaded)) = $0 { (ms, preloaded) } else { nil }
        }
    }

    func present(_ host: Int) -> Bool { hosts[host].room.state?.isPresent(viewer.id) == true }
}

@Suite struct RoomSwitchScenarioTests {
    @Test func aPreloadedRoomShowsAPictureAtTheSwitchAndThenGoesLive() throws {
        let r = try Rooms(hosts: 2, seed: 91, impairment: Impairment(delay: .milliseconds(20)))
        #expect(r.net.run(until: { r.viewer.room.isAdmitted }, timeout: .seconds(5)))
        r.preload(1)
        let ready = r.net.run(until: { r.viewer.node.preloads[r.rooms[1]]?.isReady == true }, timeout: .seconds(5))
        #expect(ready)
        // Preloaded, not a member: host B does not list the viewer, and sends it keyframes only.
        r.net.run(for: .seconds(3))
        #expect(!r.present(1) && r.present(0))
        let fanOutB = r.hosts[1].node.media.publisher!.fanOut  // invariant: hosts publish
        #expect(fanOutB.isKeyframesOnly(r.viewer.id))
        let preview = try #require(r.viewer.node.preloads[r.rooms[1]]?.preview)
        let streamBytes = try #require(r.viewer.node.media.receivers[r.hosts[0].id]).videoBytes
        #expect(preview.keyframes >= 2 && preview.bytes * 3 < streamBytes, "preview \(preview.bytes) B vs live \(streamBytes) B")

        let switchedAt = r.net.clock.now()
        let preloaded = try r.viewer.node.switchRoom(to: r.rooms[1], host: r.hosts[1].id)
        #expect(preloaded)
        // The held keyframe decodes at the switch itself: no round trip.
        let first = try #require(r.decoded.first { $0.at >= switchedAt })
        #expect(first.ssrc == r.ssrc(1) && first.at - switchedAt < .milliseconds(5))
        #expect(r.firstFrames.last?.preloaded == true && (r.firstFrames.last?.ms ?? 99) < 5)
        // Then live: room B's pictures keep coming at the frame rate, and the viewer is in B, not A.
        r.net.run(for: .seconds(3))
        let fromB = r.decoded.filter { $0.at >= switchedAt }
        #expect(fromB.allSatisfy { $0.ssrc == r.ssrc(1) })
        #expect(fromB.count >= 80, "\(fromB.count) pictures from B in 3 s")
        #expect(r.present(1) && !r.present(0))
        #expect(r.viewer.room.room == r.rooms[1])
        #expect(!fanOutB.isKeyframesOnly(r.viewer.id))
        // Host A no longer streams to the viewer: it left.
        #expect(r.hosts[0].node.media.publisher!.subscriberCount == 0)  // invariant: hosts publish
    }

    @Test func aColdSwitchAsksAndGetsTheHostsCachedPictureWithinAFewRoundTrips() throws {
        let r = try Rooms(hosts: 2, seed: 92, impairment: Impairment(delay: .milliseconds(20)))
        #expect(r.net.run(until: { r.viewer.room.isAdmitted }, timeout: .seconds(5)))
        r.net.run(for: .seconds(1))
        let switchedAt = r.net.clock.now()
        r.viewer.sim.core.connect(to: r.hosts[1].sim.address, expecting: r.hosts[1].id)
        #expect(try !r.viewer.node.switchRoom(to: r.rooms[1], host: r.hosts[1].id))
        #expect(r.net.run(until: { r.decoded.contains { $0.ssrc == r.ssrc(1) } }, timeout: .seconds(3)))
        let first = try #require(r.decoded.first { $0.ssrc == r.ssrc(1) })
        // Two round trips of 40 ms and the GOP burst: the handshake (IK: the
        // response establishes), then the admission request with the
        // subscription beside it, answered by the pass and the GOP behind it.
        let waited = first.at - switchedAt
        #expect(waited >= .milliseconds(80) && waited < .milliseconds(120), "\(waited)")
        #expect(r.firstFrames.last?.preloaded == false)
    }

    @Test func switchingBackAndForthKeepsTheNeighbourReadyAndNeverShowsTheWrongRoom() throws {
        let r = try Rooms(hosts: 2, seed: 93, impairment: Impairment(loss: 0.02, delay: .milliseconds(10), jitter: .milliseconds(5)))
        #expect(r.net.run(until: { r.viewer.room.isAdmitted }, timeout: .seconds(5)))
        var current = 0
        for round in 0..<6 {
            let next = 1 - current
            r.preload(next)
            #expect(r.net.run(until: { r.viewer.node.preloads[r.rooms[next]]?.isReady == true }, timeout: .seconds(6)), "round \(round)")
            let switchedAt = r.net.clock.now()
            #expect(try r.viewer.node.switchRoom(to: r.rooms[next], host: r.hosts[next].id), "round \(round)")
            r.net.run(for: .seconds(2))
            let after = r.decoded.filter { $0.at >= switchedAt }
            #expect(after.first.map { $0.at - switchedAt < .milliseconds(5) } == true, "round \(round)")
            #expect(after.allSatisfy { $0.ssrc == r.ssrc(next) }, "round \(round): a picture of the other room")
            #expect(after.count >= 45, "round \(round): \(after.count) pictures in 2 s")
            #expect(r.present(next) && !r.present(current), "round \(round)")
            current = next
        }
        // The rooms saw one member come and go, never two of us (one instance in every room).
        #expect(!r.hosts.contains { h in h.roomOutputs.contains { if case .change(.signedInElsewhere) = $0 { true } else { false } } })
        #expect(r.firstFrames.count == 7 && r.firstFrames.dropFirst().allSatisfy(\.preloaded), "\(r.firstFrames)")
    }

    @Test func aHostCannotSwitchAndAViewerCannotSwitchToItsOwnRoom() throws {
        let r = try Rooms(hosts: 2, seed: 94, impairment: Impairment(delay: .milliseconds(5)))
        #expect(r.net.run(until: { r.viewer.room.isAdmitted }, timeout: .seconds(5)))
        #expect(throws: RoomActionError.self) { try r.hosts[0].node.switchRoom(to: r.rooms[1], host: r.hosts[1].id) }
        #expect(throws: RoomActionError.self) { try r.viewer.node.switchRoom(to: r.rooms[0], host: r.hosts[0].id) }
        // Preloading the room it is in, or as a host, does nothing.
        r.viewer.node.preload(r.rooms[0], host: r.hosts[0].id)
        r.hosts[0].node.preload(r.rooms[1], host: r.hosts[1].id)
        #expect(r.viewer.node.preloads.isEmpty && r.hosts[0].node.preloads.isEmpty)
    }

    @Test func droppingAPreloadEndsItsSessionAndItsTrickle() throws {
        let r = try Rooms(hosts: 2, seed: 95, impairment: Impairment(delay: .milliseconds(5)))
        #expect(r.net.run(until: { r.viewer.room.isAdmitted }, timeout: .seconds(5)))
        r.preload(1)
        #expect(r.net.run(until: { r.viewer.node.preloads[r.rooms[1]]?.isReady == true }, timeout: .seconds(5)))
        r.viewer.node.dropPreload(r.rooms[1])
        r.net.run(for: .seconds(1))
        #expect(!r.viewer.sim.core.isEstablished(with: r.hosts[1].id))
        #expect(r.hosts[1].node.media.publisher!.subscriberCount == 0)  // invariant: hosts publish
        #expect(r.viewer.room.room == r.rooms[0] && r.present(0))
    }
}
