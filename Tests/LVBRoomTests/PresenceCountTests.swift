import LVBCore
import LVBCrypto
import LVBGossip
@testable import LVBRoom
import LVBTestSupport
import Testing

@Suite struct PresenceCountTests {
    private let host = identity(1).nodeID, a = identity(2).nodeID, b = identity(3).nodeID, c = identity(4).nodeID
    private let t0 = Instant(nanoseconds: 1_000_000_000)

    @Test func theHostCountsWhatItsChildrenSpeakFor() {
        var h = PresenceCount(me: host, isHost: true)
        h.received(.init(hops: 1, upstream: true, subtree: 5), from: a, now: t0)
        h.received(.init(hops: 1, upstream: true, subtree: 3), from: b, now: t0)
        // A neighbour that counts itself below someone else adds nothing here.
        h.received(.init(hops: 1, upstream: false, subtree: 0), from: c, now: t0)
        #expect(h.subtree == 9)
        #expect(h.hops == 0)
        #expect(h.report(for: a) == .init(hops: 0, upstream: false, subtree: 0))
    }

    @Test func aMemberChoosesTheNeighbourNearestTheHostAndKeepsItOnATie() {
        var m = PresenceCount(me: a, isHost: false)
        #expect(m.hops == PresenceCount.unreachable)
        #expect(m.report(for: b) == .init(hops: PresenceCount.unreachable, upstream: false, subtree: 0))
        m.received(.init(hops: 2, upstream: false, subtree: 0), from: b, now: t0)
        #expect(m.upstream == b)
        #expect(m.hops == 3)
        m.received(.init(hops: 0, upstream: false, subtree: 0), from: host, now: t0)
        #expect(m.upstream == host)
        #expect(m.hops == 1)
        m.received(.init(hops: 2, upstream: true, subtree: 4), from: c, now: t0)
        #expect(m.report(for: host) == .init(hops: 1, upstream: true, subtree: 5))
        // c counts itself below us: never our route, however near it says it is.
        m.received(.init(hops: 0, upstream: true, subtree: 4), from: c, now: t0)
        m.forget(host, now: t0)
        #expect(m.upstream == b)
        m.received(.init(hops: 0, upstream: false, subtree: 0), from: host, now: t0)
        #expect(m.report(for: b).subtree == 0)
        // b comes as near as the host: the host stays upstream.
        m.received(.init(hops: 0, upstream: false, subtree: 0), from: b, now: t0)
        #expect(m.upstream == host)
    }

    @Test func staleReportsAndLoopsCountForNothing() {
        var m = PresenceCount(me: a, isHost: false)
        m.received(.init(hops: 0, upstream: false, subtree: 0), from: host, now: t0)
        // b says it is below us but no further from the host: a stale loop.
        m.received(.init(hops: 1, upstream: true, subtree: 7), from: b, now: t0)
        #expect(m.subtree == 1)
        m.received(.init(hops: 2, upstream: true, subtree: 7), from: c, now: t0)
        #expect(m.subtree == 8)
        m.expire(now: t0 + PresenceCount.staleAfter)
        #expect(m.subtree == 1)
        #expect(m.upstream == nil)
        #expect(m.hops == PresenceCount.unreachable)
    }

