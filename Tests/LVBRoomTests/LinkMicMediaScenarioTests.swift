import LVBCore
import LVBCrypto
import LVBGossip
import LVBMedia
import LVBRoom
import LVBTestSupport
import LVBTransport
import TestAssertions
import Testing

/// Link-mic with media on the virtual network and clock: guests publish to
/// the host, the host mixes them into the stream everyone else gets and
/// returns each guest a mix without itself — every node the library's own
/// driver, with real encoders, decoders, the mixer and loss.
private final class Stage {
    static let size = (width: 320, height: 180)
    let net: VirtualNetwork
    let host: SimLiveNode
    var nodes: [SimLiveNode] = []
    /// Per joiner: decoded pictures of the host's stream (the latest kept) and sound.
    var pictures: [[(frame: I420Frame, at: Instant)]] = []
    var sound: [[Int16]] = []
    let roomID: RoomID
    private let random: SeededRandom

    /// `slots`: every node's relay slots (nil: the plan's default).
    init(joiners: Int, seed: UInt64, impairment: Impairment, slots: Int? = nil) throws {
        net = VirtualNetwork(seed: seed, defaultImpairment: impairment)
        let sims = net.makeNodes(joiners + 1, seed: seed)
        random = SeededRandom(seed: seed ^ 0x57A6E)
        roomID = RoomID.random(random)
        let policy = AdmissionPolicy(room: roomID, host: sims[0].core.identity, mode: .open, clock: net.clock)
        var plan = NodePlan(part: .host(policy, info: RoomInfo(title: "on stage")))
        plan.publish = try Self.sources(net, look: .host)
        plan.relaySlots = slots
        plan.addresses = [sims[0].address]
        host = try SimLiveNode(sims[0], plan: plan, network: net, random: random)
        for (i, sim) in sims.dropFirst().enumerated() {
            var plan = NodePlan(part: .join(room: roomID, host: host.id, proof: .none, addresses: [host.sim.address]))
            plan.receive = SinkOptions()
            plan.publish = try Self.sources(net, look: .guest)
            plan.relaySlots = slots
            plan.addresses = [sim.address]
            let node = try SimLiveNode(sim, plan: plan, network: net, random: random)
            pictures.append([])
            sound.append([])
            node.node.viewing.onHostVideo = { [unowned self] f in
                pictures[i].append((f.image, net.clock.now()))
                if pictures[i].count > 400 { pictures[i].removeFirst(100) }
            }
            node.node.viewing.onHostAudio = { [unowned self] a in sound[i] += a.pcm }
            nodes.append(node)
        }
    }

    static func sources(_ net: VirtualNetwork, look: SyntheticLook) throws -> PublisherSetup {
        var setup = try PublisherSetup.open(video: .synthetic, audio: .synthetic, size: size, fps: 30, clock: net.clock, look: look)
        setup.gopSeconds = 1
        setup.bitrateKbps = 500
        return setup
    }

    func linkMic(_ n: SimLiveNode) -> [LinkMicOutput] {
        n.roomOutputs.compactMap { if case .feature(let o as LinkMicOutput) = $0 { o } else { nil } }
    }

    /// Puts joiners `indices` on stage, one after the other.
    func goOnStage(_ indices: [Int]) throws {
        for i in indices {
            try nodes[i].room.requestLinkMic("")
            let (host, guest) = (self.host, nodes[i])
            #expect(net.run(until: { self.linkMic(host).contains(.request(guest.id, message: "")) }, timeout: .seconds(5)))
            try host.room.acceptLinkMic(guest.id.short)
            #expect(net.run(until: { self.linkMic(guest).contains(.accepted) }, timeout: .seconds(5)))
        }
    }

    /// Mean luma of `rect`'s middle (away from the tile's edges and bar codes) in `frame`.
    static func meanLuma(_ frame: I420Frame, _ rect: StageRect, columns: ClosedRange<Double> = 0.55...0.95) -> Double {
        var sum = 0, count = 0
        let y0 = rect.y + rect.height * 3 / 10, y1 = rect.y + rect.height * 6 / 10
        let x0 = rect.x + Int(Double(rect.width) * columns.lowerBound), x1 = rect.x + Int(Double(rect.width) * columns.upperBound)
        for y in y0..<y1 { for x in x0..<x1 { sum += Int(frame.y[y * frame.width + x]); count += 1 } }
        return Double(sum) / Double(max(1, count))
    }

