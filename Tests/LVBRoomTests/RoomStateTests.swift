import LVBCore
import LVBCrypto
import LVBGossip
@testable import LVBRoom
import LVBTestSupport
import Testing

/// A room as one node sees it: every rule of `RoomState`, driven by signed
/// events on a manual clock.
@Suite struct RoomStateTests {
    let clock = ManualClock()
    let host = Author(1)
    let alice = Author(2)
    let bob = Author(3)

    func makeState() -> RoomState { RoomState(room: testRoom, host: host.id, clock: clock) }

    // MARK: Chat, deduplication, wrong room

    @Test func chatIsLoggedOnceAndOtherRoomsAreRefused() {
        let state = makeState()
        let line = alice.chat("hi all")
        #expect(state.apply(line) == .accepted([.chat(line)]))
        #expect(state.apply(line) == .duplicate)
        let bullet = alice.event(.danmaku(text: "666", color: 0xFF0000, lane: 2))
        #expect(state.apply(bullet) == .accepted([.posted(bullet)]))
        #expect(state.chatLog == [line, bullet])

        let elsewhere = Author(4, room: otherRoom).chat()
        #expect(state.apply(elsewhere) == .rejected(.wrongRoom))
        #expect(RoomState.RoomRejection.wrongRoom.isMisbehaviour)
        #expect(state.chatLog.count == 2)
    }

