import LVBCore
import LVBCrypto
import LVBGossip
import LVBMedia
import LVBRoom
import LVBTestSupport
import LVBTransport
import Testing

/// A host streaming to viewers over the virtual network and clock, each node
/// the library's own driver (`LiveNode`): sources, encode pump, RTP, sessions,
/// loss/jitter, receive pipelines, decoders and feedback, with the room's
/// admission in front — no real threads, no sleeping, no test-side sender.
private final class MediaRoom {
    let net: VirtualNetwork
    let host: SimLiveNode
    var viewers: [SimLiveNode] = []
    /// Decoded frame numbers (read from the picture) and the time each came out, per viewer.
    var decoded: [[(number: Int, at: Instant)]] = []
    var audioBlocks: [Int] = []
    let roomID: RoomID
    private let random: SeededRandom
    private let nodes: [SimulatedNode]

    init(viewers count: Int, seed: UInt64, impairment: Impairment, gopCache: Bool = true) throws {
        net = VirtualNetwork(seed: seed, defaultImpairment: impairment)
        nodes = net.makeNodes(count + 1, seed: seed)
        random = SeededRandom(seed: seed ^ 0x3ED1A)
        roomID = RoomID.random(random)
        let policy = AdmissionPolicy(room: roomID, host: nodes[0].core.identity, mode: .open, clock: net.clock)
        var plan = NodePlan(part: .host(policy, info: RoomInfo(title: "live")))
        plan.publish = try Self.sources(net, width: 160, height: 96, kbps: 600, gopCache: gopCache)
        host = try SimLiveNode(nodes[0], plan: plan, network: net, random: random)
        for _ in 0..<count { try addViewer() }
    }

    /// The library's synthetic sources at 30 fps with a 1 s GOP.
    static func sources(_ net: VirtualNetwork, width: Int, height: Int, kbps: Int, gopCache: Bool = true) throws -> PublisherSetup {
        var setup = try PublisherSetup.open(video: .synthetic, audio: .synthetic, size: (width, height), fps: 30, clock: net.clock)
        setup.gopSeconds = 1
        setup.bitrateKbps = kbps
        setup.gopCache = gopCache
        return setup
    }

    var origin: MediaOrigin<NodeID> { host.node.media.publisher! }  // invariant: the host publishes

    @discardableResult
    func addViewer() throws -> Int {
        let i = viewers.count
        let n = nodes.count > i + 1 ? nodes[i + 1] : net.makeNodes(1, seed: UInt64(100 + i))[0]
        var plan = NodePlan(part: .join(room: roomID, host: host.id, proof: .none, addresses: [host.sim.address]))
        plan.receive = SinkOptions()
        let viewer = try SimLiveNode(n, plan: plan, network: net, random: random)
        decoded.append([])
        audioBlocks.append(0)
        viewer.node.viewing.onHostVideo = { [unowned self] f in
            decoded[i].append((SyntheticVideo.readFrameNumber(f.image) ?? -1, net.clock.now()))
        }
        viewer.node.viewing.onHostAudio = { [unowned self] _ in audioBlocks[i] += 1 }
        viewers.append(viewer)
        return i
    }

    func receiver(_ i: Int) -> StreamReceiver? { viewers[i].node.media.receivers[host.id] }

    /// The longest time between two decoded pictures after the first.
    func longestStall(_ i: Int) -> Duration {
        zip(decoded[i], decoded[i].dropFirst()).map { $1.at - $0.at }.max() ?? .zero
    }
}

@Suite struct MediaScenarioTests {
    @Test func aHostAndTwoViewersOnACleanLinkDecodeEveryPictureInOrder() throws {
        let m = try MediaRoom(viewers: 2, seed: 40, impairment: Impairment(delay: .milliseconds(15)))
        #expect(m.net.run(until: { m.viewers.allSatisfy(\.room.isAdmitted) }, timeout: .seconds(10)))
        m.net.run(for: .seconds(5))
        for i in 0..<2 {
            let numbers = m.decoded[i].map(\.number)
            let v = try #require(m.receiver(i)).video.stats
            // Every picture since the first one this viewer saw, in order, none skipped.
            #expect(numbers.count > 140, "\(numbers.count) pictures in ~5 s")
            #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $1 == $0 + 1 }, "\(numbers.prefix(40))")
            #expect(v.skippedFrames == 0 && v.lost == 0, "\(v)")
            #expect(m.audioBlocks[i] >= 240, "\(m.audioBlocks[i]) audio blocks in ~5 s")
            #expect(m.longestStall(i) < .milliseconds(100))
        }
        #expect(m.origin.subscriberCount == 2)
    }