    /// Where the pip layout puts guest `k` of `guests`.
    static func tile(_ k: Int, of guests: Int, _ layout: StageLayout = .pip) -> StageRect {
        StageRect.rects(for: layout, participants: guests + 1, width: size.width, height: size.height)[k + 1]
    }

    /// The frame numbers (host's bar code) decoded by joiner `i` since `since`.
    func numbers(_ i: Int, since: Instant) -> [Int] {
        pictures[i].filter { $0.at >= since }.compactMap { SyntheticVideo.readFrameNumber($0.frame) }
    }
}

@Suite struct LinkMicMediaScenarioTests {
    /// The host's bottom-right corner is its black bar; a guest's pattern is
    /// reversed, so the right of its tile is the white bar: the tile shows
    /// the guest iff that part of the picture is bright.
    @Test func theViewerSeesTheGuestInThePipAndHearsBothTheGuestHearsOnlyTheHost() throws {
        let s = try Stage(joiners: 2, seed: 61, impairment: Impairment(delay: .milliseconds(15)))
        #expect(s.net.run(until: { s.nodes.allSatisfy(\.room.isAdmitted) }, timeout: .seconds(10)))
        s.net.run(for: .seconds(2))
        let before = try #require(s.pictures[1].last).frame
        #expect(Stage.meanLuma(before, Stage.tile(0, of: 1)) < 60)
        try s.goOnStage([0])
        s.net.run(for: .seconds(1))
        let onStage = s.net.clock.now()
        s.sound = [[], []]
        s.net.run(for: .seconds(3))
        // The viewer: the guest in the pip tile, the host's own numbering, both tones.
        let mixed = try #require(s.pictures[1].last).frame
        #expect(Stage.meanLuma(mixed, Stage.tile(0, of: 1)) > 120)
        let numbers = s.numbers(1, since: onStage)
        #expect(numbers.count > 80 && zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 }, "\(numbers.prefix(20))")
        let heard = Array(s.sound[1].suffix(48000))
        #expect(toneLevel(heard, at: 440) > -20 && toneLevel(heard, at: 660) > -20,
                "viewer: 440 Hz \(toneLevel(heard, at: 440)) dB, 660 Hz \(toneLevel(heard, at: 660)) dB")
        // The guest: the host's picture without itself (its tile's place shows the host's black bar), only the host's tone.
        let returned = try #require(s.pictures[0].last).frame
        #expect(returned.width <= MixConstants.returnMaxWidth)
        let scale = Double(returned.width) / Double(Stage.size.width)
        let tile = Stage.tile(0, of: 1)
        let scaledTile = StageRect(x: Int(Double(tile.x) * scale), y: Int(Double(tile.y) * scale),
                                   width: Int(Double(tile.width) * scale), height: Int(Double(tile.height) * scale))
        #expect(Stage.meanLuma(returned, scaledTile) < 60)
        let own = Array(s.sound[0].suffix(48000))
        #expect(toneLevel(own, at: 440) > -20)
        #expect(toneLevel(own, at: 660) < toneLevel(own, at: 440) - 30, "guest hears itself at \(toneLevel(own, at: 660)) dB")
        // The room knows its co-host.
        for n in [s.host] + s.nodes { #expect(n.room.state?.isOnStage(s.nodes[0].id) == true) }
        // Hang up: the tile is gone, the guest gets the main stream again.
        try s.host.room.hangUpLinkMic(nil)
        s.net.run(for: .seconds(2))
        #expect(Stage.meanLuma(try #require(s.pictures[1].last).frame, Stage.tile(0, of: 1)) < 60)
        #expect(try #require(s.pictures[0].last).frame.width == Stage.size.width)
        #expect(s.host.node.media.returns.isEmpty && s.host.node.publishing.mixer?.guestCount == 0)
    }

