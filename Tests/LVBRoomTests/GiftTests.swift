import LVBCore
import LVBCrypto
import LVBGossip
@testable import LVBRoom
import LVBTestSupport
import LVBTransport
import Testing

/// Gifts: signed events from the catalogue, combos, the rate, and the
/// host's rank of givers that late joiners get.
@Suite struct GiftTests {
    let clock = ManualClock()
    let host = Author(1)
    let alice = Author(2)
    let bob = Author(3)

    func gift(_ author: Author, _ name: String, count: UInt16 = 1, combo: UInt32 = 1, comboCount: UInt32? = nil) -> RoomEvent {
        let kind = GiftCatalogue.named(name)!  // invariant: the tests name catalogued gifts
        return author.event(.gift(Gift(gift: kind.id, count: count, combo: combo, comboCount: comboCount ?? UInt32(count))))
    }

    @Test func theCatalogueAndTheWireFormatHoldTheirLimits() throws {
        #expect(GiftCatalogue.all.map(\.name) == ["rose", "heart", "rocket", "crown"])
        #expect(Set(GiftCatalogue.all.map(\.id)).count == GiftCatalogue.all.count && !GiftCatalogue.all.contains { $0.id == 0 })
        let g = Gift(gift: 3, count: 3, combo: 77, comboCount: 9)
        let e = alice.event(.gift(g))
        let parsed = try RoomEvent.parse(e.encoded[...], kinds: RoomEvents.table)
        #expect(parsed.body.as(Gift.self) == g && g.points == 300)
        // Outside the catalogue, no count, a combo count below the event's own: refused.
        for bad in [Gift(gift: 0, count: 1, combo: 1, comboCount: 1), Gift(gift: 99, count: 1, combo: 1, comboCount: 1),
                    Gift(gift: 1, count: 0, combo: 1, comboCount: 1), Gift(gift: 1, count: 100, combo: 1, comboCount: 100),
                    Gift(gift: 1, count: 5, combo: 1, comboCount: 4), Gift(gift: 1, count: 1, combo: 1, comboCount: 10_000)] {
            #expect(throws: EventError.self) { try bad.validate() }
            #expect(throws: (any Error).self) { _ = try RoomEvent.make(room: testRoom, author: alice.identity, seq: 99, timestamp: 1, body: .gift(bad)) }
        }
        let rank = GiftRank(total: 10, top: [GiftRank.Entry(member: alice.id, points: 3), GiftRank.Entry(member: bob.id, points: 7)])
        #expect(throws: EventError.self) { try rank.validate() }  // not ordered
    }

    @Test func giftsAreTalliedWithinTheirRateAndCombosEndWithTheirFinalCount() {
        let state = RoomState(room: testRoom, host: host.id, clock: clock)
        state.isHostsView = true
        let rocket = gift(alice, "rocket", count: 3, combo: 5)
        #expect(state.apply(rocket) == .accepted([.posted(rocket)]))
        #expect(state.apply(rocket) == .duplicate)
        // Bob's roses, a combo of five events.
        for n in 1...5 {
            #expect(state.apply(gift(bob, "rose", combo: 9, comboCount: UInt32(n))).changes != nil)
            clock.advance(by: .milliseconds(300))
        }
        #expect(state.giftPoints(of: alice.id) == 300 && state.giftPoints(of: bob.id) == 5)
        #expect(state.giftRank == GiftRank(total: 305, top: [GiftRank.Entry(member: alice.id, points: 300), GiftRank.Entry(member: bob.id, points: 5)]))
        // Resting: the combo that grew shows its final count once; the single rocket shows nothing more.
        clock.advance(by: RoomConstants.giftComboWindow)
        #expect(state.expirePresence().filter { if case .giftCombo = $0 { true } else { false } }
                == [.giftCombo(author: bob.id, gift: 1, combo: 9, count: 5)])
        #expect(state.expirePresence().isEmpty)
        // The rate: a burst, then one refused until the bucket refills.
        for n in 0..<RoomConstants.giftEventBurst { #expect(state.apply(gift(alice, "heart", combo: 100 + UInt32(n))).changes != nil) }
        #expect(state.apply(gift(alice, "heart", combo: 200)) == .rejected(.rateLimited))
        clock.advance(by: .seconds(1))
        #expect(state.apply(gift(alice, "heart", combo: 201)).changes != nil)
        // A muted member's gifts are refused like its chat.
        #expect(state.apply(host.event(.mute(target: bob.id, muted: true))).changes != nil)
        #expect(state.apply(gift(bob, "crown", combo: 300)) == .rejected(.authorMuted))
    }

