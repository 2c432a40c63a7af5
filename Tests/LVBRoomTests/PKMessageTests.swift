import LVBCore
import LVBCrypto
import LVBGossip
@testable import LVBRoom
import LVBTestSupport
import Testing

/// PK signalling messages between two hosts: one layout each, signed by
/// the sender over everything before the signature.
@Suite struct PKMessageTests {
    let hostA = identity(1)
    let hostB = identity(2)
    let roomA = testRoom
    let roomB = otherRoom

    @Test func everyTypeRoundTripsAndIsSignedByItsSenderOnly() throws {
        let bodies: [PKMessage.Body] = [.request(minutes: 5, title: "duel"), .request(minutes: 1, title: ""), .answer(accepted: true, reason: ""), .answer(accepted: false, reason: "on a break"),
                                        .end(.ended), .end(.timeUp), .end(.roomClosed), .alive(score: 0), .alive(score: 123_456)]
        for (i, body) in bodies.enumerated() {
            let m = PKMessage(from: roomA, to: roomB, pk: 0xABCD_0000 + UInt64(i), sent: 1_800_000_000_000, body: body, sender: hostA)
            let parsed = try PKMessage.parse(m.encoded[...])
            #expect(parsed == m)
            #expect(parsed.isSigned(by: hostA.nodeID) && !parsed.isSigned(by: hostB.nodeID))
            #expect(m.encoded.first == [16, 16, 17, 17, 18, 18, 18, 19, 19][i])
            // Any byte changed breaks the signature (or the layout).
            for at in [0, 1, 17, 33, 41, 49, m.encoded.count - 65, m.encoded.count - 1] {
                var bent = m.encoded
                bent[at] ^= 0x01
                if let other = try? PKMessage.parse(bent[...]) { #expect(!other.isSigned(by: hostA.nodeID), "byte \(at) of \(body)") }
            }
        }
    }

    @Test func layoutMistakesAreRefused() throws {
        let m = PKMessage(from: roomA, to: roomB, pk: 7, sent: 1, body: .request(minutes: 10, title: ""), sender: hostA)
        var bytes = m.encoded
        #expect(throws: RoomError.self) { _ = try PKMessage.parse(bytes.dropLast()) }
        #expect(throws: RoomError.self) { _ = try PKMessage.parse(bytes.prefix(60)) }
        bytes.insert(0, at: bytes.count - 64)
        #expect(throws: RoomError.self) { _ = try PKMessage.parse(bytes[...]) }
        // Minutes outside 1...60, a verdict or an end reason that means nothing.
        for (type, value) in [(UInt8(16), UInt8(0)), (16, 61), (17, 3), (18, 0), (18, 9)] {
            var raw = m.encoded
            raw[0] = type
            raw[49] = value
            #expect(throws: RoomError.self) { _ = try PKMessage.parse(raw[...]) }
        }
        // A reason is cut to 200 bytes when signed, and a longer one is refused when read.
        let long = PKMessage(from: roomA, to: roomB, pk: 7, sent: 1, body: .answer(accepted: false, reason: String(repeating: "é", count: 150)), sender: hostB)
        guard case let .answer(_, reason) = long.body else { Issue.record("\(long.body)"); return }
        #expect(reason.utf8.count == 200)
        #expect(try PKMessage.parse(long.encoded[...]).body == long.body)
    }
}
