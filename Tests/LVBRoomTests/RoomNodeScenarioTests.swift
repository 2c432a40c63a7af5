import LVBCore
import LVBCrypto
import LVBGossip
import LVBRoom
import LVBTestSupport
import LVBTransport
import Testing

/// A room node on the virtual network, with everything it reported.
final class RoomSim {
    let sim: SimulatedNode
    let room: RoomNode
    var outputs: [RoomOutput] = []
    var ticker: TimerHandle?

    init(_ sim: SimulatedNode, _ room: RoomNode, network: VirtualNetwork) {
        self.sim = sim
        self.room = room
        sim.recordsEvents = false
        room.onOutput = { [unowned self] in outputs.append($0) }
        sim.onTransportEvent = { [unowned self] in self.room.handle($0) }
        ticker = network.every(GossipConstants.tickInterval) { [unowned self] in self.room.tick() }
        room.start()
    }

    var id: NodeID { sim.id }
    var changes: [RoomChange] { outputs.compactMap { if case .change(let c) = $0 { c } else { nil } } }
    var chats: [String] {
        changes.compactMap { if case .chat(let e) = $0 { e.body.as(ChatLine.self)?.text } else { nil } }
    }
    var removed: RemovalReason? { outputs.lazy.compactMap { if case .removed(let r) = $0 { r } else { nil } }.first }
    var denied: AdmissionDenial? { outputs.lazy.compactMap { if case .denied(let d) = $0 { d } else { nil } }.first }

    func crash() {
        ticker?.cancel()
        sim.crash()
    }
}

@Suite struct RoomNodeScenarioTests {
    /// A host and `viewers` joiners (by ticket) on a lossy virtual network.
    private func room(viewers: Int, seed: UInt64, mode: (RoomID, Identity) -> AdmissionPolicy.Mode = { _, _ in .open },
                      proofsFor: (RoomID) -> [JoinProof]? = { _ in nil }, loss: Double = 0.05) -> (VirtualNetwork, RoomSim, [RoomSim]) {
        let net = VirtualNetwork(seed: seed, defaultImpairment: Impairment(loss: loss, delay: .milliseconds(10), jitter: .milliseconds(5)))
        let nodes = net.makeNodes(viewers + 1, seed: seed)
        let random = SeededRandom(seed: seed ^ 0xABC)
        let roomID = RoomID.random(random)
        let hostIdentity = nodes[0].core.identity
        let proofs = proofsFor(roomID)
        let policy = AdmissionPolicy(room: roomID, host: hostIdentity, mode: mode(roomID, hostIdentity), clock: net.clock)
        let host = RoomSim(nodes[0], RoomNode(hosting: policy, core: nodes[0].core, clock: net.clock, random: random,
                                              info: RoomInfo(title: "test room")), network: net)
        let joiners = nodes.dropFirst().enumerated().map { i, n in
            let r = RoomNode(joining: roomID, host: nodes[0].id, proof: proofs?[i] ?? .none, core: n.core, clock: net.clock, random: random)
            n.core.connect(to: nodes[0].address, expecting: nodes[0].id)
            return RoomSim(n, r, network: net)
        }
        return (net, host, joiners)
    }

    @Test func viewersAreAdmittedAndChatLikesAndDanmakuReachEveryone() throws {
        let (net, host, viewers) = room(viewers: 4, seed: 1)
        #expect(net.run(until: { viewers.allSatisfy(\.room.isAdmitted) }, timeout: .seconds(30)))
        net.run(for: .seconds(3))
        try viewers[0].room.chat("hello room")
        try viewers[1].room.danmaku("666", color: 0xFF0000, lane: 2)
        try host.room.chat("welcome")
        for v in viewers { try v.room.like(3) }
        try host.room.like()
        net.run(for: .seconds(5))
        for n in [host] + viewers {
            #expect(Set(n.chats) == ["hello room", "welcome"])
            #expect(n.room.state?.likeTotal == 13)
            #expect(n.room.state?.members.count == 5)
            #expect(n.changes.contains { if case .posted(let e) = $0 { e.body.as(BulletComment.self) != nil } else { false } })
        }
    }

    @Test func aKickedViewerIsRemovedEverywhereAndItsChatIsDropped() throws {
        let (net, host, viewers) = room(viewers: 3, seed: 2)
        #expect(net.run(until: { viewers.allSatisfy(\.room.isAdmitted) }, timeout: .seconds(30)))
        net.run(for: .seconds(3))
        try host.room.kick(viewers[2].id)
        net.run(for: .seconds(3))
        #expect(viewers[2].removed == .kicked)
        for n in [host, viewers[0], viewers[1]] {
            #expect(n.room.state?.isKicked(viewers[2].id) == true)
            #expect(n.room.state?.members.contains { $0.id == viewers[2].id } == false)
        }
        #expect(throws: RoomActionError.self) { try viewers[2].room.chat("still here?") }
    }

    @Test func closingTheRoomTellsEveryNode() throws {
        let (net, host, viewers) = room(viewers: 3, seed: 3)
        #expect(net.run(until: { viewers.allSatisfy(\.room.isAdmitted) }, timeout: .seconds(30)))
        net.run(for: .seconds(2))
        try host.room.closeRoom()
        net.run(for: .seconds(3))
        for n in [host] + viewers { #expect(n.removed == .roomClosed) }
    }

    @Test func aPasswordRoomAdmitsTheRightPasswordOnlyAndTellsOthersNothing() throws {
        // The room id is drawn inside `room(...)`; derive keys for it there.
        let password = "s3cret"
        let (net, host, viewers) = room(viewers: 2, seed: 4, mode: { id, _ in
            .password(roomKey: (try? PasswordKey.derive(password: password, roomID: id.bytes)) ?? [])
        }, proofsFor: { id in
            [.password(roomKey: (try? PasswordKey.derive(password: password, roomID: id.bytes)) ?? []),
             .password(roomKey: (try? PasswordKey.derive(password: "wrong", roomID: id.bytes)) ?? [])]
        })
        #expect(net.run(until: { viewers[0].room.isAdmitted && viewers[1].denied != nil }, timeout: .seconds(30)))
        try host.room.chat("members only")
        net.run(for: .seconds(3))
        #expect(viewers[0].chats == ["members only"])
        #expect(viewers[1].denied == .wrongPassword)
        #expect(!viewers[1].room.isAdmitted)
        #expect(viewers[1].changes.isEmpty)  // no events, no member list
    }
}