    @Test func chatLogKeepsTheLast200InArrivalOrder() {
        let state = makeState()
        let lines = (0..<250).map { alice.chat("line \($0)") }
        for line in lines { #expect(state.apply(line, fromHistory: true).changes != nil) }
        #expect(state.chatLog == Array(lines.suffix(RoomConstants.chatHistory)))
    }

    @Test func duplicatesAreCaughtBeyondTheRememberedWindow() {
        let state = makeState()
        let lines = (0..<(RoomConstants.rememberedEventIDs + 100)).map { alice.chat("line \($0)") }
        for line in lines { _ = state.apply(line, fromHistory: true) }
        #expect(state.apply(lines[0]) == .duplicate)
        #expect(state.apply(lines[lines.count - 1]) == .duplicate)
        #expect(state.chatLog.count == RoomConstants.chatHistory)
    }

    // MARK: The host's rights

    @Test func moderationFromANonHostIsRejected() {
        let state = makeState()
        _ = state.apply(bob.join())
        _ = state.apply(bob.chat())
        let forged: [(RoomEvent, EventKind)] = [
            (alice.event(.kick(target: bob.id)), .kick),
            (alice.event(.mute(target: bob.id, muted: true)), .mute),
            (alice.event(.roomInfo(RoomInfo(title: "mine now"))), .roomInfo),
            (alice.event(.roomClosed), .roomClosed),
            (alice.join(role: .host), .join),
            (alice.event(.stage(target: alice.id, onStage: true, reason: 0)), .stage),
        ]
        for (event, kind) in forged {
            #expect(state.apply(event) == .rejected(.notHost(kind)))
        }
        #expect(!state.isKicked(bob.id) && !state.isMuted(bob.id) && !state.isClosed && !state.isOnStage(alice.id))
        #expect(state.info == RoomInfo())
        #expect(state.members.map(\.id) == [bob.id])
        #expect(RoomState.RoomRejection.notHost(.kick).isMisbehaviour)
    }

    // MARK: The media tree

    @Test func relayPositionsAreLatestWinsForPresentMembersAndOnlyTheHostIsTheRoot() {
        let state = makeState()
        for a in [host, alice, bob] { _ = state.apply(a.join(role: a.id == host.id ? .host : .viewer)) }
        let here = [PeerAddress(host: .v4(0x7F00_0001), port: 7400)]
        let root = RelayPosition(parent: nil, depth: 0, slots: 4, children: 1, addresses: here)
        let underHost = RelayPosition(parent: host.id, depth: 1, slots: 4, children: 0, addresses: here)
        #expect(state.apply(host.event(.relay(root))) == .accepted([]))
        let first = alice.event(.relay(underHost))
        #expect(state.apply(first) == .accepted([]))
        // A viewer claiming the root, the host claiming a parent, a node its own parent.
        for forged in [bob.event(.relay(root)), host.event(.relay(underHost)),
                       bob.event(.relay(RelayPosition(parent: bob.id, depth: 1, slots: 0, children: 0, addresses: [])))] {
            #expect(state.apply(forged) == .rejected(.badTreePosition))
        }
        #expect(RoomState.RoomRejection.badTreePosition.isMisbehaviour)
        // Latest wins; an older one is stale.
        let moved = RelayPosition(parent: bob.id, depth: 2, slots: 4, children: 0, addresses: here)
        let second = alice.event(.relay(moved))
        #expect(state.apply(second) == .accepted([]))
        #expect(state.apply(first) == .duplicate)
        #expect(state.tree == [host.id: root, alice.id: moved])
        // Positions travel along the tree (TreeView), not in a joiner's snapshot.
        #expect(!state.retainedEvents().contains { $0.body.kind == RelayPosition.kind })
        // A member that left keeps no place in the tree.
        _ = state.apply(alice.event(.leave(reason: 0)))
        #expect(state.tree.keys.sorted { $0.publicKey.lexicographicallyPrecedes($1.publicKey) } == [host.id])
        #expect(!state.retainedEvents().contains(second))
    }

    @Test func relayPositionsAreRateLimited() {
        let state = makeState()
        _ = state.apply(alice.join())
        let here = [PeerAddress(host: .v4(0x7F00_0001), port: 7400)]
        let verdicts = (0..<(RoomConstants.relayBurst + 1)).map { n in
            state.apply(alice.event(.relay(RelayPosition(parent: host.id, depth: 1, slots: 4, children: UInt8(n % 5), addresses: here))))
        }
        #expect(verdicts.dropLast().allSatisfy { $0 == .accepted([]) })
        #expect(verdicts.last == .rejected(.rateLimited))
    }

    @Test func onlyTheHostJoinsAsHostAndSetsRoomInfo() {
        let state = makeState()
        #expect(state.apply(host.join(role: .host)) == .accepted([.joined(host.id, role: .host)]))
        let info = RoomInfo(title: "Evening stream", startedAt: 1_700_000_000_000)
        let event = host.event(.roomInfo(info))
        #expect(state.apply(event) == .accepted([.posted(event)]))
        #expect(state.info == info)
        #expect(state.members.first?.role == .host)
    }

    @Test func muteAndUnmute() {
        let state = makeState()
        _ = state.apply(alice.join())
        #expect(state.apply(host.event(.mute(target: alice.id, muted: true))) == .accepted([.muted(alice.id, true)]))
        #expect(state.isMuted(alice.id))
        #expect(state.apply(alice.chat()) == .rejected(.authorMuted))
        #expect(state.apply(alice.event(.danmaku(text: "hey", color: 0, lane: 0))) == .rejected(.authorMuted))
        #expect(state.apply(alice.like(3)) == .accepted([.like(author: alice.id, authorTotal: 3, roomTotal: 3)]))
        #expect(state.members.map(\.id) == [alice.id])

        let unmute = host.event(.mute(target: alice.id, muted: false))
        let staleMute = host.event(.mute(target: alice.id, muted: true))
        let unmuteLater = host.event(.mute(target: alice.id, muted: false))
        #expect(state.apply(unmute) == .accepted([.muted(alice.id, false)]))
        let line = alice.chat("thanks")
        #expect(state.apply(line) == .accepted([.chat(line)]))
        // An older mute arriving late does not undo a newer unmute.
        #expect(state.apply(unmuteLater) == .accepted([]))
        #expect(state.apply(staleMute) == .rejected(.stale))
        #expect(!state.isMuted(alice.id))
    }

    @Test func kickRemovesTheMemberAndRefusesItsLaterEvents() {
        let state = makeState()
        _ = state.apply(alice.join())
        _ = state.apply(bob.join())
        let before = alice.chat("before")
        _ = state.apply(before)
        #expect(state.apply(host.event(.kick(target: alice.id))) == .accepted([.kicked(alice.id)]))
        #expect(state.isKicked(alice.id))
        #expect(state.members.map(\.id) == [bob.id])
        #expect(state.chatLog == [before])
        for later in [alice.chat("after"), alice.join(instance: 2), alice.like(1), alice.event(.profile(Profile(nickname: "a")))] {
            #expect(state.apply(later) == .rejected(.authorKicked))
        }
        #expect(!state.noteActivity(from: alice.id).contains(.joined(alice.id, role: .viewer)))
        #expect(state.members.map(\.id) == [bob.id])
        // The host cannot be kicked or muted out of its own room.
        #expect(state.apply(host.event(.kick(target: host.id))) == .accepted([]))
        #expect(!state.isKicked(host.id))
    }

    @Test func closingTheRoomRefusesEverythingAfter() {
        let state = makeState()
        _ = state.apply(alice.join())
        let close = host.event(.roomClosed)
        #expect(state.apply(close) == .accepted([.roomClosed]))
        #expect(state.isClosed)
        #expect(state.apply(close) == .duplicate)
        for later in [alice.chat(), bob.join(), host.chat(), host.event(.roomInfo(RoomInfo(title: "again")))] {
            #expect(state.apply(later) == .rejected(.roomClosed))
        }
        #expect(!RoomState.RoomRejection.roomClosed.isMisbehaviour)
    }

    // MARK: Profiles

    @Test func profilesAreLatestWins() {
        let state = makeState()
        _ = state.apply(alice.join())
        let first = alice.event(.profile(Profile(nickname: "Al")))
        let second = alice.event(.profile(Profile(nickname: "Alice", gender: 1)))
        #expect(state.apply(second) == .accepted([.profile(alice.id, Profile(nickname: "Alice", gender: 1))]))
        #expect(state.apply(first) == .rejected(.stale))
        #expect(state.apply(second) == .duplicate)
        #expect(state.profile(of: alice.id)?.nickname == "Alice")
        #expect(state.members.first?.profile?.nickname == "Alice")
        #expect(state.profile(of: bob.id) == nil)
    }

    // MARK: Likes

    @Test func likesAreAGrowOnlyCounterPerAuthor() {
        let state = makeState()
        #expect(state.apply(alice.like(5)) == .accepted([.like(author: alice.id, authorTotal: 5, roomTotal: 5)]))
        #expect(state.apply(bob.like(2)) == .accepted([.like(author: bob.id, authorTotal: 2, roomTotal: 7)]))
        #expect(state.apply(alice.like(4)) == .duplicate)
        #expect(state.apply(alice.like(5)) == .duplicate)
        #expect(state.apply(alice.like(9)) == .accepted([.like(author: alice.id, authorTotal: 9, roomTotal: 11)]))
        #expect(state.likes(of: alice.id) == 9 && state.likes(of: bob.id) == 2 && state.likeTotal == 11)
        // Hostile totals saturate the room total instead of wrapping it.
        #expect(state.apply(host.like(.max)).changes == [.like(author: host.id, authorTotal: .max, roomTotal: .max)])
        #expect(state.likeTotal == .max)
    }

    @Test func likesConvergeUnderDuplicationAndReordering() {
        let authors = (10..<16).map { Author(UInt8($0)) }
        var events = [RoomEvent]()
        var highest = [NodeID: UInt64]()
        for (i, author) in authors.enumerated() {
            var total: UInt64 = 0
            for _ in 0..<(3 + i) {
                total += UInt64(1 + i)
                events.append(author.like(total))
            }
            highest[author.id] = total
        }
        let expected = highest.values.reduce(0, +)
        var rng = SeededRandom(seed: 42)
        let first = (events + events.prefix(10)).shuffled(using: &rng)
        let second = (events + events + events.suffix(7)).shuffled(using: &rng)

        var totals = [UInt64]()
        for order in [first, second] {
            let state = makeState()
            for e in order {
                _ = state.apply(e)
                clock.advance(by: .milliseconds(250))  // within every author's like rate
            }
            totals.append(state.likeTotal)
            #expect(authors.allSatisfy { state.likes(of: $0.id) == highest[$0.id] })
        }
        #expect(totals == [expected, expected])
    }

    // MARK: Rate limits

    @Test func chatIsLimitedToFivePerSecondWithBurstTen() {
        let state = makeState()
        for i in 0..<RoomConstants.chatBurst {
            let e = i.isMultiple(of: 2) ? alice.chat("\(i)") : alice.event(.danmaku(text: "\(i)", color: 0, lane: 0))
            #expect(state.apply(e).changes != nil)
        }
        let eleventh = alice.chat("11")
        #expect(state.apply(eleventh) == .rejected(.rateLimited))
        #expect(RoomState.RoomRejection.rateLimited.isMisbehaviour)
        // Another author has its own bucket.
        #expect(state.apply(bob.chat()).changes != nil)
        clock.advance(by: .milliseconds(199))
        #expect(state.apply(eleventh) == .rejected(.rateLimited))
        clock.advance(by: .milliseconds(1))
        #expect(state.apply(eleventh) == .accepted([.chat(eleventh)]))
        #expect(state.apply(alice.chat("12")) == .rejected(.rateLimited))
        clock.advance(by: .seconds(2))
        for i in 0..<RoomConstants.chatBurst { #expect(state.apply(alice.chat("again \(i)")).changes != nil) }
        #expect(state.apply(alice.chat("over")) == .rejected(.rateLimited))
    }

    @Test func profileAndLikeEventsHaveTheirOwnBuckets() {
        let state = makeState()
        for n in 0..<RoomConstants.profileBurst {
            #expect(state.apply(alice.event(.profile(Profile(nickname: "n\(n)")))).changes != nil)
        }
        #expect(state.apply(alice.event(.profile(Profile(nickname: "too fast")))) == .rejected(.rateLimited))
        for n in 1...UInt64(RoomConstants.likeEventBurst) { #expect(state.apply(alice.like(n)).changes != nil) }
        #expect(state.apply(alice.like(100)) == .rejected(.rateLimited))
        #expect(state.apply(alice.chat()).changes != nil)  // chat is a separate bucket
        clock.advance(by: .seconds(1))
        #expect(state.apply(alice.event(.profile(Profile(nickname: "later")))).changes != nil)
        #expect(state.apply(alice.like(100)).changes != nil)
    }

    // MARK: Presence

    @Test func joinLeaveAndRejoin() {
        let state = makeState()
        #expect(state.apply(alice.join(instance: 7)) == .accepted([.joined(alice.id, role: .viewer)]))
        #expect(state.members.map(\.instance) == [7])
        #expect(state.apply(alice.event(.leave(reason: 0))) == .accepted([.left(alice.id, reason: 0)]))
        #expect(state.members.isEmpty)
        #expect(state.apply(alice.join(instance: 7)) == .accepted([.joined(alice.id, role: .viewer)]))
        #expect(state.members.map(\.id) == [alice.id])
    }

    @Test func anOlderJoinOrLeaveIsStale() {
        let state = makeState()
        let join = alice.join()
        let leave = alice.event(.leave(reason: 0))
        #expect(state.apply(leave) == .accepted([]))
        #expect(state.apply(join) == .rejected(.stale))
        #expect(state.members.isEmpty)
        #expect(!RoomState.RoomRejection.stale.isMisbehaviour)
    }

    /// The host watches the joiners its census lists: one silent for 30 s
    /// times out; heard from again, it is back without a new join.
    @Test func aListedMemberSilentFor30SecondsTimesOutAtTheHost() {
        let state = makeState()
        state.isHostsView = true
        _ = state.apply(alice.join())
        _ = state.apply(bob.join())
        state.listed = [bob.id, alice.id]
        clock.advance(by: .seconds(20))
        state.noteActivity(from: alice.id)
        clock.advance(by: .seconds(9))
        #expect(state.expirePresence() == [])
        clock.advance(by: .seconds(1))
        #expect(state.expirePresence() == [.left(bob.id, reason: 1)])
        #expect(state.members.map(\.id) == [alice.id])
        clock.advance(by: .seconds(20))
        #expect(state.expirePresence() == [.left(alice.id, reason: 1)])
        #expect(state.members.isEmpty)
        // Heard from again (any event, or traffic): back without a new join.
        let line = bob.chat("back")
        #expect(state.apply(line) == .accepted([.joined(bob.id, role: .viewer), .chat(line)]))
        #expect(state.noteActivity(from: alice.id) == [.joined(alice.id, role: .viewer)])
        #expect(Set(state.members.map(\.id)) == [alice.id, bob.id])
    }

    /// A member's state follows the census: it lists the census's joiners,
    /// drops quietly those newer joiners pushed out, shows as timed out
    /// those the host stopped hearing from, and times out the host itself
    /// when nothing came from it for 30 s.
    @Test func aMembersListFollowsTheCensus() {
        let state = makeState()
        let others = (20..<32).map { Author(UInt8($0)) }
        _ = state.apply(host.join(role: .host))
        for a in [alice, bob] + others { _ = state.apply(a.join()) }
        // Joins of the last 10 s are kept whatever the census (it may predate them).
        clock.advance(by: RoomConstants.censusRefresh)
        let first = Census(count: 15, likes: 0, joiners: [bob.id, alice.id])
        #expect(state.apply(host.event(.census(first))).changes == [.counted(15)])
        // Everyone not listed (nor host) is dropped quietly.
        #expect(Set(state.members.map(\.id)) == [host.id, alice.id, bob.id])
        #expect(state.count == 15)
        // bob gone from a list with room to spare: the host lost it.
        let second = Census(count: 14, likes: 0, joiners: [alice.id])
        #expect(state.apply(host.event(.census(second))).changes == [.left(bob.id, reason: 1), .counted(14)])
        // Ten newer joiners push alice out: no notice.
        let newer = Array(others.prefix(Census.maxJoiners)).map(\.id)
        for a in others.prefix(Census.maxJoiners) { _ = state.apply(a.join(instance: 2)) }
        #expect(state.apply(host.event(.census(Census(count: 24, likes: 0, joiners: newer)))).changes == [.counted(24)])
        #expect(!state.members.contains { $0.id == alice.id })
        // Only the host is watched here.
        clock.advance(by: .seconds(29))
        #expect(state.expirePresence() == [])
        clock.advance(by: .seconds(1))
        #expect(state.expirePresence() == [.left(host.id, reason: 1)])
    }

    @Test func aNewerJoinFromAnotherInstanceIsSignedInElsewhere() {
        let state = makeState()
        let first = alice.join(instance: 111)
        let second = alice.join(instance: 222)
        #expect(state.apply(first) == .accepted([.joined(alice.id, role: .viewer)]))
        #expect(state.apply(second) == .accepted([.signedInElsewhere(alice.id, oldInstance: 111, newInstance: 222)]))
        #expect(state.members.map(\.instance) == [222])
        #expect(state.apply(first) == .duplicate)
        // An older join from the first instance, resent under a new id, stays stale.
        let replaced = RoomState(room: testRoom, host: host.id, clock: clock)
        _ = replaced.apply(second)
        #expect(replaced.apply(first) == .rejected(.stale))
        #expect(replaced.members.map(\.instance) == [222])
    }

    // MARK: History for late joiners

    @Test func retainedEventsAreBoundedAndIdenticalWhateverTheArrivalOrder() {
        let authors = (20..<25).map { Author(UInt8($0)) }
        var events = [RoomEvent]()  // content: converges in any order
        events.append(host.join(role: .host))
        events.append(host.event(.roomInfo(RoomInfo(title: "Live"))))
        for a in authors {
            events.append(a.join())
            events.append(a.event(.profile(Profile(nickname: "n"))))
        }
        for i in 0..<260 {
            let a = authors[i % authors.count]
            // Equal timestamps across authors: the id breaks the tie.
            events.append(a.chat("line \(i)", timestamp: 1_700_000_100_000 + UInt64(i / 2)))
        }
        for (i, a) in authors.enumerated() { events.append(a.like(UInt64(i + 1))) }
        // Moderation refuses what comes after it, so it comes last in every order.
        let moderation = [host.event(.kick(target: authors[1].id)), host.event(.mute(target: authors[0].id, muted: true))]

        var rng = SeededRandom(seed: 7)
        let states: [RoomState] = [events, Array(events.reversed()), events.shuffled(using: &rng)].map { order in
            let state = makeState()
            for e in order + moderation.shuffled(using: &rng) { _ = state.apply(e, fromHistory: true) }
            return state
        }
        let retained: [[RoomEvent]] = states.map { $0.retainedEvents() }
        #expect(retained[0] == retained[1] && retained[1] == retained[2])
        let chats = retained[0].filter { $0.body.kind == .chat }
        #expect(chats.count == RoomConstants.chatHistory)
        #expect(chats.map(\.timestamp).min() == 1_700_000_100_000 + 30)
        let lastKinds: [EventKind] = retained[0].suffix(2).map(\.body.kind)
        #expect(lastKinds == [.kick, .mute])

        // A late joiner fed the history reaches the same state.
        let late = makeState()
        for e in retained[0] { _ = late.apply(e, fromHistory: true) }
        #expect(late.retainedEvents() == retained[0])
        #expect(late.likeTotal == states[0].likeTotal)
        #expect(late.info == states[0].info)
        let lateMembers = Set(late.members.map(\.id)), members = Set(states[0].members.map(\.id))
        #expect(lateMembers == members && members.count == authors.count)
        #expect(late.isMuted(authors[0].id) && late.isKicked(authors[1].id))
    }
}
