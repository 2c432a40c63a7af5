import LVBCore
import LVBCrypto
import LVBGossip
@testable import LVBRoom
import LVBTestSupport
import LVBTransport
import Testing

/// Two hosts' PK desks, their messages handed across by hand.
@Suite struct PKDeskTests {
    let clock = ManualClock()
    let a = identity(1), b = identity(2), c = identity(3)
    let roomA = testRoom, roomB = otherRoom
    var wall: UInt64 {
        let t = clock.wallTime()
        return t.seconds * 1000 + UInt64(t.nanoseconds / 1_000_000)
    }

    /// Delivers every message in `actions` addressed to `to`'s host, returning the other actions and what `to` answered.
    func deliver(_ actions: [PKAction], from sender: NodeID, to desk: inout PKDesk, host: NodeID) -> [PKAction] {
        var out: [PKAction] = []
        for case let .send(m, to) in actions where to == host { out += desk.receive(m, from: sender, now: clock.now(), wall: wall) }
        return out
    }

    @Test func askAcceptKeepAliveAndEnd() throws {
        var deskA = PKDesk(room: roomA, me: a), deskB = PKDesk(room: roomB, me: b)
        let ask = try deskA.ask(roomB, host: b.nodeID, minutes: 5, title: "t", theirTitle: "u", pk: 42, now: clock.now(), wall: wall)
        #expect(deliver(ask, from: a.nodeID, to: &deskB, host: b.nodeID) == [.output(.requested(room: roomA, host: a.nodeID, minutes: 5, title: "t"))])
        let accept = try deskB.accept(now: clock.now(), wall: wall)
        let startedA = deliver(accept, from: b.nodeID, to: &deskA, host: a.nodeID)
        guard case .output(.started(roomB, _, 5, let endsA))? = startedA.first, case .battle = deskB.phase else {
            Issue.record("\(startedA) \(deskB.phase)"); return
        }
        #expect(endsA == clock.now() + .seconds(300))
        // Ten seconds of keepalives both ways: nobody falls silent.
        for _ in 0..<100 {
            clock.advance(by: .milliseconds(100))
            _ = deliver(deskA.tick(now: clock.now(), wall: wall), from: a.nodeID, to: &deskB, host: b.nodeID)
            _ = deliver(deskB.tick(now: clock.now(), wall: wall), from: b.nodeID, to: &deskA, host: a.nodeID)
        }
        guard case .battle = deskA.phase, case .battle = deskB.phase else { Issue.record("\(deskA.phase) \(deskB.phase)"); return }
        let end = try deskA.end(now: clock.now(), wall: wall)
        #expect(end.contains(.output(.ended(room: roomB, why: .byUs))))
        #expect(deliver(end, from: a.nodeID, to: &deskB, host: b.nodeID) == [.output(.ended(room: roomA, why: .byThem(.ended)))])
        #expect(deskA.phase == .idle && deskB.phase == .idle && deskA.refused == 0 && deskB.refused == 0)
    }

