import LVBCore
import LVBCrypto
import LVBGossip
import LVBRoom
import LVBTestSupport
import TestAssertions
import Testing
@testable import LVBRendezvous

private func identity(_ n: UInt8) -> Identity {
    (try? Identity(seed: [UInt8](repeating: n, count: 32)))!  // invariant: any 32-byte seed is a key
}

private func room(_ n: UInt8) -> RoomID { (try? RoomID(bytes: [UInt8](repeating: n, count: 16)))! }  // invariant: 16 bytes

/// A signed announcement of room `n` by host `n`, at the clock's wall time.
private func announce(_ n: UInt8, clock: ManualClock, seq: UInt64? = nil, viewers: UInt32 = 0, started: UInt64 = 1,
                      closed: Bool = false, by signer: Identity? = nil) throws -> RoomAnnouncement {
    let host = identity(n)
    let wall = clock.wallTime()
    var a = RoomAnnouncement(room: room(n), host: host.nodeID, seq: seq ?? wall.seconds * 1_000_000 + UInt64(wall.nanoseconds / 1000),
                             time: wall.milliseconds, closed: closed, viewers: viewers, likes: 7,
                             info: RoomInfo(title: "room \(n)", location: "Lisboa", startedAt: started), hostNickname: "host\(n)",
                             addresses: [.ipv4(192, 0, 2, n, port: 7400), try PeerAddress(parsing: "[2001:db8::\(n)]:7400")])
    if let signer {
        // Sign as someone else while claiming `host`: a forgery.
        var forged = a
        forged.host = signer.nodeID
        try forged.sign(with: signer)
        var bytes = forged.encoded
        bytes.replaceSubrange(17..<49, with: host.nodeID.publicKey)
        return try RoomAnnouncement.parse(bytes[...])
    }
    try a.sign(with: host)
    return a
}

@Suite("Room registry: signed announcements, soft state, the room list")
struct RegistryTests {
    @Test func anAnnouncementRoundTripsAndAnyChangedByteBreaksItsSignature() throws {
        let clock = ManualClock()
        let a = try announce(3, clock: clock, viewers: 12)
        let bytes = a.encoded
        #expect(try RoomAnnouncement.parse(bytes[...]) == a)
        for i in stride(from: 1, to: bytes.count, by: 7) {
            var tampered = bytes
            tampered[i] ^= 0x01
            #expect(throws: AnnouncementError.self) { try RoomAnnouncement.parse(tampered[...]) }
        }
        expectError(.truncated) { () throws(AnnouncementError) in try RoomAnnouncement.parse(bytes.dropLast(1)) }
        expectError(.trailingBytes) { () throws(AnnouncementError) in try RoomAnnouncement.parse((bytes + [0])[...]) }
        // The access bits travel signed; 3 is no access at all.
        var locked = a
        locked.access = 1
        try locked.sign(with: identity(3))
        #expect(try RoomAnnouncement.parse(locked.encoded[...]).access == 1)
        var badAccess = locked.encoded
        badAccess[65] |= 0b110
        expectError(.badValue("flags 6")) { () throws(AnnouncementError) in try RoomAnnouncement.parse(badAccess[...]) }
        var other = a
        expectError(.notTheHost) { () throws(AnnouncementError) in try other.sign(with: identity(4)) }
        other.info.title = String(repeating: "x", count: 101)
        expectError(.badValue("title is too long: at most 100 UTF-8 bytes")) { () throws(AnnouncementError) in try other.sign(with: identity(3)) }
    }

    @Test func aForgedAnnouncementIsRefused() throws {
        #expect(throws: AnnouncementError.badSignature) { try announce(5, clock: ManualClock(), by: identity(9)) }
    }

    @Test func roomsAreListedRefreshedExpiredAndClosed() throws {
        let clock = ManualClock()
        let registry = RoomRegistry(clock: clock)
        #expect(registry.apply(try announce(1, clock: clock)) == .listed)
        clock.advance(by: RendezvousConstants.announceInterval)
        #expect(registry.apply(try announce(1, clock: clock)) == .refreshed)
        // The host stops announcing: gone one TTL after its last word.
        clock.advance(by: RendezvousConstants.announceTTL - .seconds(1))
        #expect(registry.page(0).total == 1)
        clock.advance(by: .seconds(1))
        #expect(registry.page(0).total == 0)
        // A closed room leaves at once, and its last live announcement cannot bring it back.
        let live = try announce(2, clock: clock)
        #expect(registry.apply(live) == .listed)
        clock.advance(by: .seconds(1))
        #expect(registry.apply(try announce(2, clock: clock, closed: true)) == .closed)
        #expect(registry.page(0).total == 0)
        #expect(registry.apply(live) == .refused(.replayed))
    }

    @Test func staleReplayedAndHijackingAnnouncementsAreRefused() throws {
        let clock = ManualClock()
        let registry = RoomRegistry(clock: clock)
        let first = try announce(1, clock: clock)
        #expect(registry.apply(first) == .listed)
        #expect(registry.apply(first) == .refused(.replayed))
        let older = try announce(1, clock: clock, seq: first.seq - 1)
        #expect(registry.apply(older) == .refused(.replayed))
        // Signed two minutes ago, replayed now.
        let old = try announce(6, clock: clock)
        clock.advance(by: .seconds(120))
        #expect(registry.apply(old) == .refused(.stale))
        // Another host announcing the same (public) room id, after the
        // room lapsed: still its first host's.
        #expect(registry.page(0).total == 0)
        var hijack = RoomAnnouncement(room: room(1), host: identity(8).nodeID, seq: .max, time: clock.wallTime().milliseconds)
        try hijack.sign(with: identity(8))
        #expect(registry.apply(hijack) == .refused(.otherHost))
        #expect(registry.apply(try announce(1, clock: clock)) == .listed)
        #expect(registry.refused == 4)
    }

    @Test func pagesHoldTwentyRoomsMostViewersFirstThenNewest() throws {
        let clock = ManualClock()
        let registry = RoomRegistry(clock: clock)
        for n in UInt8(1)...45 {
            #expect(registry.apply(try announce(n, clock: clock, viewers: UInt32(n % 5), started: UInt64(n))) == .listed)
        }
        let pages = (0..<4).map { registry.page($0) }
        #expect(pages.map(\.rooms.count) == [20, 20, 5, 0])
        #expect(pages.allSatisfy { $0.total == 45 })
        let all = pages.flatMap(\.rooms)
        #expect(Set(all.map(\.room)).count == 45)
        for (a, b) in zip(all, all.dropFirst()) {
            #expect(a.viewers > b.viewers || (a.viewers == b.viewers && (a.info.startedAt ?? 0) > (b.info.startedAt ?? 0)))
        }
        #expect(registry.page(-1).rooms.isEmpty)
    }
}
