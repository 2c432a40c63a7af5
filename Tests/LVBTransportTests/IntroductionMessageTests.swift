import LVBCore
import LVBCrypto
import Testing
@testable import LVBTransport

/// The introduce channel's messages (lvbnode-protocol(7), INTRODUCTIONS):
/// exact layouts, round trips, and the malformed ones each refused.
@Suite struct IntroductionMessageTests {
    static let peer = try! Identity(seed: [UInt8](repeating: 7, count: 32)).nodeID  // invariant: any 32 bytes are a valid seed
    static let lan = PeerAddress.ipv4(192, 168, 1, 2, port: 7400)

    @Test func aRequestHasTheExactLayout() {
        let bytes = IntroductionMessage.request(request: 0x0102_0304, peer: Self.peer, addresses: [Self.lan]).encoded
        #expect(bytes == [1, 1, 2, 3, 4] + Self.peer.publicKey + [1, 4, 192, 168, 1, 2, 0x1C, 0xE8])
    }

    @Test func anIntroductionCarriesTheRelayByte() {
        let bytes = IntroductionMessage.introduction(request: 0, peer: Self.peer, relay: true, addresses: []).encoded
        #expect(bytes == [2, 0, 0, 0, 0] + Self.peer.publicKey + [1, 0])
    }

    @Test func anIntroductionSaysWhetherItsFirstAddressIsSeen() throws {
        let seen = IntroductionMessage.introduction(request: 0, peer: Self.peer, relay: false, seen: true, addresses: [Self.lan]).encoded
        #expect(seen[37] == 4)
        // Nothing to have seen: no flag.
        #expect(IntroductionMessage.introduction(request: 0, peer: Self.peer, relay: true, seen: true, addresses: []).encoded[37] == 1)
        var empty = IntroductionMessage.introduction(request: 0, peer: Self.peer, relay: false, addresses: []).encoded
        empty[37] = 4
        #expect(throws: TransportError.self) { try IntroductionMessage.parse(empty[...]) }
    }

    @Test func aPunchIsARequestOfKind7AndItsIntroductionsCarryFlag8() {
        let bytes = IntroductionMessage.punch(request: 0x0102_0304, peer: Self.peer, addresses: [Self.lan]).encoded
        #expect(bytes == [7, 1, 2, 3, 4] + Self.peer.publicKey + [1, 4, 192, 168, 1, 2, 0x1C, 0xE8])
        let told = IntroductionMessage.introduction(request: 0, peer: Self.peer, relay: false, again: true, stay: true, addresses: [Self.lan])
        #expect(told.encoded[37] == 2 | 8)
        // Staying means something only beside again.
        #expect(IntroductionMessage.introduction(request: 0, peer: Self.peer, relay: false, stay: true, addresses: []).encoded[37] == 0)
    }

    @Test func aBirthdayMessageIsFlagsAndCount() {
        #expect(IntroductionMessage.birthday(step: .offer, count: 256).encoded == [6, 0, 1, 0])
        #expect(IntroductionMessage.birthday(step: .accept, count: 2048).encoded == [6, 1, 8, 0, 0, 0])
        #expect(IntroductionMessage.birthday(step: .accept, count: 2048, port: 7401).encoded == [6, 1, 8, 0, 0x1C, 0xE9])
        #expect(IntroductionMessage.birthday(step: .ready, count: 250).encoded == [6, 4, 0, 250])
    }

    @Test func everyKindRoundTrips() throws {
        let v6 = PeerAddress(host: .v6([0xFD] + [UInt8](repeating: 7, count: 15)), port: 1)
        let messages: [IntroductionMessage] = [
            .request(request: 9, peer: Self.peer, addresses: [Self.lan, v6]),
            .introduction(request: 9, peer: Self.peer, relay: false, addresses: Array(repeating: Self.lan, count: 8)),
            .introduction(request: 0, peer: Self.peer, relay: true, again: true, addresses: [Self.lan]),
            .introduction(request: 3, peer: Self.peer, relay: true, again: true, seen: true, addresses: [Self.lan]),
            .again(request: 7, peer: Self.peer, addresses: [Self.lan, v6]),
            .punch(request: 8, peer: Self.peer, addresses: [Self.lan, v6]),
            .introduction(request: 0, peer: Self.peer, relay: true, again: true, seen: true, stay: true, addresses: [Self.lan]),
            .relay(peer: Self.peer, piece: RelayPiece(id: 513, index: 0, count: 1, bytes: [9, 9])),
            .relayed(peer: Self.peer, piece: RelayPiece(id: 1, index: 1, count: 2, bytes: [1])),
            .birthday(step: .offer, count: 256),
            .birthday(step: .accept, count: 2048),
            .birthday(step: .accept, count: 2048, port: 40000),
            .birthday(step: .decline, count: 0),
            .birthday(step: .busy, count: 0),
            .birthday(step: .ready, count: 255),
        ]
        for m in messages { #expect(try IntroductionMessage.parse(m.encoded[...]) == m) }
    }

    @Test func malformedMessagesAreRefused() {
        let good = IntroductionMessage.introduction(request: 1, peer: Self.peer, relay: true, addresses: [Self.lan]).encoded
        var badRelay = good
        badRelay[37] = 8  // flags: relay 1, again 2, seen 4, stay 8 only with again
        var unknownFlag = good
        unknownFlag[37] = 16
        var tooMany = IntroductionMessage.request(request: 1, peer: Self.peer, addresses: []).encoded
        tooMany[tooMany.count - 1] = 9
        let relay = IntroductionMessage.relay(peer: Self.peer, piece: RelayPiece(id: 1, index: 0, count: 1, bytes: [5])).encoded
        var badPart = relay
        badPart[35] = 0x22  // piece 2 of 2
        let cases: [[UInt8]] = [
            [], [0], [8] + good.dropFirst(),
            [6, 5, 1, 0],  // birthday steps: 0-4
            [6, 0, 0, 0], [6, 2, 0, 1], [6, 3, 1, 0], [6, 4, 0, 0],  // an offer or readiness names spares; refusals nothing
            [6, 0, 1], [6, 0, 1, 0, 0], [6, 1, 8, 0], [6, 1, 8, 0, 0], [6, 1, 8, 0, 0, 0, 0],  // only an acceptance names a port
            good + [0], Array(good.dropLast()), badRelay, tooMany,
            Array(relay.dropLast()),  // an empty piece
            badPart, unknownFlag,
        ]
        for bytes in cases {
            #expect(throws: TransportError.self) { try IntroductionMessage.parse(bytes[...]) }
        }
    }
}
