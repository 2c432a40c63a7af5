import LVBCore
import LVBCrypto
import LVBGossip
@testable import LVBRoom
import LVBTestSupport
import Testing

@Suite struct PresenceCountTests {
    private let host = identity(1).nodeID, a = identity(2).nodeID, b = identity(3).nodeID, c = identity(4).nodeID
    private let t0 = Instant(nanoseconds: 1_000_000_000)

    private func r(_ hops: UInt8, up: Bool = false, _ subtree: UInt32 = 0, round: UInt16 = 1) -> PresenceCount.Report {
        .init(hops: hops, upstream: up, subtree: subtree, round: round)
    }

    @Test func theHostCountsWhatItsChildrenSpeakFor() {
        var h = PresenceCount(me: host, isHost: true)
        h.startRound(now: t0)
        h.received(r(1, up: true, 5), from: a, now: t0)
        h.received(r(1, up: true, 3), from: b, now: t0)
        // A neighbour that counts itself below someone else adds nothing here.
        h.received(r(1), from: c, now: t0)
        #expect(h.subtree(now: t0) == 9)
        #expect(h.hops == 0)
        #expect(h.report(for: a, now: t0) == r(0))
    }

    @Test func aMemberChoosesTheNeighbourNearestTheHostAndKeepsItOnATie() {
        var m = PresenceCount(me: a, isHost: false)
        #expect(m.hops == PresenceCount.unreachable)
        #expect(m.report(for: b, now: t0) == r(PresenceCount.unreachable, round: 0))
        m.received(r(2), from: b, now: t0)
        #expect(m.upstream == b)
        #expect(m.hops == 3)
        m.received(r(0), from: host, now: t0)
        #expect(m.upstream == host)
        #expect(m.hops == 1)
        m.received(r(2, up: true, 4), from: c, now: t0)
        #expect(m.report(for: host, now: t0) == r(1, up: true, 5))
        // c counts itself below us: never our route, however near it says it is.
        m.received(r(0, up: true, 4), from: c, now: t0)
        m.forget(host, now: t0)
        #expect(m.upstream == b)
        m.received(r(0), from: host, now: t0)
        #expect(m.report(for: b, now: t0).subtree == 0)
        // b comes as near as the host: the host stays upstream.
        m.received(r(0), from: b, now: t0)
        #expect(m.upstream == host)
    }

    @Test func staleReportsAndLoopsCountForNothing() {
        var m = PresenceCount(me: a, isHost: false)
        m.received(r(0), from: host, now: t0)
        // b says it is below us but no further from the host: a stale loop.
        m.received(r(1, up: true, 7), from: b, now: t0)
        #expect(m.subtree(now: t0) == 1)
        m.received(r(2, up: true, 7), from: c, now: t0)
        #expect(m.subtree(now: t0) == 8)
        m.expire(now: t0 + PresenceCount.staleAfter)
        #expect(m.subtree(now: t0 + PresenceCount.staleAfter) == 1)
        #expect(m.upstream == nil)
        #expect(m.hops == PresenceCount.unreachable)
    }

    /// A route that stops bringing the host's rounds (its node died, or it
    /// runs in a loop) is left within two rounds and `roundGrace`, for one
    /// that brings them, however many more hops that takes (one report lost
    /// costs nothing); a child whose route falls behind stops counting as soon.
    @Test func aRouteThatFallsBehindTheRoundsIsLeftWithinTwoRounds() {
        var m = PresenceCount(me: a, isHost: false)
        m.received(r(0, round: 5), from: host, now: t0)
        m.received(r(3, round: 5), from: b, now: t0)
        m.received(r(2, up: true, 4, round: 5), from: c, now: t0)
        #expect(m.upstream == host && m.subtree(now: t0) == 5)
        // Round 6 comes through b only (the host's copy was lost): the host keeps its place.
        let round = RoomConstants.countReportInterval
        m.received(r(3, round: 6), from: b, now: t0 + round)
        m.expire(now: t0 + round + PresenceCount.roundGrace)
        #expect(m.upstream == host && m.hops == 1 && m.round == 5)
        // Round 7 too: the host keeps its place for the grace, then b it is.
        let t2 = t0 + round * 2
        m.received(r(3, round: 7), from: b, now: t2)
        m.expire(now: t2 + PresenceCount.roundGrace / 2)
        #expect(m.upstream == host)
        m.expire(now: t2 + PresenceCount.roundGrace)
        #expect(m.upstream == b && m.hops == 4 && m.round == 7)
        // c hangs below us still (its report said 2 hops, no further than our 4 now): it counts once it says 5.
        #expect(m.subtree(now: t2 + PresenceCount.roundGrace) == 1)
        m.received(r(5, up: true, 4, round: 7), from: c, now: t2 + PresenceCount.roundGrace)
        #expect(m.report(for: b, now: t2 + PresenceCount.roundGrace) == r(4, up: true, 5, round: 7))
        // No new round for `staleAfter` from anyone: no route (a loop cut off
        // from the host keeps reporting the round it had).
        let t3 = t2 + PresenceCount.staleAfter
        m.received(r(3, round: 7), from: b, now: t3)
        #expect(m.upstream == nil && m.hops == PresenceCount.unreachable)
        // The host's clock went back: another round, taken once nothing newer came for `staleAfter`.
        m.received(r(0, round: 2), from: host, now: t3 + .milliseconds(10))
        #expect(m.upstream == host && m.round == 2)
    }

