import LVBCore
import LVBCrypto
import LVBGossip
import LVBMedia
import LVBRoom
import LVBTestSupport
import LVBTransport
import Testing

/// A host streaming to viewers over the virtual network and clock: the whole
/// media path (encoder → RTP → session → loss/jitter → receive pipeline →
/// decoder, feedback back) with the room's admission in front of it.
private final class MediaRoom {
    let net: VirtualNetwork
    let host: RoomSim
    let hostMedia: HostMedia
    var viewers: [RoomSim] = []
    var viewerMedia: [ViewerMedia] = []
    /// Decoded frame numbers (read from the picture) and the time each came out, per viewer.
    var decoded: [[(number: Int, at: Instant)]] = []
    var audioBlocks: [Int] = []
    var sentFrames = 0
    private let encoder: VideoStreamEncoder
    private let audio: AudioStreamEncoder
    private let pattern: SyntheticVideo
    private var tone: SyntheticAudio
    private var timers: [TimerHandle] = []
    private let roomID: RoomID
    private let random: SeededRandom
    private let nodes: [SimulatedNode]

    init(viewers count: Int, seed: UInt64, impairment: Impairment, gopCache: Bool = true) throws {
        net = VirtualNetwork(seed: seed, defaultImpairment: impairment)
        nodes = net.makeNodes(count + 1, seed: seed)
        random = SeededRandom(seed: seed ^ 0x3ED1A)
        roomID = RoomID.random(random)
        let policy = AdmissionPolicy(room: roomID, host: nodes[0].core.identity, mode: .open, clock: net.clock)
        let hostRoom = RoomNode(hosting: policy, core: nodes[0].core, clock: net.clock, random: random, info: RoomInfo(title: "live"))
        hostMedia = HostMedia(core: nodes[0].core, clock: net.clock, videoSSRC: 0x1111, audioSSRC: 0x2222,
                              maxVideoKbps: 600, useGOPCache: gopCache)
        hostRoom.media = hostMedia
        host = RoomSim(nodes[0], hostRoom, network: net)
        encoder = try VideoStreamEncoder(width: 160, height: 96, fps: 30, bitrateKbps: 600, gopSeconds: 1, ssrc: 0x1111,
                                         maxPacketSize: MessageSize.maxTransportPlaintext - 1, random: random)
        audio = try AudioStreamEncoder(ssrc: 0x2222, random: random)
        pattern = try SyntheticVideo(width: 160, height: 96)
        tone = try SyntheticAudio()
        // The host's sources on the virtual clock: a picture every 33 ms, sound every 20 ms.
        let start = net.clock.now()
        var frame = 0, block = 0
        timers.append(net.every(.milliseconds(33)) { [unowned self] in
            let keyframe = hostMedia.broadcaster.takeKeyframeRequest()
            try? encoder.setBitrate(kbps: hostMedia.broadcaster.targetVideoKbps)
            let ntp = NTPTime.from(net.clock.wallTime())
            if let f = try? encoder.encode(pattern.frame(number: frame), mediaTime: net.clock.now() - start,
                                           captureTime: ntp, forceKeyframe: keyframe) {
                hostMedia.broadcaster.publishVideo(f)
                sentFrames += 1
            }
            frame += 1
        })
        timers.append(net.every(.milliseconds(20)) { [unowned self] in
            if let p = try? audio.encode(tone.next20ms(), mediaTime: .milliseconds(20 * Int64(block)),
                                         captureTime: NTPTime.from(net.clock.wallTime())) {
                hostMedia.broadcaster.publishAudio(p)
            }
            block += 1
        })
        for _ in 0..<count { try addViewer() }
    }