    @Test func aReportIsSevenBytesAndMalformedOnesAreRefused() throws {
        let bytes = RoomMessage.countReport(.init(hops: 3, upstream: true, subtree: 70_000)).encoded
        #expect(bytes == [12, 3, 1, 0, 1, 0x11, 0x70])
        #expect(try RoomMessage.parse(bytes[...]) == RoomMessage.countReport(.init(hops: 3, upstream: true, subtree: 70_000)))
        // The host's report (hops 0) carries the room's count.
        #expect(try RoomMessage.parse([12, 0, 0, 0, 0, 0x27, 0x10][...]) == RoomMessage.countReport(.init(hops: 0, upstream: false, subtree: 10_000)))
        for bad: [UInt8] in [[12, 65, 0, 0, 0, 0, 0], [12, 3, 2, 0, 0, 0, 0], [12, 3, 0, 0, 0, 0, 1], [12, 3, 1, 0, 0, 0], [12, 3, 1, 0, 0, 0, 0, 0]] {
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
        // Every member has it soon (a tenth crashing at once at 2 % loss: 4.5 to 7 s in 10 of 11 runs, 15 s in one;
        // `Scripts/bench presence` measures the staleness against its 10 s goal).
        let took = net.clock.now() - start
        #expect(took <= .seconds(20), "recounted after \(took)")
    }

    /// A count that moved by a hundredth of the room (two members at least)
    /// is news: the host tells it 500 ms after its last census, not 2 s.
    @Test func aCountThatMovedByAHundredthGoesOutSooner() {
        #expect(RoomNode.countMoved(from: 1001, to: 990))
        #expect(!RoomNode.countMoved(from: 1001, to: 992))
        #expect(RoomNode.countMoved(from: 9900, to: 10_001))
        #expect(!RoomNode.countMoved(from: 40, to: 39))
        #expect(RoomNode.countMoved(from: 40, to: 38))
        // Ten of 51 crash: the host's subtree falls in steps as their reports
        // go stale, and each step of 2 % or more goes out within 500 ms (a
        // tick and a gossip hop on top), where it waited for 2 s before.
        let (net, host, viewers) = simRoom(viewers: 50, seed: 2805, loss: 0)
        #expect(net.run(until: { host.room.state?.census?.count == 51 }, timeout: .seconds(30)))
        net.run(for: .seconds(3))
        for v in viewers.suffix(10) { v.crash() }
        var worst = Duration.zero, settled = false
        var movedAt: (count: UInt32, at: Instant)?
        for _ in 0..<300 where !settled {
            net.run(for: .milliseconds(20))
            let counted = min(host.room.countPlace.subtree, 51), told = host.room.state?.census?.count ?? 0
            if counted == told { movedAt = nil; settled = told == 41; continue }
            if movedAt == nil, RoomNode.countMoved(from: told, to: counted) { movedAt = (counted, net.clock.now()) }
            if let movedAt { worst = max(worst, net.clock.now() - movedAt.at) }
        }
        #expect(settled, "the host's census says \(host.room.state?.census?.count ?? 0)")
        #expect(worst <= .milliseconds(560), "a moved count waited \(worst) for its census")
    }

    /// The host's own count report, heard over the session with the host,
    /// says the count as its census does: a member shows it at once and
    /// needs no gossip neighbour for it (at 10,000, the few whose gossip
    /// neighbours all crashed waited seconds for the census). A member's
    /// report claiming hops 0 says nothing; when the host's reports stop,
    /// the census says the count again.
    @Test func aMemberShowsTheCountTheHostReportsToIt() throws {
        let (net, host, viewers) = simRoom(viewers: 8, seed: 2811, loss: 0)
        let all = [host] + viewers
        #expect(net.run(until: { all.allSatisfy { $0.room.state?.census?.count == 9 } }, timeout: .seconds(20)))
        net.run(for: .seconds(2))
        let member = try #require(viewers.first { $0.room.countPlace.hops == 1 && $0.room.presenceCount.heard[host.id] != nil })
        #expect(member.room.state?.count == 9)
        let other = try #require(viewers.first { $0 !== member })
        member.outputs.removeAll()
        let report = { (n: UInt32) in RoomMessage.countReport(.init(hops: 0, upstream: false, subtree: n)).encoded[...] }
        member.room.handle(.message(other.id, .room, report(500)))
        #expect(member.room.state?.count == 9)
        member.room.handle(.message(host.id, .room, report(500)))
        #expect(member.room.state?.count == 500)
        #expect(member.changes.contains { if case .counted(500) = $0 { true } else { false } })
        // The host's next report corrects the count; cut from the host, the census says it again.
        #expect(net.run(until: { member.room.state?.count == 9 }, timeout: .seconds(2)))
        member.room.handle(.message(host.id, .room, report(500)))
        net.cut(member.sim.address, host.sim.address)
        #expect(net.run(until: { member.room.state?.heardCount == nil }, timeout: .seconds(8)))
        // (The host no longer hears the member either: its census may say 8 by now.)
        let census = try #require(member.room.state?.census?.count)
        #expect(member.room.state?.count == Int(census) && census < 500)
    }

    /// Count reports are authenticated hop by hop but not signed: a member
    /// claiming a subtree it does not have cannot lift the census above the
    /// members whose signed joins the host holds.
    @Test func aMemberClaimingAHugeSubtreeCannotInflateTheCount() {
        let (net, host, viewers) = simRoom(viewers: 5, seed: 2803, loss: 0)
        let all = [host] + viewers
        #expect(net.run(until: { all.allSatisfy { $0.room.state?.census?.count == 6 } }, timeout: .seconds(20)))
        let liar = viewers[0]
        let lie = RoomMessage.countReport(.init(hops: 1, upstream: true, subtree: 1_000_000)).encoded
        let lying = net.every(.milliseconds(50)) { try? liar.sim.core.send(lie, channel: .room, to: host.id) }
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
