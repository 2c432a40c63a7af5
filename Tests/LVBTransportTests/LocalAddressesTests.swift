import LVBCore
import Testing
@testable import LVBTransport

/// What a ticket lists of a node's interface addresses (issue 48's IPv6
/// candidates): global IPv6 on a dual-stack socket, first; never link-local,
/// loopback or multicast IPv6; IPv4 loopback last; at most eight.
@Suite struct LocalAddressesTests {
    static func v6(_ text: String) -> PeerAddress.Host {
        (try? PeerAddress(parsing: "[\(text)]:1"))!.host  // invariant: the literals below parse
    }

    @Test func aDualStackSocketListsGlobalIPv6FirstAndNoLinkLocalOrLoopback() {
        let hosts: [PeerAddress.Host] = [.v4(0x7F00_0001), Self.v6("::1"), .v4(0xC0A8_0102), Self.v6("fe80::fc:ff:fe00:1"),
                                         Self.v6("2001:db8:1::2"), Self.v6("fd00::2"), Self.v6("ff02::1"), Self.v6("::ffff:10.0.0.1")]
        let listed = LocalAddresses.candidates(hosts, port: 7400, dualStack: true).map(\.description)
        #expect(listed == ["[2001:db8:1::2]:7400", "[fd00::2]:7400", "192.168.1.2:7400", "127.0.0.1:7400"])
    }

    @Test func anIPv4SocketListsNoIPv6AndAlwaysALoopback() {
        let hosts: [PeerAddress.Host] = [Self.v6("2001:db8:1::2"), .v4(0x0A00_0005)]
        #expect(LocalAddresses.candidates(hosts, port: 9, dualStack: false).map(\.description) == ["10.0.0.5:9", "127.0.0.1:9"])
    }

    @Test func atMostEight() {
        let hosts = (1...12).map { Self.v6("2001:db8::\($0)") }
        let listed = LocalAddresses.candidates(hosts, port: 1, dualStack: true)
        #expect(listed.count == JoinTicket.maxAddresses)
        #expect(listed.first?.description == "[2001:db8::1]:1")
    }
}