    @Test func aRejectionCarriesItsReasonAndABusyHostSaysNoAtOnce() throws {
        var deskA = PKDesk(room: roomA, me: a), deskB = PKDesk(room: roomB, me: b)
        _ = deliver(try deskA.ask(roomB, host: b.nodeID, minutes: 3, title: "t", theirTitle: "u", pk: 1, now: clock.now(), wall: wall), from: a.nodeID, to: &deskB, host: b.nodeID)
        #expect(deliver(try deskB.reject(reason: "on a break", now: clock.now(), wall: wall), from: b.nodeID, to: &deskA, host: a.nodeID)
                == [.output(.rejected(room: roomB, reason: "on a break"))])
        #expect(throws: PKError.nothingToAnswer) { _ = try deskB.accept(now: clock.now(), wall: wall) }
        // B asks C; A's request meanwhile gets "busy".
        _ = try deskB.ask(otherRoomC, host: c.nodeID, minutes: 2, title: "t", theirTitle: "u", pk: 7, now: clock.now(), wall: wall)
        let busy = deliver(try deskA.ask(roomB, host: b.nodeID, minutes: 3, title: "t", theirTitle: "u", pk: 2, now: clock.now(), wall: wall), from: a.nodeID, to: &deskB, host: b.nodeID)
        #expect(deliver(busy, from: b.nodeID, to: &deskA, host: a.nodeID) == [.output(.rejected(room: roomB, reason: "busy"))])
        #expect(throws: PKError.busy) { _ = try deskB.ask(roomA, host: a.nodeID, minutes: 2, title: "t", theirTitle: "u", pk: 8, now: clock.now(), wall: wall) }
        #expect(throws: PKError.ownRoom) { _ = try deskA.ask(roomA, host: a.nodeID, minutes: 2, title: "t", theirTitle: "u", pk: 9, now: clock.now(), wall: wall) }
        #expect(throws: PKError.badMinutes) { _ = try deskA.ask(roomB, host: b.nodeID, minutes: 61, title: "t", theirTitle: "u", pk: 9, now: clock.now(), wall: wall) }
    }

    @Test func forgedReplayedStaleAndOutOfTurnMessagesAreRefusedAndCounted() throws {
        var deskB = PKDesk(room: roomB, me: b)
        let request = PKMessage(from: roomA, to: roomB, pk: 5, sent: wall, body: .request(minutes: 5, title: ""), sender: a)
        // Signed by another than the session's peer.
        #expect(deskB.receive(request, from: c.nodeID, now: clock.now(), wall: wall).first == .output(.refused("PK message not signed by its sender")))
        // For another room, or stale by more than 30 s.
        let elsewhere = PKMessage(from: roomA, to: roomA, pk: 6, sent: wall, body: .request(minutes: 5, title: ""), sender: a)
        #expect(deskB.receive(elsewhere, from: a.nodeID, now: clock.now(), wall: wall) == [.output(.refused("PK message for another room"))])
        let old = PKMessage(from: roomA, to: roomB, pk: 7, sent: wall - 31_000, body: .request(minutes: 5, title: ""), sender: a)
        if case .output(.refused(let why))? = deskB.receive(old, from: a.nodeID, now: clock.now(), wall: wall).first { #expect(why.hasPrefix("stale")) } else { Issue.record("stale accepted") }
        // An answer nobody asked for.
        let answer = PKMessage(from: roomA, to: roomB, pk: 5, sent: wall, body: .answer(accepted: true, reason: ""), sender: a)
        #expect(deskB.receive(answer, from: a.nodeID, now: clock.now(), wall: wall) == [.output(.refused("PK message out of turn"))])
        // The real request, then the same bytes again after B said no.
        #expect(deskB.receive(request, from: a.nodeID, now: clock.now(), wall: wall) == [.output(.requested(room: roomA, host: a.nodeID, minutes: 5, title: ""))])
        _ = try deskB.reject(reason: "", now: clock.now(), wall: wall)
        #expect(deskB.receive(request, from: a.nodeID, now: clock.now(), wall: wall) == [.output(.refused("replayed PK request"))])
        #expect(deskB.phase == .idle && deskB.refused == 5)
    }

    @Test func aSilentHostEndsThePKWithinThreeSecondsAndTimeRunsOut() throws {
        var deskA = PKDesk(room: roomA, me: a), deskB = PKDesk(room: roomB, me: b)
        _ = deliver(try deskA.ask(roomB, host: b.nodeID, minutes: 1, title: "t", theirTitle: "u", pk: 11, now: clock.now(), wall: wall), from: a.nodeID, to: &deskB, host: b.nodeID)
        _ = deliver(try deskB.accept(now: clock.now(), wall: wall), from: b.nodeID, to: &deskA, host: a.nodeID)
        // B dies: A hears nothing more.
        var ended: Duration?
        let start = clock.now()
        for _ in 0..<40 {
            clock.advance(by: .milliseconds(100))
            if deskA.tick(now: clock.now(), wall: wall).contains(.output(.ended(room: roomB, why: .silent))) { ended = clock.now() - start; break }
        }
        #expect(ended.map { $0 >= .seconds(3) && $0 <= .milliseconds(3100) } == true, "\(String(describing: ended))")
        // A one-minute PK between live hosts ends when its time is up, on both sides.
        deskA = PKDesk(room: roomA, me: a)
        deskB = PKDesk(room: roomB, me: b)
        _ = deliver(try deskA.ask(roomB, host: b.nodeID, minutes: 1, title: "t", theirTitle: "u", pk: 12, now: clock.now(), wall: wall), from: a.nodeID, to: &deskB, host: b.nodeID)
        _ = deliver(try deskB.accept(now: clock.now(), wall: wall), from: b.nodeID, to: &deskA, host: a.nodeID)
        var outputsB: [PKAction] = []
        for _ in 0..<605 {
            clock.advance(by: .milliseconds(100))
            outputsB += deliver(deskA.tick(now: clock.now(), wall: wall), from: a.nodeID, to: &deskB, host: b.nodeID)
            _ = deliver(deskB.tick(now: clock.now(), wall: wall), from: b.nodeID, to: &deskA, host: a.nodeID)
        }
        // Whichever side's time ran out first, both ended, and the end crossing the other's is no misbehaviour.
        #expect(deskA.phase == .idle && deskB.phase == .idle)
        #expect(deskA.refused == 0 && deskB.refused == 0)
        #expect(!outputsB.contains { if case .output(.refused) = $0 { true } else { false } })
    }
}

let otherRoomC = (try? RoomID(bytes: Array(201...216)))!  // invariant: 16 bytes

