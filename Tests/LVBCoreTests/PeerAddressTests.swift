import LVBCore
import Testing

/// Addresses users type: `ip:port`, `[ipv6]:port`, `localhost:port`, and
/// nothing that would need a name service (the static binary has no NSS).
@Suite struct PeerAddressTests {
    static func v6(_ groups: [UInt16]) -> PeerAddress.Host {
        .v6(groups.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] })
    }

    static let valid: [(String, PeerAddress)] = [
        ("192.168.1.20:7400", .ipv4(192, 168, 1, 20, port: 7400)),
        ("0.0.0.0:0", .ipv4(0, 0, 0, 0, port: 0)),
        ("255.255.255.255:65535", .ipv4(255, 255, 255, 255, port: 65535)),
        ("127.0.0.1:1", .ipv4(127, 0, 0, 1, port: 1)),
        ("localhost:7400", .ipv4(127, 0, 0, 1, port: 7400)),
        ("LocalHost:80", .ipv4(127, 0, 0, 1, port: 80)),
        ("  10.0.0.1:5  ", .ipv4(10, 0, 0, 1, port: 5)),
        ("[::1]:7400", PeerAddress(host: v6([0, 0, 0, 0, 0, 0, 0, 1]), port: 7400)),
        ("[::]:9", PeerAddress(host: v6([0, 0, 0, 0, 0, 0, 0, 0]), port: 9)),
        ("[2001:db8::1]:443", PeerAddress(host: v6([0x2001, 0xDB8, 0, 0, 0, 0, 0, 1]), port: 443)),
        ("[2001:DB8::]:443", PeerAddress(host: v6([0x2001, 0xDB8, 0, 0, 0, 0, 0, 0]), port: 443)),
        ("[fe80::1:2]:1", PeerAddress(host: v6([0xFE80, 0, 0, 0, 0, 0, 1, 2]), port: 1)),
        ("[1:2:3:4:5:6:7:8]:65535", PeerAddress(host: v6([1, 2, 3, 4, 5, 6, 7, 8]), port: 65535)),
        ("[1:2:3:4:5:6:7::]:2", PeerAddress(host: v6([1, 2, 3, 4, 5, 6, 7, 0]), port: 2)),
    ]

    @Test(arguments: valid)
    func parses(text: String, expected: PeerAddress) throws {
        #expect(try PeerAddress(parsing: text) == expected)
    }

    @Test(arguments: [
        "127.0.0.1",            // missing port
        "127.0.0.1:",           // empty port
        "1.2.3.4:70000",        // port out of range
        "1.2.3.4:65536",
        "1.2.3.4:port",
        "1.2.3:5",              // three octets
        "1.2.3.4.5:5",          // five octets
        "300.1.1.1:5",          // octet out of range
        "1.2.3.256:5",
        "1..3.4:5",
        "::1:5",                // IPv6 needs brackets
        "2001:db8::1:443",
        "[::1]",                // missing port
        "[::1]:",
        "[::1]5",
        "[::1:5",               // no closing bracket
        "[1::2::3]:5",          // two "::"
        "[1:2:3:4:5:6:7:8:9]:5",
        "[1:2:3:4:5:6:7]:5",    // seven groups without "::"
        "[1:2:3:4::5:6:7:8]:5", // "::" standing for no group
        "[12345::1]:5",
        "[g::1]:5",
        "host.example:80",      // names other than localhost need NSS
        "localhost.:80",
        "example:80",
        ":80",
        "",
        "localhost",
        "local host:80",
    ])
    func rejects(_ text: String) {
        #expect(throws: CoreError.badAddress(text)) { try PeerAddress(parsing: text) }
    }

    @Test(arguments: valid)
    func descriptionRoundTrips(text: String, expected: PeerAddress) throws {
        let parsed = try PeerAddress(parsing: expected.description)
        #expect(parsed == expected)
        #expect(parsed.description == expected.description)
    }

    @Test func descriptionForm() {
        #expect(PeerAddress.ipv4(10, 0, 0, 1, port: 7400).description == "10.0.0.1:7400")
        #expect(PeerAddress(host: Self.v6([0x2001, 0xDB8, 0, 0, 0, 0, 0, 1]), port: 443).description
            == "[2001:db8::1]:443")
        #expect(PeerAddress.ipv4(10, 0, 0, 1, port: 1).isIPv4)
        #expect(!PeerAddress(host: Self.v6([0, 0, 0, 0, 0, 0, 0, 1]), port: 1).isIPv4)
    }

    /// RFC 5952 §4 (and §5 for IPv4-mapped): one text per address, so logs,
    /// tickets and JSON output can be compared as strings.
    @Test(arguments: [
        ([0, 0, 0, 0, 0, 0, 0, 1], "::1"),
        ([0, 0, 0, 0, 0, 0, 0, 0], "::"),
        ([0x2001, 0xDB8, 0, 0, 0, 0, 0, 1], "2001:db8::1"),
        ([0x2001, 0xDB8, 0, 0, 1, 0, 0, 1], "2001:db8::1:0:0:1"),      // §4.2.3: the first of equal runs
        ([0x2001, 0xDB8, 0, 0, 0, 1, 0, 0], "2001:db8::1:0:0"),        // §4.2.3: the longest run
        ([0x2001, 0xDB8, 0, 1, 1, 1, 1, 1], "2001:db8:0:1:1:1:1:1"),   // §4.2.2: one zero group stays
        ([0x2001, 0xDB8, 0xAA, 0x0B, 0, 0, 0, 0], "2001:db8:aa:b::"),  // §4.1, §4.3: no leading zeros, lowercase
        ([0xFE80, 0, 0, 0, 0, 0, 1, 2], "fe80::1:2"),
        ([1, 0, 0, 0, 0, 0, 0, 0], "1::"),
        ([1, 2, 3, 4, 5, 6, 7, 8], "1:2:3:4:5:6:7:8"),
        ([0, 0, 0, 0, 0, 0xFFFF, 0xC000, 0x0201], "::ffff:192.0.2.1"),  // §5
    ] as [([UInt16], String)])
    func canonicalIPv6Text(groups: [UInt16], text: String) throws {
        let address = PeerAddress(host: Self.v6(groups), port: 7610)
        #expect(address.hostString == text)
        #expect(address.description == "[\(text)]:7610")
        #expect(try PeerAddress(parsing: "[\(text)]:7610") == address)
    }

    /// A dual-stack socket names IPv4 peers as ::ffff:a.b.c.d (RFC 4291 §2.5.5.2).
    @Test func dualStackForms() {
        let v4 = PeerAddress.ipv4(192, 0, 2, 1, port: 7400)
        #expect(v4.ipv4Mapped.description == "[::ffff:192.0.2.1]:7400")
        #expect(v4.ipv4Mapped.ipv4Mapped == v4.ipv4Mapped)
        #expect(PeerAddress.anyDualStack(port: 7400).description == "[::]:7400")
        #expect(PeerAddress.anyDualStack(port: 7400).isIPv6Unspecified)
        #expect(!PeerAddress.ipv4(0, 0, 0, 0, port: 7400).isIPv6Unspecified)
        #expect(!PeerAddress(host: Self.v6([0, 0, 0, 0, 0, 0, 0, 1]), port: 1).isIPv6Unspecified)
    }

    @Test func parsesIPv4InIPv6Literal() throws {
        #expect(try PeerAddress(parsing: "[::ffff:127.0.0.1]:5") == PeerAddress(host: Self.v6([0, 0, 0, 0, 0, 0xFFFF, 0x7F00, 1]), port: 5))
        #expect(try PeerAddress(parsing: "[64:ff9b::198.51.100.7]:5") == PeerAddress(host: Self.v6([0x64, 0xFF9B, 0, 0, 0, 0, 0xC633, 0x6407]), port: 5))
        for bad in ["[::ffff:1.2.3]:5", "[::1.2.3.4:5]:5", "[1.2.3.4::]:5", "[::ffff:1.2.3.400]:5"] {
            #expect(throws: CoreError.badAddress(bad)) { try PeerAddress(parsing: bad) }
        }
    }

    @Test func randomAddressesRoundTripThroughText() throws {
        let random = SeededRandom(seed: 4)
        for i in 0..<500 {
            let port = UInt16(truncatingIfNeeded: random.next())
            let address = i % 2 == 0
                ? PeerAddress(host: .v4(random.uint32()), port: port)
                : PeerAddress(host: .v6(random.bytes(16)), port: port)
            #expect(try PeerAddress(parsing: address.description) == address)
        }
    }

    /// Swift's integer parsers accept a leading sign; octets, groups and ports
    /// must be plain digits all the same.
    @Test(arguments: ["1.2.3.4:+5", "+1.2.3.4:5", "1.2.3.4:-0", "[+1::2]:5"])
    func rejectsSignedNumbers(_ text: String) {
        #expect(throws: CoreError.badAddress(text)) { try PeerAddress(parsing: text) }
    }

    /// Brackets are for IPv6 literals only (RFC 3986 §3.2.2).
    @Test func rejectsIPv4InBrackets() {
        #expect(throws: CoreError.badAddress("[1.2.3.4]:5")) { try PeerAddress(parsing: "[1.2.3.4]:5") }
    }
}
