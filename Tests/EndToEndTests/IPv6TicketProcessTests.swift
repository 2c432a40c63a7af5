import Foundation
import LVBMesh
import Testing

/// IPv6 candidates in tickets (issue 48, first step): a host on the default
/// dual-stack socket lists its global IPv6 address in its ticket, and a
/// joiner whose only way to it is IPv6 (two network namespaces joined by
/// an IPv6-only link in the documentation prefix) joins by that ticket.
/// Before, tickets listed IPv4 interface addresses alone.
@Suite(.serialized, .ownThread, .enabled(if: NATLab.available)) struct IPv6TicketProcessTests {
    @Test func aJoinerReachesAHostByTheIPv6AddressItsTicketLists() throws {
        let tag = "lv6\(getpid() % 1000)"
        let (a, b) = (tag + "a", tag + "b")
        let remove = "ip netns del \(a) 2>/dev/null; ip netns del \(b) 2>/dev/null; true"
        _ = NATLab.shell(remove)
        let (status, err) = NATLab.shell("""
            set -e
            ip netns add \(a); ip netns add \(b)
            ip -n \(a) link set lo up; ip -n \(b) link set lo up
            ip -n \(a) link add eth0 type veth peer name eth0 netns \(b)
            ip -n \(a) -6 addr add 2001:db8:1::1/64 dev eth0 nodad; ip -n \(b) -6 addr add 2001:db8:1::2/64 dev eth0 nodad
            ip -n \(a) link set eth0 up; ip -n \(b) link set eth0 up
            """)
        defer { _ = NATLab.shell(remove) }
        try #require(status == 0, "could not build the namespaces: \(err)")
        let ip = NATLab.ip ?? "/usr/sbin/ip"
        let host = try NodeProcess(["host", "--ephemeral", "--json", "--video", "none", "--audio", "none", "--listen", "[::]:7400"],
                                   executable: URL(fileURLWithPath: ip), prefix: ["netns", "exec", a, NodeProcess.binary.path])
        defer { host.signal(SIGTERM); _ = host.waitExit() }
        let ticket = try #require(host.waitFor("ready")?["ticket"] as? String, "host: \(host.stderr)")
        let joiner = try NodeProcess(["join", ticket, "--ephemeral", "--json", "--no-media", "--duration", "20"],
                                     executable: URL(fileURLWithPath: ip), prefix: ["netns", "exec", b, NodeProcess.binary.path])
        defer { joiner.signal(SIGTERM); _ = joiner.waitExit() }
        #expect(joiner.waitFor("admitted", timeout: 10) != nil, "not admitted by ticket over IPv6: \(joiner.stderr)")
        let session = try #require(host.waitFor("session", timeout: 5), "\(host.events)")
        #expect((session["address"] as? String)?.hasPrefix("[2001:db8:1::2]:") == true, "\(session)")
        joiner.send("/quit")
        #expect(joiner.waitExit() == 0)
    }
}
