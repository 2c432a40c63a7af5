import LVBCore
import Testing

/// RFC 4648 §10 base32 vectors, lower-cased and without "=" padding, as
/// node ids and join tickets print them.
@Suite struct Base32Tests {
    static let vectors: [(String, String)] = [
        ("", ""),
        ("f", "my"),
        ("fo", "mzxq"),
        ("foo", "mzxw6"),
        ("foob", "mzxw6yq"),
        ("fooba", "mzxw6ytb"),
        ("foobar", "mzxw6ytboi"),
    ]

    @Test(arguments: vectors)
    func encodesRFC4648Vector(plain: String, encoded: String) {
        #expect(Base32.encode(Array(plain.utf8)) == encoded)
    }

    @Test(arguments: vectors)
    func decodesRFC4648Vector(plain: String, encoded: String) throws {
        #expect(try Base32.decode(encoded) == Array(plain.utf8))
    }

    @Test(arguments: vectors)
    func decodesUpperCase(plain: String, encoded: String) throws {
        #expect(try Base32.decode(encoded.uppercased()) == Array(plain.utf8))
    }

    @Test func decodesMixedCaseAndEveryDigit() throws {
        let all = "abcdefghijklmnopqrstuvwxyz234567"   // 32 chars = 20 bytes exactly
        let bytes = try Base32.decode(all)
        #expect(bytes.count == 20)
        #expect(Base32.encode(bytes) == all)
        #expect(try Base32.decode("MzXw6YtBoI") == Array("foobar".utf8))
    }

    @Test func everyByteValueRoundTrips() throws {
        let bytes = (0...255).map { UInt8($0) }
        let text = Base32.encode(bytes)
        #expect(text.utf8.allSatisfy { (97...122).contains($0) || (50...55).contains($0) })
        #expect(try Base32.decode(text) == bytes)
    }

    @Test func randomLengthsRoundTrip() throws {
        let random = SeededRandom(seed: 32)
        for length in 0...70 {
            let bytes = random.bytes(length)
            let text = Base32.encode(bytes)
            #expect(text.utf8.count == (length * 8 + 4) / 5)
            #expect(try Base32.decode(text) == bytes)
        }
    }

    /// Characters outside the alphabet: base32hex/Crockford digits, padding,
    /// separators, non-ASCII.
    @Test(arguments: ["my=", "m0", "m1", "8a", "9a", "my ", " my", "m-y", "my\n", "mé", "mzxw6ytb!", "m\u{0}"])
    func rejectsCharactersOutsideTheAlphabet(_ text: String) {
        #expect(throws: CoreError.self) { try Base32.decode(text) }
    }

    /// A final character whose unused low bits are set, or a length no byte
    /// count encodes to: the text was cut or altered.
    @Test(arguments: ["mz", "m7", "mzxr", "mzxw7", "mzxw6yr", "mzxw6ytbop", "mzxw6ytboj", "m", "mzx", "mzxw6y"])
    func rejectsNonZeroTrailingBitsAndImpossibleLengths(_ text: String) {
        #expect(throws: CoreError.self) { try Base32.decode(text) }
    }

    /// Every 1-character-too-long or too-short cut of a valid encoding either
    /// fails or decodes to something else: no two texts share a decoding.
    @Test func decodingIsInjective() throws {
        let text = Base32.encode(Array("lvbnode join ticket".utf8))
        var seen = Set<[UInt8]>()
        for cut in 0...text.utf8.count {
            let prefix = String(text.prefix(cut))
            if let bytes = try? Base32.decode(prefix) {
                #expect(Base32.encode(bytes) == prefix)
                #expect(seen.insert(bytes).inserted)
            }
        }
        #expect(seen.count > 1)
    }
}