    @discardableResult
    func addViewer() throws -> Int {
        let i = viewers.count
        let n = nodes.count > i + 1 ? nodes[i + 1] : net.makeNodes(1, seed: UInt64(100 + i))[0]
        let room = RoomNode(joining: roomID, host: nodes[0].id, proof: .none, core: n.core, clock: net.clock, random: random)
        let media = try ViewerMedia(core: n.core, clock: net.clock, ssrc: 0x9000 + UInt32(i))
        room.media = media
        decoded.append([])
        audioBlocks.append(0)
        media.onVideo = { [unowned self] f in
            decoded[i].append((SyntheticVideo.readFrameNumber(f.image) ?? -1, net.clock.now()))
        }
        media.onAudio = { [unowned self] _ in audioBlocks[i] += 1 }
        n.core.connect(to: nodes[0].address, expecting: nodes[0].id)
        viewers.append(RoomSim(n, room, network: net))
        viewerMedia.append(media)
        timers.append(net.every(.milliseconds(5)) { media.poll() })
        return i
    }

    /// The longest time between two decoded pictures after the first.
    func longestStall(_ i: Int) -> Duration {
        zip(decoded[i], decoded[i].dropFirst()).map { $1.at - $0.at }.max() ?? .zero
    }
}

@Suite struct MediaScenarioTests {
    @Test func tenPercentLossWithJitterIsRepairedOrSkippedCleanlyWithoutLongStalls() throws {
        let m = try MediaRoom(viewers: 2, seed: 41, impairment: Impairment(loss: 0.10, delay: .milliseconds(20), jitter: .milliseconds(15)))
        #expect(m.net.run(until: { m.viewers.allSatisfy(\.room.isAdmitted) }, timeout: .seconds(20)))
        m.net.run(for: .seconds(20))
        for (i, media) in m.viewerMedia.enumerated() {
            let numbers = m.decoded[i].map(\.number)
            let v = media.video.stats
            // Pictures come out in order, each the host's (the barcode reads back).
            #expect(!numbers.contains(-1))
            #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 })
            // Loss was repaired by retransmission, and what could not be was skipped, not stalled on.
            #expect(v.recovered > 0 && v.nacksSent > 0)
            // Of the pictures sent since this viewer's first, most decode; the rest were skipped.
            let span = (numbers.last ?? 0) - (numbers.first ?? 0) + 1
            #expect(numbers.count >= span * 9 / 10, "decoded \(numbers.count) of \(span): \(v), host \(m.hostMedia.broadcaster.stats)")
            #expect(v.framesDecoded + v.skippedFrames >= span - 5)
            #expect(m.longestStall(i) < .seconds(1), "stall of \(m.longestStall(i)) (GOP 1 s)")
            // Audio plays a 20 ms block every 20 ms: loss is concealed or recovered by FEC.
            #expect(m.audioBlocks[i] >= 900, "\(m.audioBlocks[i]) audio blocks in ~20 s")
            // After the first losses a gap waits one frame for the next packet,
            // so in-band FEC rebuilds a good share of them.
            let a = media.audio.stats
            #expect(a.fecRecovered * 2 >= a.lost, "audio \(a)")
        }
        #expect(m.hostMedia.broadcaster.stats.retransmissions > 0)
        // Admission gates media: nobody else's RTCP was taken.
        #expect(m.host.room.droppedMedia == 0)
    }

    @Test func rateControlBacksOffUnderHeavyLossAndComesBackWhenItClears() throws {
        let m = try MediaRoom(viewers: 1, seed: 42, impairment: Impairment(loss: 0.25, delay: .milliseconds(10)))
        #expect(m.net.run(until: { m.viewers.allSatisfy(\.room.isAdmitted) }, timeout: .seconds(30)))
        m.net.run(for: .seconds(8))
        let lowered = m.hostMedia.broadcaster.targetVideoKbps
        #expect(lowered < 400, "target \(lowered) kbit/s under 25 % loss")
        m.net.defaultImpairment = Impairment(delay: .milliseconds(10))
        m.net.setImpairment(Impairment(delay: .milliseconds(10)), between: m.host.sim.address, and: m.viewers[0].sim.address)
        // +8 %/s: from the 100 kbit/s floor back to the 600 ceiling takes ~23 s.
        m.net.run(for: .seconds(30))
        let restored = m.hostMedia.broadcaster.targetVideoKbps
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
                #expect(m.hostMedia.broadcaster.stats.gopBursts == 1)
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
        #expect(m.hostMedia.broadcaster.subscriberCount == 0)
    }
}