    /// Gossip may bring a combo's events out of order (the last one first,
    /// over a shorter path): the combo still ends with its final count.
    @Test func aComboWhoseLastEventCameFirstStillEnds() {
        let state = RoomState(room: testRoom, host: host.id, clock: clock)
        for n in [4, 1, 2, 3] {
            #expect(state.apply(gift(bob, "rose", combo: 9, comboCount: UInt32(n))).changes != nil)
            clock.advance(by: .milliseconds(100))
        }
        clock.advance(by: RoomConstants.giftComboWindow)
        #expect(state.expirePresence().filter { if case .giftCombo = $0 { true } else { false } }
                == [.giftCombo(author: bob.id, gift: 1, combo: 9, count: 4)])
    }

    @Test func theRankIsTheHostsAloneLatestWinsAndInTheSnapshot() {
        let state = RoomState(room: testRoom, host: host.id, clock: clock)
        let forged = alice.event(.giftRank(GiftRank(total: 1000, top: [GiftRank.Entry(member: alice.id, points: 1000)])))
        #expect(state.apply(forged) == .rejected(.notHost(.giftRank)))
        let first = host.event(.giftRank(GiftRank(total: 5, top: [GiftRank.Entry(member: bob.id, points: 5)])))
        let second = host.event(.giftRank(GiftRank(total: 305, top: [GiftRank.Entry(member: alice.id, points: 300), GiftRank.Entry(member: bob.id, points: 5)])))
        #expect(state.apply(second).changes != nil)
        #expect(state.apply(first) == .rejected(.stale))
        #expect(state.giftRank.top.map(\.member) == [alice.id, bob.id])
        #expect(state.retainedEvents().contains(second))
    }

    @Test func aGiftComboReachesEveryoneOnceAndALateJoinerGetsTheRank() throws {
        let (net, host, viewers) = simRoom(viewers: 4, seed: 141, loss: 0.05)
        #expect(net.run(until: { viewers.allSatisfy(\.room.isAdmitted) }, timeout: .seconds(30)))
        net.run(for: .seconds(3))
        try viewers[0].room.gift("rocket", count: 3)
        // Five roses a few hundred ms apart: one combo.
        for _ in 0..<5 {
            try viewers[1].room.gift("rose")
            net.run(for: .milliseconds(400))
        }
        try viewers[2].room.gift("heart", count: 2)
        net.run(for: .seconds(6))
        func gifts(_ n: RoomSim) -> [Gift] {
            n.changes.compactMap { if case .posted(let e) = $0 { e.body.as(Gift.self) } else { nil } }
        }
        for n in [host] + viewers {
            let seen = gifts(n)
            #expect(seen.filter { $0.gift == 3 }.map(\.count) == [3], "the rocket once, as three")
            #expect(seen.filter { $0.gift == 1 }.map(\.comboCount) == [1, 2, 3, 4, 5], "the roses, one combo")
            #expect(Set(seen.filter { $0.gift == 1 }.map(\.combo)).count == 1)
            let ended = n.changes.filter { if case .giftCombo = $0 { true } else { false } }
            #expect(ended == [.giftCombo(author: viewers[1].id, gift: 1, combo: seen.first { $0.gift == 1 }?.combo ?? 0, count: 5)])
            #expect(n.room.state?.giftRank.top.map(\.member) == [viewers[0].id, viewers[2].id, viewers[1].id])
            #expect(n.room.state?.giftRank.top.map(\.points) == [300, 20, 5])
        }
        // A late joiner: the host's rank comes with its snapshot.
        let late = net.makeNodes(1, seed: 1410)[0]
        let lateRoom = RoomNode(joining: host.room.room, host: host.id, proof: .none, core: late.core, clock: net.clock, random: SeededRandom(seed: 9))
        late.core.connect(to: host.sim.address, expecting: host.id)
        let lateSim = RoomSim(late, lateRoom, network: net)
        #expect(net.run(until: { lateSim.room.isAdmitted && lateSim.room.state?.giftRank.total == 325 }, timeout: .seconds(20)))
        #expect(lateSim.room.state?.giftRank.top.map(\.member) == [viewers[0].id, viewers[2].id, viewers[1].id])

        // A patched node floods gifts past the rate (its own node would refuse them): the room refuses and
        // counts them, and the rank takes only what passed.
        let flooder = viewers[3]
        let refusedBefore = host.room.rejectedEvents
        for n in 0..<30 {
            flooder.room.seq += 1
            let e = try RoomEvent.make(room: host.room.room, author: flooder.sim.core.identity, seq: flooder.room.seq, timestamp: 1_800_000_000_000,
                                       body: .gift(Gift(gift: 4, count: 99, combo: 5000 + UInt32(n), comboCount: 99)))
            flooder.room.gossip.broadcast(e)
        }
        net.run(for: .seconds(3))
        let passed = host.room.state?.giftPoints(of: flooder.id) ?? 0
        // Refused and counted until the host stops hearing the flooder's gossip at all (its standing).
        #expect(host.room.rejectedEvents - refusedBefore >= 5)
        // At most the bucket's burst plus what it refilled over the 3 s while
        // copies still came in (gossip repairs some of them seconds later).
        let allowed = RoomConstants.giftEventBurst + RoomConstants.giftEventRate * 3
        #expect(passed > 0 && passed <= UInt64(allowed) * 99 * 500, "\(passed / (99 * 500)) events passed, \(allowed) allowed")
    }
}
