import Foundation
import Testing

/// A host on IPv6 and joiners with the default --listen: the default socket
/// is dual stack, so it reaches whatever address the user gives, and
/// addresses print in their RFC 5952 form.
@Suite(.serialized, .ownThread, .enabled(if: ipv6LoopbackAvailable(), "no IPv6 loopback on this machine"))
struct IPv6ProcessTests {
    private func startHost(listen: String) throws -> (NodeProcess, ready: [String: Any], port: String) {
        let host = try NodeProcess(["host", "--ephemeral", "--listen", listen, "--json", "--video", "none", "--audio", "none"])
        let ready = try #require(host.waitFor("ready"), "host never became ready: \(host.stderr)")
        let port = try #require((ready["listen"] as? String)?.split(separator: ":").last.map(String.init))
        return (host, ready, port)
    }

    @Test func aJoinerWithTheDefaultListenReachesAHostOnIPv6Loopback() throws {
        let (host, ready, port) = try startHost(listen: "[::1]:0")
        defer { host.signal(SIGKILL) }
        #expect(ready["listen"] as? String == "[::1]:\(port)")
        let joiner = try NodeProcess(["join", "[::1]:\(port)", "--ephemeral", "--json", "--no-media", "--duration", "20"])
        defer { joiner.signal(SIGKILL) }
        #expect(joiner.waitFor("connecting")?["to"] as? String == "[::1]:\(port)")
        #expect(joiner.waitFor("admitted", timeout: 10) != nil, "not admitted: \(joiner.stderr)")
        let session = try #require(host.waitFor("session", timeout: 5))
        #expect((session["address"] as? String)?.hasPrefix("[::1]:") == true, "\(session)")
        joiner.send("/quit")
        #expect(joiner.waitExit() == 0)
        host.signal(SIGTERM)
        #expect(host.waitExit() == 0)
    }

    @Test func aHostWithTheDefaultListenTakesIPv4AndIPv6Joiners() throws {
        // The default listen is [::]:7400; port 0 here keeps the test off a fixed port.
        let (host, ready, port) = try startHost(listen: "[::]:0")
        defer { host.signal(SIGKILL) }
        #expect(ready["listen"] as? String == "[::]:\(port)")
        for (address, seen) in [("127.0.0.1:\(port)", "127.0.0.1:"), ("[::1]:\(port)", "[::1]:")] {
            let joiner = try NodeProcess(["join", address, "--ephemeral", "--json", "--no-media", "--duration", "20"])
            defer { joiner.signal(SIGKILL) }
            #expect(joiner.waitFor("admitted", timeout: 10) != nil, "\(address) not admitted: \(joiner.stderr)")
            // An IPv4 joiner of a dual-stack socket shows as IPv4, not ::ffff:127.0.0.1.
            let id = try #require(joiner.waitFor("ready")?["id"] as? String)
            let session = try #require(host.waitFor("session", timeout: 5, where: { $0["peer"] as? String == id }))
            #expect((session["address"] as? String)?.hasPrefix(seen) == true, "\(session)")
            joiner.send("/quit")
            #expect(joiner.waitExit() == 0)
        }
        host.signal(SIGTERM)
        #expect(host.waitExit() == 0)
    }
}

/// Whether this machine can bind UDP on ::1 (some containers have no IPv6).
func ipv6LoopbackAvailable() -> Bool {
    let fd = socket(AF_INET6, Int32(SOCK_DGRAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var a = sockaddr_in6()
    a.sin6_family = sa_family_t(AF_INET6)
    a.sin6_addr = in6addr_loopback
    return withUnsafePointer(to: &a) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
    } == 0
}