/// Two hosts on the virtual network: the PK's signalling over their session.
@Suite struct PKScenarioTests {
    @Test func twoHostsAgreeOnAPKAndAKilledHostEndsItInTheOtherRoomWithinThreeSeconds() throws {
        let net = VirtualNetwork(seed: 301, defaultImpairment: Impairment(loss: 0.05, delay: .milliseconds(10), jitter: .milliseconds(5)))
        let nodes = net.makeNodes(3, seed: 301)
        let random = SeededRandom(seed: 302)
        func host(_ n: SimulatedNode, _ title: String) -> RoomSim {
            let policy = AdmissionPolicy(room: RoomID.random(random), host: n.core.identity, mode: .open, clock: net.clock)
            return RoomSim(n, RoomNode(hosting: policy, core: n.core, clock: net.clock, random: random, info: RoomInfo(title: title)), network: net)
        }
        let a = host(nodes[0], "left"), b = host(nodes[1], "right"), stranger = host(nodes[2], "elsewhere")
        // A viewer in each room.
        let viewerNodes = net.makeNodes(2, seed: 303)
        let viewers = zip(viewerNodes, [a, b]).map { n, h in
            n.core.connect(to: h.sim.address, expecting: h.id)
            return RoomSim(n, RoomNode(joining: h.room.room, host: h.id, proof: .none, core: n.core, clock: net.clock, random: random), network: net)
        }
        func pk(_ s: RoomSim) -> [PKOutput] { s.outputs.compactMap { if case .feature(let o as PKOutput) = $0 { o } else { nil } } }
        a.sim.core.connect(to: b.sim.address, expecting: b.id)
        #expect(net.run(until: { a.sim.established(with: b.sim) && a.room.isAdmitted && b.room.isAdmitted && viewers.allSatisfy(\.room.isAdmitted) },
                        timeout: .seconds(10)))

        try a.room.askPK(b.room.room, host: b.id, minutes: 2, theirTitle: "right")
        #expect(net.run(until: { !pk(b).isEmpty }, timeout: .seconds(5)))
        #expect(pk(b).first == .requested(room: a.room.room, host: a.id, minutes: 2, title: "left"))
        try b.room.acceptPK()
        #expect(net.run(until: { pk(a).contains { if case .started = $0 { true } else { false } } }, timeout: .seconds(5)))
        #expect(a.room.pkPartner == b.id && b.room.pkPartner == a.id)
        // Each viewer sees its host's battle against the other room, titled.
        #expect(net.run(until: { viewers.allSatisfy { $0.room.state?.pkBattle != nil } }, timeout: .seconds(5)))
        #expect(viewers[0].room.state?.pkBattle?.otherRoom == b.room.room && viewers[0].room.state?.pkBattle?.title == "right")
        #expect(viewers[1].room.state?.pkBattle?.otherHost == a.id && viewers[1].room.state?.pkBattle?.title == "left")
        // A's viewer likes 7 times and sends a heart (10): A's side scores 17, and B's room shows it as the other side's, proven.
        try viewers[0].room.like(7)
        try viewers[0].room.gift("heart", count: 1)
        #expect(net.run(until: { viewers[1].room.state?.pkBattle?.theirs == 17 && viewers[0].room.state?.pkBattle?.ours == 17 },
                        timeout: .seconds(10)), "\(String(describing: viewers[1].room.state?.pkBattle))")
        let shown = try #require(viewers[1].room.state?.pkBattle)
        #expect(shown.ours == 0 && shown.stage == .score && !shown.proof.isEmpty)
        #expect(try PKMessage.parse(shown.proof[...]).isSigned(by: a.id))
        // A's room's battle names its top giver in the battle: the heart's 10 points.
        #expect(viewers[0].room.state?.pkBattle?.top == [GiftRank.Entry(member: viewers[0].id, points: 10)])
        // Keepalives over a lossy link for ten seconds: still in the PK on both sides.
        net.run(for: .seconds(10))
        guard case .battle = a.room.pkPhase, case .battle = b.room.pkPhase else { Issue.record("\(a.room.pkPhase) \(b.room.pkPhase)"); return }

        // A third host ending a PK it is not in (its own signature, another PK id) is refused and counted.
        stranger.sim.core.connect(to: b.sim.address, expecting: b.id)
        #expect(net.run(until: { stranger.sim.established(with: b.sim) }, timeout: .seconds(5)))
        let t = net.clock.wallTime()
        let forged = PKMessage(from: a.room.room, to: b.room.room, pk: 99, sent: t.seconds * 1000 + UInt64(t.nanoseconds / 1_000_000),
                               body: .end(.ended), sender: stranger.sim.core.identity)
        try stranger.sim.core.send(RoomMessage.pk(forged).encoded, channel: .room, to: b.id)
        net.run(for: .seconds(1))
        #expect(b.room.pkRefused == 1)
        guard case .battle = b.room.pkPhase else { Issue.record("a forged end ended the PK"); return }

        // A is killed: B ends the PK within 3 s (plus a tick).
        let killed = net.clock.now()
        a.crash()
        #expect(net.run(until: { pk(b).contains(.ended(room: a.room.room, why: .silent)) }, timeout: .seconds(5)))
        #expect(net.clock.now() - killed <= .milliseconds(3200))
        #expect(b.room.pkPhase == .idle && b.room.pkPartner == nil)
        // B's viewer hears it is over, lost 0 : 17, the other host silent.
        #expect(net.run(until: { viewers[1].room.state?.pkBattle?.stage == .over }, timeout: .seconds(3)))
        let over = try #require(viewers[1].room.state?.pkBattle)
        #expect(over.ending == .otherSilent && over.ours == 0 && over.theirs == 17 && over.lead == -1)
    }
}
