import LVBCore
import LVBCrypto
import LVBGossip
import LVBTransport
import Testing
@testable import LVBRendezvous

/// The rendezvous channel's messages: every type round-trips, broken
/// layouts are malformed, unknown types are told apart.
@Suite struct RendezvousMessageTests {
    let room = (try? RoomID(bytes: Array(1...16)))!  // invariant: 16 bytes
    let peer = (try? Identity(seed: [UInt8](repeating: 4, count: 32)))!.nodeID  // invariant: 32-byte seed

    @Test func everyTypeRoundTrips() throws {
        let addresses = [PeerAddress.ipv4(203, 0, 113, 9, port: 40001), try PeerAddress(parsing: "[fd00::1]:7400")]
        let messages: [RendezvousMessage] = [
            .announce([1, 2, 3]), .list(request: 7, page: 2),
            .rooms(request: 7, page: 2, total: 41, part: 0, parts: 2, announcements: [[9, 9], [8]]),
            .resolve(request: 8, room: room), .resolved(request: 8, announcement: nil), .resolved(request: 8, announcement: [5]),
            .introduce(request: 9, room: room, addresses: addresses), .introduce(request: 9, room: room, addresses: []),
            .introduction(request: 9, peer: peer, relay: true, addresses: addresses), .introduction(request: 0, peer: peer, relay: false, addresses: []),
            .relay(peer: peer, piece: RelayPiece(id: 3, index: 0, count: 1, bytes: [4, 0, 0, 0, 9])),
            .relayed(peer: peer, piece: RelayPiece(id: 65535, index: 1, count: 2, bytes: [1])),
            .observed(addresses[0]), .observed(addresses[1]),
        ]
        for m in messages { #expect(try RendezvousMessage.parse(m.encoded[...]) == m, "\(m)") }
    }

    @Test func brokenLayoutsAreMalformedAndUnknownTypesAreNot() {
        let good = RendezvousMessage.introduction(request: 1, peer: peer, relay: false, addresses: [.ipv4(10, 0, 0, 1, port: 1)]).encoded
        for cut in [1, 5, 37, 38, good.count - 1] {
            #expect(throws: RendezvousMessageError.malformed) { try RendezvousMessage.parse(good.prefix(cut)) }
        }
        #expect(throws: RendezvousMessageError.malformed) { try RendezvousMessage.parse((good + [0])[...]) }
        // More addresses than the layout allows.
        var many = Array(good.prefix(38))
        many.append(UInt8(RendezvousConstants.maxIntroducedAddresses + 1))
        for _ in 0...RendezvousConstants.maxIntroducedAddresses { many += [4, 10, 0, 0, 1, 0, 1] }
        #expect(throws: RendezvousMessageError.malformed) { try RendezvousMessage.parse(many[...]) }
        // A relay flag that is neither 0 nor 1; a relay message with no datagram.
        var flag = good
        flag[37] = 2
        #expect(throws: RendezvousMessageError.malformed) { try RendezvousMessage.parse(flag[...]) }
        let relay = RendezvousMessage.relay(peer: peer, piece: RelayPiece(id: 1, index: 0, count: 1, bytes: [1])).encoded
        #expect(throws: RendezvousMessageError.malformed) { try RendezvousMessage.parse(relay.dropLast()) }
        for part: UInt8 in [0x00, 0x03, 0x11, 0x22] {  // no pieces, three, index = count, index past count
            var bad = relay
            bad[35] = part
            #expect(throws: RendezvousMessageError.malformed) { try RendezvousMessage.parse(bad[...]) }
        }
        // An address family that is neither 4 nor 6.
        #expect(throws: RendezvousMessageError.malformed) { try RendezvousMessage.parse([8, 5, 1, 2, 3, 4, 0, 1][...]) }
        #expect(throws: RendezvousMessageError.unknownType(99)) { try RendezvousMessage.parse([99, 1][...]) }
    }

    @Test func onlyLocalScopeAddressesAreLocal() throws {
        for text in ["127.0.0.1:1", "10.1.2.3:1", "172.16.0.1:1", "172.31.9.9:1", "192.168.1.1:1", "169.254.3.3:1", "100.64.0.1:1",
                     "[::1]:1", "[fd12::5]:1", "[fe80::1]:1", "[::ffff:192.168.0.9]:1"] {
            #expect(try PeerAddress(parsing: text).isLocalScope, "\(text)")
        }
        for text in ["8.8.8.8:1", "172.32.0.1:1", "192.169.0.1:1", "100.128.0.1:1", "[2001:db8::1]:1", "[::ffff:8.8.8.8]:1"] {
            #expect(try !PeerAddress(parsing: text).isLocalScope, "\(text)")
        }
    }

    @Test func aFullSessionDatagramGoesInTwoPiecesThatFitAndJoinBack() {
        let datagram = (0..<1200).map { UInt8(truncatingIfNeeded: $0) }
        let pieces = RelayPiece.split(datagram, id: 9, maxPayload: 1167)
        #expect(pieces?.count == 2)
        #expect(pieces?.allSatisfy { RelayPiece.header + $0.bytes.count <= 1167 } == true)
        #expect(pieces.map { $0.flatMap(\.bytes) } == datagram)
        #expect(RelayPiece.split([1, 2, 3], id: 1, maxPayload: 1167)?.count == 1)
        #expect(RelayPiece.split(datagram, id: 1, maxPayload: 300) == nil)
    }
}