    /// The mix flows down the media tree like any stream. With one relay
    /// slot each, the viewers form a chain below the host; the one at depth
    /// 2 goes on stage: it leaves its place for its own return stream from
    /// the host, the viewer below it moves up, and every viewer in the chain
    /// sees the guest in its tile with the host's numbering running on.
    @Test func theMixFlowsDownTheTreeAndTheGuestLeavesItsPlaceInIt() throws {
        let s = try Stage(joiners: 4, seed: 64, impairment: Impairment(delay: .milliseconds(10)), slots: 1)
        func depth(_ i: Int) -> Int? { s.nodes[i].node.tree?.depth }
        #expect(s.net.run(until: { s.nodes.indices.allSatisfy { depth($0) != nil } }, timeout: .seconds(15)))
        s.net.run(for: .seconds(2))
        #expect(Set(s.nodes.indices.compactMap(depth)) == [1, 2, 3, 4], "\(s.nodes.indices.map(depth))")
        let guest = try #require(s.nodes.indices.first { depth($0) == 2 })
        let below = try #require(s.nodes.indices.first { depth($0) == 3 })
        try s.goOnStage([guest])
        s.net.run(for: .seconds(3))
        let since = s.net.clock.now()
        s.net.run(for: .seconds(2))
        let viewers = s.nodes.indices.filter { $0 != guest }
        for i in viewers {
            let numbers = s.numbers(i, since: since)
            #expect(numbers.count >= 50 && zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 }, "viewer \(i): \(numbers.prefix(20))")
            let last = try #require(s.pictures[i].last).frame
            #expect(Stage.meanLuma(last, Stage.tile(0, of: 1)) > 120, "viewer \(i) at depth \(depth(i) ?? -1) sees no guest")
            // Nobody hangs below the guest any more.
            #expect(s.nodes[i].node.tree?.parent != s.nodes[guest].id)
        }
        // The viewers relay the mix: the one that was below the guest gets it from a relay or the host, the chain holds.
        #expect(Set(viewers.compactMap(depth)) == [1, 2, 3], "\(viewers.map(depth))")
        #expect(s.nodes[below].node.tree?.parent != nil)
        // The guest: its return from the host (no guest in its tile), no relay, no parent in the tree.
        let returned = try #require(s.pictures[guest].last).frame
        #expect(returned.width <= MixConstants.returnMaxWidth)
        #expect(s.nodes[guest].node.media.relay == nil && s.nodes[guest].node.media.feeder(of: s.host.id) == s.host.id)
        #expect(s.host.room.state?.tree[s.nodes[guest].id]?.slots == 0)
        // The host still sends one full copy of the mix, plus the guest's return.
        #expect(s.host.node.media.publisher?.fullSubscriberCount == 1)
        #expect(s.host.node.media.returns.keys.contains(s.nodes[guest].id))
        // Off stage: the former guest takes the mix again, from wherever the tree has room.
        try s.host.room.hangUpLinkMic(nil)
        #expect(s.net.run(until: { depth(guest) != nil }, timeout: .seconds(5)))
        s.net.run(for: .seconds(2))
        let back = s.net.clock.now()
        s.net.run(for: .seconds(1))
        #expect(s.numbers(guest, since: back).count >= 25)
        #expect(try #require(s.pictures[guest].last).frame.width == Stage.size.width)
        #expect(s.host.node.media.publisher?.fullSubscriberCount == 1)
    }

