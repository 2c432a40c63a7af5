import LVBCore
import LVBCrypto
import LVBGossip
@testable import LVBRoom
import LVBTestSupport
import Testing

/// The host's PK battle event: its wire body, the other side's proof that
/// every receiver checks, this side's top givers, and who may send it.
@Suite struct PKBattleTests {
    let clock = ManualClock()
    let host = Author(1)
    let viewer = Author(2)
    let otherHost = identity(3)

    /// The other host's keepalive to this room stating `score` for PK `pk`.
    func proof(_ score: UInt64, pk: UInt64 = 9, to: RoomID = testRoom, from: RoomID = otherRoom, signer: Identity? = nil) -> [UInt8] {
        PKMessage(from: from, to: to, pk: pk, sent: 1_700_000_000_000, body: .alive(score: score), sender: signer ?? otherHost).encoded
    }

    func battle(_ stage: PKBattle.Stage = .score, theirs: UInt64 = 40, proof: [UInt8]? = nil, ending: PKBattle.Ending? = nil,
                top: [GiftRank.Entry] = []) -> PKBattle {
        PKBattle(stage: stage, pk: 9, otherRoom: otherRoom, otherHost: otherHost.nodeID, endsAt: 1_700_000_300_000, ending: ending,
                 ours: 25, theirs: theirs, title: "Night radio", proof: proof ?? self.proof(theirs), top: top)
    }

    @Test func itRoundTripsAndItsProofMustHoldUp() throws {
        let b = battle(top: [GiftRank.Entry(member: viewer.id, points: 20), GiftRank.Entry(member: host.id, points: 5)])
        try b.validate()
        let e = host.event(.pkBattle(b))
        #expect(try RoomEvent.parse(e.encoded[...], kinds: RoomEvents.table).body.as(PKBattle.self) == b)
        // The other side's score without proof, with another host's signature, another PK's or another score's proof: refused.
        for bad in [battle(proof: []), battle(proof: proof(40, signer: identity(4))), battle(proof: proof(40, pk: 8)),
                    battle(proof: proof(41)), battle(proof: proof(40, from: testRoom)), battle(proof: [1, 2, 3]),
                    battle(.over), battle(ending: .timeUp),
                    battle(top: [GiftRank.Entry(member: viewer.id, points: 30)]),
                    battle(top: [GiftRank.Entry(member: viewer.id, points: 1), GiftRank.Entry(member: host.id, points: 2)])] {
            #expect(throws: EventError.self) { try bad.validate() }
        }
        // No score yet: no proof needed.
        try battle(.started, theirs: 0, proof: []).validate()
    }

    @Test func onlyTheHostSendsItAndItsProofMustBeAddressedToThisRoom() {
        let state = RoomState(room: testRoom, host: host.id, clock: clock)
        #expect(state.apply(viewer.event(.pkBattle(battle()))) == .rejected(.notHost(.pkBattle)))
        #expect(state.apply(host.event(.pkBattle(battle(proof: proof(40, to: otherRoom))))) == .rejected(.wrongRoom))
        let running = host.event(.pkBattle(battle()))
        #expect(state.apply(running).changes != nil)
        #expect(state.pkBattle?.theirs == 40)
        // A late joiner gets a running battle, not one that is over.
        #expect(state.retainedEvents().contains(running))
        let over = host.event(.pkBattle(battle(.over, ending: .otherSilent)))
        #expect(state.apply(over).changes != nil)
        #expect(!state.retainedEvents().contains { $0.body.kind == .pkBattle })
        // An older word does not replace a newer one.
        #expect(state.apply(running) == .duplicate)
    }
}
