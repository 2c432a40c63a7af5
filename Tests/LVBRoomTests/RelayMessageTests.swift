import LVBCore
import LVBCrypto
import LVBRoom
import LVBTestSupport
import Testing

/// The media tree's room messages (lvbnode-protocol(7), ROOM MESSAGES 8, 9, 11):
/// each layout byte for byte, and every malformed one refused with its error.
@Suite struct RelayMessageTests {
    private func node(_ n: UInt8) -> NodeID { (try? Identity(seed: [UInt8](repeating: n, count: 32)))!.nodeID }  // invariant: 32-byte seeds derive a key pair

    @Test func fullAndMoveDownAreOneByte() throws {
        #expect(RoomMessage.relay(.full).encoded == [8])
        #expect(RoomMessage.relay(.moveDown).encoded == [9])
        #expect(try RoomMessage.parse([8][...]) == .relay(.full))
        #expect(try RoomMessage.parse([9][...]) == .relay(.moveDown))
        #expect(throws: RoomError.trailingBytes) { try RoomMessage.parse([8, 0][...]) }
    }

    @Test func aRedirectNamesOneToFourChildren() throws {
        let (a, b) = (node(1), node(2))
        let m = RoomMessage.relay(.redirect([a, b]))
        #expect(m.encoded == [11, 2] + a.publicKey + b.publicKey)
        #expect(try RoomMessage.parse(m.encoded[...]) == m)
        let four = (1...4).map { node(UInt8($0)) }
        #expect(try RoomMessage.parse(RoomMessage.relay(.redirect(four)).encoded[...]) == .relay(.redirect(four)))
    }

    @Test func aMalformedRedirectIsRefused() throws {
        let key = node(3).publicKey
        #expect(throws: RoomError.truncated) { try RoomMessage.parse([11][...]) }
        #expect(throws: RoomError.badRedirectCount(0)) { try RoomMessage.parse([11, 0][...]) }
        #expect(throws: RoomError.badRedirectCount(5)) { try RoomMessage.parse(([11, 5] + Array(repeating: key, count: 5).flatMap { $0 })[...]) }
        #expect(throws: RoomError.truncated) { try RoomMessage.parse(([11, 2] + key)[...]) }
        #expect(throws: RoomError.trailingBytes) { try RoomMessage.parse(([11, 1] + key + [0])[...]) }
        // 32 zero bytes are no usable Ed25519 key.
        #expect(throws: RoomError.badNodeID) { try RoomMessage.parse(([11, 1] + [UInt8](repeating: 0, count: 32))[...]) }
    }
}