    /// Two guests, three viewers, one guest's link losing 10 %: the mix keeps
    /// its frame rate, the lossy guest's region freezes now and then but
    /// recovers, and every viewer decodes the mix.
    @Test func twoGuestsOneOnALossyLinkTheMixKeepsItsRate() throws {
        let s = try Stage(joiners: 5, seed: 62, impairment: Impairment(delay: .milliseconds(15), jitter: .milliseconds(3)))
        s.net.setImpairment(Impairment(loss: 0.10, delay: .milliseconds(20), jitter: .milliseconds(10)),
                            between: s.nodes[1].sim.address, and: s.host.sim.address)
        #expect(s.net.run(until: { s.nodes.allSatisfy(\.room.isAdmitted) }, timeout: .seconds(20)))
        // Picture-in-picture keeps the host's picture (and its numbering) whole.
        try s.host.node.publishing.setLayout(.pip)
        try s.goOnStage([0, 1])
        s.net.run(for: .seconds(2))
        let start = s.net.clock.now()
        s.net.run(for: .seconds(10))
        for i in 2..<5 {
            let numbers = s.numbers(i, since: start)
            // 30 fps for 10 s: the mix came out at its rate, in order.
            #expect(numbers.count >= 285, "viewer \(i): \(numbers.count) mixed pictures in 10 s")
            #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 })
            // Both guests are in their tiles.
            let last = try #require(s.pictures[i].last).frame
            for k in 0..<2 {
                #expect(Stage.meanLuma(last, Stage.tile(k, of: 2)) > 120, "viewer \(i) guest \(k)")
            }
        }
        // The lossy guest's stream was repaired and kept flowing into the mix.
        let lossy = try #require(s.host.node.media.receivers[s.nodes[1].id])
        #expect(lossy.video.stats.nacksSent > 0)
        #expect(lossy.video.stats.framesDecoded >= 240, "\(lossy.video.stats)")
        #expect(s.host.room.guestsOnStage.count == 2)
    }

    /// A guest whose link stalls for a second never stalls the host's
    /// picture: the mix goes on at its rate, the guest's tile freezes, then
    /// moves again; a guest gone quiet for longer is taken off stage.
    @Test func aStalledGuestFreezesInItsTileAndASilentOneLeavesTheStage() throws {
        let s = try Stage(joiners: 2, seed: 63, impairment: Impairment(delay: .milliseconds(15)))
        #expect(s.net.run(until: { s.nodes.allSatisfy(\.room.isAdmitted) }, timeout: .seconds(10)))
        try s.goOnStage([0])
        s.net.run(for: .seconds(2))
        let tile = Stage.tile(0, of: 1)
        /// How much the tile changed between consecutive pictures the viewer decoded in [from, to).
        func tileMotion(from: Instant, to: Instant) -> [Double] {
            let frames = s.pictures[1].filter { $0.at >= from && $0.at < to }.map(\.frame)
            return zip(frames, frames.dropFirst()).map { a, b in
                var sum = 0
                for y in tile.y..<(tile.y + tile.height) {
                    for x in tile.x..<(tile.x + tile.width) { sum += abs(Int(a.y[y * a.width + x]) - Int(b.y[y * b.width + x])) }
                }
                return Double(sum) / Double(tile.width * tile.height)
            }
        }
        let cut = s.net.clock.now()
        s.net.cut(s.nodes[0].sim.address, s.host.sim.address)
        s.net.run(for: .milliseconds(1200))
        s.net.heal(s.nodes[0].sim.address, s.host.sim.address)
        let healed = s.net.clock.now()
        s.net.run(for: .seconds(2))
        // The mix kept its rate through the stall.
        let during = s.pictures[1].filter { $0.at >= cut && $0.at < healed }.count
        #expect(during >= 30, "\(during) mixed pictures in the 1.2 s stall")
        // Frozen while cut (after the pictures in flight), moving again after.
        let frozen = tileMotion(from: cut + .milliseconds(300), to: healed)
        #expect(!frozen.isEmpty && frozen.allSatisfy { $0 < 1.5 }, "\(frozen)")
        #expect(tileMotion(from: healed + .milliseconds(500), to: s.net.clock.now()).contains { $0 > 3 })
        #expect(s.host.room.guestsOnStage == [s.nodes[0].id])
        // Silent longer than RoomConstants.guestSilence: off stage, and the guest learns it.
        s.net.cut(s.nodes[0].sim.address, s.host.sim.address)
        s.net.run(for: .seconds(3))
        s.net.heal(s.nodes[0].sim.address, s.host.sim.address)
        s.net.run(for: .seconds(3))
        #expect(s.host.room.guestsOnStage.isEmpty)
        #expect(s.nodes[1].room.state?.isOnStage(s.nodes[0].id) == false)
        #expect(s.linkMic(s.nodes[0]).last == .ended(.silent), "\(s.linkMic(s.nodes[0]))")
        #expect(s.nodes[0].node.publishing.pump == nil)
    }
}
