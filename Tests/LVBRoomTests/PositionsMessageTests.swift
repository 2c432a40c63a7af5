import LVBCore
import LVBCrypto
import LVBGossip
@testable import LVBRoom
import LVBTestSupport
import Testing

/// Room message 15 (lvbnode-protocol(7), ROOM MESSAGES): signed relay
/// positions passed along the media tree, as many as one datagram holds.
@Suite struct PositionsMessageTests {
    let room = testRoom
    let here = [PeerAddress(host: .v4(0x7F00_0001), port: 7400)]

    func event(_ n: UInt8, parent: NodeID) throws -> RoomEvent {
        let me = identity(n)
        return try RoomEvent.make(room: room, author: me, seq: 1, timestamp: 1_000,
                                  body: .relay(RelayPosition(parent: parent, depth: 1, slots: 4, children: 0, addresses: here)))
    }

    @Test func aPositionsMessageIsCountThenLengthPrefixedEvents() throws {
        let host = identity(1).nodeID
        let (a, b) = (try event(2, parent: host), try event(3, parent: host))
        let m = PositionsMessage(events: [a.encoded, b.encoded])
        let length = { (e: RoomEvent) in [UInt8(e.encoded.count >> 8), UInt8(e.encoded.count & 0xFF)] }
        #expect(m.encoded == [15, 2] + length(a) + a.encoded + length(b) + b.encoded)
        #expect(try RoomMessage.parse(m.encoded[...]).as(PositionsMessage.self) == m)
    }

    @Test func aMalformedPositionsMessageIsRefused() throws {
        let e = try event(2, parent: identity(1).nodeID).encoded
        #expect(throws: RoomError.truncated) { try RoomMessage.parse([15][...]) }
        #expect(throws: RoomError.badPositionsCount(0)) { try RoomMessage.parse([15, 0][...]) }
        #expect(throws: RoomError.badPositionsCount(9)) { try RoomMessage.parse([15, 9][...]) }
        #expect(throws: RoomError.truncated) { try RoomMessage.parse(([15, 1, 0, UInt8(e.count + 1)] + e)[...]) }
        #expect(throws: RoomError.trailingBytes) { try RoomMessage.parse(([15, 1, 0, UInt8(e.count)] + e + [0])[...]) }
    }

    /// Forty positions go in messages that each fit the limit, in order, none lost.
    @Test func bundlesFitTheDatagramAndKeepEveryPosition() throws {
        let host = identity(1).nodeID
        let events = try (2...41).map { try event(UInt8($0), parent: host).encoded }
        let limit = 1_100
        let bundles = PositionsMessage.bundles(events, limit: limit)
        #expect(bundles.allSatisfy { $0.encoded.count <= limit && $0.events.count <= PositionsMessage.maxEvents })
        #expect(bundles.flatMap(\.events) == events)
        // Each message but the last is as full as it can be: one more event would not fit.
        for (m, next) in zip(bundles, bundles.dropFirst()) {
            let more = PositionsMessage(events: m.events + [next.events[0]])
            #expect(more.events.count > PositionsMessage.maxEvents || more.encoded.count > limit)
        }
    }
}