    /// A child whose route falls two rounds behind the host's (it died)
    /// stops counting `roundGrace` after the host starts the second; a live
    /// one whose report was lost once still counts.
    @Test func aChildBehindTheRoundsStopsCounting() {
        var h = PresenceCount(me: host, isHost: true, firstRound: 40)
        h.startRound(now: t0)
        h.received(r(1, up: true, 5, round: 41), from: a, now: t0)
        h.received(r(1, up: true, 3, round: 41), from: b, now: t0)
        #expect(h.subtree(now: t0) == 9 && h.round == 41)
        let round = RoomConstants.countReportInterval
        h.startRound(now: t0 + round)
        // a's report of round 42 is lost; b's comes.
        h.received(r(1, up: true, 3, round: 42), from: b, now: t0 + round + .milliseconds(20))
        let almost: Duration = round * 2 - .milliseconds(1)
        #expect(h.subtree(now: t0 + almost) == 9)
        h.startRound(now: t0 + round * 2)
        h.received(r(1, up: true, 3, round: 43), from: b, now: t0 + round * 2 + .milliseconds(20))
        #expect(h.subtree(now: t0 + round * 2 + PresenceCount.roundGrace / 2) == 9)
        #expect(h.subtree(now: t0 + round * 2 + PresenceCount.roundGrace) == 4)
    }

    @Test func roundsWrap() {
        #expect(PresenceCount.isNewer(0, than: 65535))
        #expect(PresenceCount.isNewer(7, than: 6) && !PresenceCount.isNewer(6, than: 7) && !PresenceCount.isNewer(6, than: 6))
        var h = PresenceCount(me: host, isHost: true)
        for _ in 0..<65536 { h.startRound(now: t0) }
        #expect(h.round == 0)
    }

    @Test func aReportIsNineBytesAndMalformedOnesAreRefused() throws {
        let bytes = RoomMessage.countReport(r(3, up: true, 70_000, round: 0x1234)).encoded
        #expect(bytes == [12, 3, 1, 0, 1, 0x11, 0x70, 0x12, 0x34])
        #expect(try RoomMessage.parse(bytes[...]) == RoomMessage.countReport(r(3, up: true, 70_000, round: 0x1234)))
        for bad: [UInt8] in [[12, 65, 0, 0, 0, 0, 0, 0, 0], [12, 3, 2, 0, 0, 0, 0, 0, 0], [12, 3, 0, 0, 0, 0, 1, 0, 0],
                             [12, 3, 1, 0, 0, 0, 0, 0], [12, 3, 1, 0, 0, 0, 0, 0, 0, 0], [12, 3, 1, 0, 0, 0, 0]] {
            #expect(throws: RoomError.self) { try RoomMessage.parse(bad[...]) }
        }
    }

    /// 300 viewers on a lossy virtual network: every member's census shows
    /// the exact count within seconds, and again after a tenth of them crash.
    @Test func everyMemberSeesTheRoomsCountAndItFollowsCrashes() {
        let (net, host, viewers) = simRoom(viewers: 300, seed: 2801, loss: 0.02)
        let all = [host] + viewers
        let counted = net.run(until: { all.allSatisfy { $0.room.state?.census?.count == 301 } }, timeout: .seconds(60))
        #expect(counted, "counts: \(Dictionary(grouping: all.map { $0.room.state?.census?.count ?? 0 }, by: { $0 }).mapValues(\.count))")
        // The host knows everyone (its roster: kicks and mutes by name); a
        // member lists the host, itself and the latest joiners only.
        #expect(host.room.state?.known.count == 301)
        #expect(viewers.allSatisfy { ($0.room.state?.members.count ?? 0) <= 2 + Census.maxJoiners })
        let start = net.clock.now()
        for v in viewers.prefix(30) { v.crash() }
        let alive = [host] + viewers.dropFirst(30)
        let recounted = net.run(until: { alive.allSatisfy { $0.room.state?.census?.count == 271 } }, timeout: .seconds(30))
        #expect(recounted, "counts: \(Dictionary(grouping: alive.map { $0.room.state?.census?.count ?? 0 }, by: { $0 }).mapValues(\.count))")
        // Every member has it soon (`Scripts/bench presence` measures the
        // staleness against its 10 s goal).
        let took = net.clock.now() - start
        #expect(took <= .seconds(20), "recounted after \(took)")
    }

    /// Count reports are authenticated hop by hop but not signed: a member
    /// claiming a subtree it does not have cannot lift the census above the
    /// members whose signed joins the host holds.
    @Test func aMemberClaimingAHugeSubtreeCannotInflateTheCount() {
        let (net, host, viewers) = simRoom(viewers: 5, seed: 2803, loss: 0)
        let all = [host] + viewers
        #expect(net.run(until: { all.allSatisfy { $0.room.state?.census?.count == 6 } }, timeout: .seconds(20)))
        let liar = viewers[0]
        // (It tells the round the host is on, as a member learns it.)
        let lie = { RoomMessage.countReport(.init(hops: 1, upstream: true, subtree: 1_000_000, round: host.room.presenceCount.round)).encoded }
        let lying = net.every(.milliseconds(50)) { try? liar.sim.core.send(lie(), channel: .room, to: host.id) }
        // The most any member counted while the lie went on (censuses go at most every 2 s).
        var most: UInt32 = 0
        for _ in 0..<60 {
            net.run(for: .milliseconds(100))
            most = all.reduce(most) { max($0, $1.room.state?.census?.count ?? 0) }
        }
        lying.cancel()
        #expect(most == 6, "a member counted \(most)")
    }
}