    @Test func tenPercentLossWithJitterIsRepairedOrSkippedCleanlyWithoutLongStalls() throws {
        let m = try MediaRoom(viewers: 2, seed: 41, impairment: Impairment(loss: 0.10, delay: .milliseconds(20), jitter: .milliseconds(15)))
        #expect(m.net.run(until: { m.viewers.allSatisfy(\.room.isAdmitted) && m.origin.subscriberCount == 2 }, timeout: .seconds(20)))
        // A joiner subscribes right behind its admission request; under jitter
        // the subscription may overtake the request and be dropped. From now on
        // only members send media.
        let droppedWhileJoining = m.host.room.droppedMedia
        m.net.run(for: .seconds(20))
        for i in 0..<2 {
            let numbers = m.decoded[i].map(\.number)
            let receiver = try #require(m.receiver(i))
            let v = receiver.video.stats
            // Pictures come out in order, each the host's (the barcode reads back).
            #expect(!numbers.contains(-1))
            #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 })
            // Loss was repaired by retransmission, and what could not be was skipped, not stalled on.
            #expect(v.recovered > 0 && v.nacksSent > 0)
            // Of the pictures sent since this viewer's first, most decode; the rest were skipped.
            let span = (numbers.last ?? 0) - (numbers.first ?? 0) + 1
            #expect(numbers.count >= span * 9 / 10, "decoded \(numbers.count) of \(span): \(v), host \(m.origin.fanOut.stats)")
            #expect(v.framesDecoded + v.skippedFrames >= span - 5)
            #expect(m.longestStall(i) < .seconds(1), "stall of \(m.longestStall(i)) (GOP 1 s)")
            // Audio plays a 20 ms block every 20 ms: loss is concealed or recovered by FEC.
            #expect(m.audioBlocks[i] >= 900, "\(m.audioBlocks[i]) audio blocks in ~20 s")
            // After the first losses a gap waits one frame for the next packet,
            // so in-band FEC rebuilds a good share of them.
            let a = receiver.audio.stats
            #expect(a.fecRecovered * 2 >= a.lost, "audio \(a)")
        }
        #expect(m.origin.fanOut.stats.retransmissions > 0)
        // The gate let every member's RTCP through.
        #expect(m.host.room.droppedMedia == droppedWhileJoining)
    }

    @Test func rateControlBacksOffUnderHeavyLossAndComesBackWhenItClears() throws {
        let m = try MediaRoom(viewers: 1, seed: 42, impairment: Impairment(loss: 0.25, delay: .milliseconds(10)))
        #expect(m.net.run(until: { m.viewers.allSatisfy(\.room.isAdmitted) }, timeout: .seconds(30)))
        m.net.run(for: .seconds(8))
        let lowered = m.origin.targetVideoKbps
        #expect(lowered < 400, "target \(lowered) kbit/s under 25 % loss")
        m.net.defaultImpairment = Impairment(delay: .milliseconds(10))
        m.net.setImpairment(Impairment(delay: .milliseconds(10)), between: m.host.sim.address, and: m.viewers[0].sim.address)
        // +8 %/s: from the 100 kbit/s floor back to the 600 ceiling takes ~23 s.
        m.net.run(for: .seconds(30))
        let restored = m.origin.targetVideoKbps
        #expect(restored >= 550, "target \(restored) kbit/s after 30 s without loss (was \(lowered))")
    }

    @Test func aLateJoinerDecodesAPictureAtOnceFromTheGOPCache() throws {
        for cache in [true, false] {
            let m = try MediaRoom(viewers: 0, seed: 43, impairment: Impairment(delay: .milliseconds(10)), gopCache: cache)
            m.net.run(for: .milliseconds(1500))  // mid-GOP (GOP 1 s, keyframe requests aside)
            let joinedAt = m.net.clock.now()
            let i = try m.addViewer()
            #expect(m.net.run(until: { !m.decoded[i].isEmpty }, timeout: .seconds(5)))
            let wait = (m.decoded[i].first?.at ?? joinedAt) - joinedAt
            if cache {
                // Handshake, admission and the burst: a few one-way delays.
                #expect(wait < .milliseconds(150), "first picture after \(wait) with the GOP cache")
                #expect(m.origin.fanOut.stats.gopBursts == 1)
            } else {
                // Without it the viewer waits for a keyframe (requested, or the next one).
                #expect(wait > .milliseconds(100), "first picture after \(wait) without the GOP cache")
            }
        }
    }

