import LVBCore
import Testing

@Suite struct HexTests {
    @Test func encodesLowerCase() {
        #expect(Hex.encode([UInt8]()) == "")
        #expect(Hex.encode([0x00, 0x01, 0x7F, 0x80, 0xAB, 0xFF]) == "00017f80abff")
    }

    @Test func decodesEitherCase() throws {
        #expect(try Hex.decode("") == [])
        #expect(try Hex.decode("00017f80abff") == [0x00, 0x01, 0x7F, 0x80, 0xAB, 0xFF])
        #expect(try Hex.decode("00017F80ABFF") == [0x00, 0x01, 0x7F, 0x80, 0xAB, 0xFF])
        #expect(try Hex.decode("aBcD") == [0xAB, 0xCD])
    }

    @Test func everyByteRoundTrips() throws {
        let bytes = (0...255).map { UInt8($0) }
        let text = Hex.encode(bytes)
        #expect(text.count == 512)
        #expect(try Hex.decode(text) == bytes)
        #expect(try Hex.decode(text.uppercased()) == bytes)
    }

    @Test(arguments: ["0", "abc", "0g", "g0", "zz", "0x00", " 00", "00 ", "é0", "+1", "-1"])
    func rejectsMalformedText(_ text: String) {
        #expect(throws: CoreError.self) { try Hex.decode(text) }
    }

    @Test func oddLengthSaysSo() {
        #expect(throws: CoreError.badEncoding("odd-length hex")) { try Hex.decode("abc") }
    }
}