    @Test func nodesThatWereNotAdmittedGetNoMediaAndTheirRTCPIsDropped() throws {
        let m = try MediaRoom(viewers: 0, seed: 44, impairment: .none)
        // A stranger with a session but no admission sends RTCP asking for the stream.
        let stranger = m.net.makeNodes(1, seed: 77)[0]
        var rtpSeen = 0
        stranger.onTransportEvent = { if case .message(_, .rtp, _) = $0 { rtpSeen += 1 } }
        stranger.core.connect(to: m.host.sim.address, expecting: m.host.id)
        m.net.run(for: .seconds(1))
        let rr = RTCPPacket.receiverReport(try RTCPReceiverReport(ssrc: 5)).serialized()
        for _ in 0..<10 { try stranger.core.send(rr, channel: .rtcp, to: m.host.id) }
        m.net.run(for: .seconds(2))
        #expect(rtpSeen == 0)
        #expect(m.host.room.droppedMedia == 10)
        #expect(m.origin.subscriberCount == 0)
    }

    /// Co-hosts: the host publishes its stream to a viewer while it receives
    /// two guests' streams (on stage by link-mic), each a different picture
    /// size, and each decodes whole and in order.
    @Test func aNodePublishesWhileReceivingTwoOtherStreams() throws {
        let m = try MediaRoom(viewers: 1, seed: 45, impairment: Impairment(loss: 0.02, delay: .milliseconds(10)))
        var guests: [SimLiveNode] = []
        for (n, size) in [(200, (176, 144)), (201, (320, 180))] {
            let sim = m.net.makeNodes(1, seed: UInt64(n))[0]
            var plan = NodePlan(part: .join(room: m.roomID, host: m.host.id, proof: .none, addresses: [m.host.sim.address]))
            plan.publish = try MediaRoom.sources(m.net, width: size.0, height: size.1, kbps: 400)
            guests.append(try SimLiveNode(sim, plan: plan, network: m.net, random: SeededRandom(seed: UInt64(n))))
        }
        #expect(m.net.run(until: { (m.viewers + guests).allSatisfy(\.room.isAdmitted) }, timeout: .seconds(10)))
        var pictures: [[(number: Int, width: Int)]] = [[], []]
        try m.host.node.publishing.setLayout(.pip)  // keeps the host's numbering readable in the mix
        for (g, guest) in guests.enumerated() {
            try guest.room.requestLinkMic("")
            m.net.run(for: .milliseconds(500))
            try m.host.room.acceptLinkMic(guest.id.short)
            // Tap the host's receive pipeline of the guest, in front of the mixer.
            let receiver = try #require(m.host.node.media.receivers[guest.id])
            let mix = receiver.onVideo
            receiver.onVideo = { f in
                pictures[g].append((SyntheticVideo.readFrameNumber(f.image) ?? -1, f.image.width))
                mix?(f)
            }
        }
        m.net.run(for: .seconds(6))
        for (g, expectedWidth) in [176, 320].enumerated() {
            let numbers = pictures[g].map(\.number)
            #expect(numbers.count > 150, "guest \(g): \(numbers.count) pictures in ~6 s")
            #expect(!numbers.contains(-1) && zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 })
            #expect(pictures[g].allSatisfy { $0.width == expectedWidth })
            #expect(guests[g].node.media.publisher?.subscriberCount == 1)
        }
        // Meanwhile the host's own stream reached its viewer.
        let seen = m.decoded[0].map(\.number)
        #expect(seen.count > 150 && zip(seen, seen.dropFirst()).allSatisfy { $0 < $1 })
        #expect(m.decoded[0].count > 150)
        // Media is routed by stream: no RTP arrived from a node we did not ask.
        #expect(m.host.node.media.unrequestedRTP == 0 && m.viewers[0].node.media.unrequestedRTP == 0)
    }
}
