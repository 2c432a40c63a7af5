import CSpawn
#if canImport(Glibc)
import Glibc
#endif

/// Real NATs in network namespaces, made on demand and removed afterwards
/// (`lvbnode mesh --nat`, the NAT tests): an "internet" (namespace
/// `<tag>net`, a router), a rendezvous's own namespace on it (`<tag>rv`, at
/// `<prefix>.0.2`), and `sites` homes. Home n is a NAT router (`<tag>r<n>`:
/// `<prefix>.n.2` outside, masquerading with nftables, with random ports
/// where `hard` names it) in front of one node (`<tag>h<n>`) at
/// 192.168.1.2, every home numbered alike, as real ones are. The internet is
/// numbered from 198.18.0.0/15 (public-looking, the benchmarking range) or
/// from 10.99.0.0/16 (a company WAN, a campus, Docker bridges: private).
/// Needs root, `ip` and `nft`. Nothing leaves the namespaces: none of them
/// has a link to the namespace it was made from.
public struct NATLab: Sendable {
    public enum Internet: String, Sendable, CustomStringConvertible {
        case publicRange = "198.18", privateRange = "10.99"
        public var description: String { self == .publicRange ? "public-range internet" : "private-range internet" }
    }

    public let tag: String
    public let internet: Internet
    public let sites: Int
    public let hard: Set<Int>
    /// Dual-stack homes: IPv6 beside IPv4, from the documentation prefix
    /// 2001:db8::/32 (the internet 2001:db8::/64 with the rendezvous at
    /// 2001:db8::2, home n's LAN 2001:db8:n::/64 in hex with its node at
    /// ::2), each home's router a stateful firewall for IPv6 (an `ip6`
    /// nftables table: replies pass, nothing unasked comes in), as home
    /// routers are. No NAT for IPv6.
    public let ipv6: Bool

    /// At most this many homes (the internet router's links are numbered `<prefix>.n.0/24`).
    public static let maxSites = 250

    /// Where `ip` is (nil: not installed).
    public static let ip = executable(["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"])
    static let nft = executable(["/usr/sbin/nft", "/sbin/nft", "/usr/bin/nft"])
    static let conntrack = executable(["/usr/sbin/conntrack", "/sbin/conntrack", "/usr/bin/conntrack"])

    private static func executable(_ paths: [String]) -> String? {
        paths.first { path in access(path, X_OK) == 0 }
    }

    /// What keeps a lab from being built here (nil: it can be).
    public static var unavailable: String? {
        if getuid() != 0 { return "it needs root (network namespaces and nftables)" }
        if ip == nil { return "the ip command (iproute2) is not installed" }
        if nft == nil { return "the nft command (nftables) is not installed" }
        return nil
    }

    public static var available: Bool { unavailable == nil }

    /// The rendezvous's address, where it listens on port 7600.
    public var rendezvous: String { "\(internet.rawValue).0.2:7600" }
    /// Where the internet sees home `site`'s NAT.
    public func outside(_ site: Int) -> String { "\(internet.rawValue).\(site).2" }
    /// The namespace a node of home `site` runs in ("rv": the rendezvous's).
    public func namespace(_ site: String) -> String { tag + (site == "rv" ? "rv" : "h\(site)") }

    /// Builds the lab (after removing any left with the same tag).
    public init(tag: String, sites: Int, internet: Internet = .publicRange, hard: Set<Int> = [], ipv6: Bool = false) throws {
        guard (1...Self.maxSites).contains(sites) else { throw LabError(message: "a NAT lab has from 1 to \(Self.maxSites) homes") }
        self.tag = tag
        self.internet = internet
        self.sites = sites
        self.hard = hard
        self.ipv6 = ipv6
        remove()
        let (status, err) = Self.shell(setupScript)
        guard status == 0 else {
            remove()
            throw LabError(message: "could not build the NAT lab: \(err)")
        }
    }

    /// The commands that build it (`set -e`: the first failure stops them).
    var setupScript: String {
        let pre = internet.rawValue
        var script = """
            set -e
            ip netns add \(tag)net; ip -n \(tag)net link set lo up; ip netns exec \(tag)net sysctl -qw net.ipv4.ip_forward=1
            ip netns add \(tag)rv; ip -n \(tag)rv link set lo up
            ip -n \(tag)net link add up0 type veth peer name eth0 netns \(tag)rv
            ip -n \(tag)net addr add \(pre).0.1/24 dev up0; ip -n \(tag)net link set up0 up
            ip -n \(tag)rv addr add \(pre).0.2/24 dev eth0; ip -n \(tag)rv link set eth0 up; ip -n \(tag)rv route add default via \(pre).0.1

            """
        for n in 1...sites {
            let r = "\(tag)r\(n)", h = "\(tag)h\(n)"
            script += """
                ip netns add \(r); ip netns add \(h)
                ip -n \(tag)net link add up\(n) type veth peer name pub netns \(r)
                ip -n \(tag)net addr add \(pre).\(n).1/24 dev up\(n); ip -n \(tag)net link set up\(n) up
                ip -n \(r) addr add \(pre).\(n).2/24 dev pub; ip -n \(r) link set pub up; ip -n \(r) link set lo up
                ip -n \(r) link add lan type veth peer name eth0 netns \(h)
                ip -n \(r) addr add 192.168.1.1/24 dev lan; ip -n \(r) link set lan up
                ip -n \(h) addr add 192.168.1.2/24 dev eth0; ip -n \(h) link set eth0 up; ip -n \(h) link set lo up
                ip -n \(h) route add default via 192.168.1.1; ip -n \(r) route add default via \(pre).\(n).1
                ip netns exec \(r) sysctl -qw net.ipv4.ip_forward=1
                ip netns exec \(r) nft add table ip nat
                ip netns exec \(r) nft add chain ip nat post '{ type nat hook postrouting priority 100 ; }'
                ip netns exec \(r) nft add rule ip nat post oifname pub masquerade\(hard.contains(n) ? " random,fully-random" : "")

                """
        }
        if ipv6 { script += ipv6Script }
        return script
    }

    /// The IPv6 half of a dual-stack lab (`ipv6`).
    var ipv6Script: String {
        var script = """
            ip netns exec \(tag)net sysctl -qw net.ipv6.conf.all.forwarding=1
            ip -n \(tag)net -6 addr add 2001:db8::1/64 dev up0 nodad
            ip -n \(tag)rv -6 addr add 2001:db8::2/64 dev eth0 nodad; ip -n \(tag)rv -6 route add default via 2001:db8::1

            """
        for n in 1...sites {
            let r = "\(tag)r\(n)", h = "\(tag)h\(n)", x = String(n, radix: 16)
            script += """
                ip -n \(tag)net -6 addr add 2001:db8:ff:\(x)::1/64 dev up\(n) nodad
                ip -n \(tag)net -6 route add 2001:db8:\(x)::/64 via 2001:db8:ff:\(x)::2
                ip netns exec \(r) sysctl -qw net.ipv6.conf.all.forwarding=1
                ip -n \(r) -6 addr add 2001:db8:ff:\(x)::2/64 dev pub nodad; ip -n \(r) -6 route add default via 2001:db8:ff:\(x)::1
                ip -n \(r) -6 addr add 2001:db8:\(x)::1/64 dev lan nodad
                ip -n \(h) -6 addr add 2001:db8:\(x)::2/64 dev eth0 nodad; ip -n \(h) -6 route add default via 2001:db8:\(x)::1
                ip netns exec \(r) nft add table ip6 fw
                ip netns exec \(r) nft add chain ip6 fw inbound '{ type filter hook forward priority 0 ; policy accept ; }'
                ip netns exec \(r) nft add rule ip6 fw inbound oifname pub counter accept
                ip netns exec \(r) nft add rule ip6 fw inbound iifname pub ct state established,related counter accept
                ip netns exec \(r) nft add rule ip6 fw inbound iifname pub counter drop

                """
        }
        return script
    }

    /// Gives home `site`'s NAT router another outside address,
    /// `<prefix>.<site>.<last>` in place of `<prefix>.<site>.<from>` (2 at
    /// first), as an ISP's new lease does, and drops every conntrack entry
    /// the masquerade made on the old address, so the home's flows leave
    /// from the new one, under new mappings. (Linux drops them itself when
    /// the address goes, but from a deferred work item it skips while more
    /// than 16 are pending system-wide: with other labs being torn down at
    /// the same time, the old mappings lived on, and the home's flows kept
    /// leaving from an address it no longer had.)
    public func renumber(_ site: Int, from: Int = 2, to last: Int) throws {
        guard let conntrack = Self.conntrack else {
            throw LabError(message: "renumbering a home needs the conntrack command (Debian's conntrack package; Scripts/setup installs it)")
        }
        let r = "\(tag)r\(site)", pre = "\(internet.rawValue).\(site)"
        let (status, err) = Self.shell("""
            set -e
            ip netns exec \(r) sysctl -qw net.ipv4.conf.pub.promote_secondaries=1
            ip -n \(r) addr add \(pre).\(last)/24 dev pub
            ip -n \(r) addr del \(pre).\(from)/24 dev pub
            ip -n \(r) route replace default via \(pre).1 src \(pre).\(last)
            ip netns exec \(r) \(conntrack) -D -q \(pre).\(from) >/dev/null 2>&1 || true
            """)
        guard status == 0 else { throw LabError(message: "could not renumber home \(site): \(err)") }
    }

    /// Removes every namespace of the lab (those that exist).
    public func remove() {
        let names = ["net", "rv"] + (1...max(sites, 1)).flatMap { ["r\($0)", "h\($0)"] }
        _ = Self.shell(names.map { "ip netns del \(tag)\($0) 2>/dev/null" }.joined(separator: "; ") + "; true")
    }

    /// How to run `arguments` (a program and its arguments) in the namespace
    /// of home `site` (or "rv"): through `ip netns exec`, which becomes the
    /// program (same process).
    public func command(in site: String, _ arguments: [String]) -> (executable: String, arguments: [String]) {
        (Self.ip ?? "/usr/sbin/ip", ["netns", "exec", namespace(site)] + arguments)
    }

    public struct LabError: Error, CustomStringConvertible {
        public let message: String
        public init(message: String) { self.message = message }
        public var description: String { message }
    }

    /// Runs a script with /bin/sh (PATH set to the system directories); its exit status and its standard error.
    @discardableResult
    public static func shell(_ script: String) -> (status: Int32, stderr: String) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return (-1, "pipe: " + String(cString: strerror(errno))) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 2)
        lvb_spawn_close_from(&actions, 3)
        let argv: [UnsafeMutablePointer<CChar>?] = (["/bin/sh", "-c", script] as [String]).map { strdup($0) } + [nil]
        let env: [UnsafeMutablePointer<CChar>?] = [strdup("PATH=/usr/sbin:/usr/bin:/sbin:/bin"), nil]
        defer { for a in argv + env { free(a) } }
        var pid = pid_t()
        let rc = posix_spawn(&pid, "/bin/sh", &actions, nil, argv, env)
        close(fds[1])
        guard rc == 0 else {
            close(fds[0])
            return (-1, "/bin/sh: " + String(cString: strerror(rc)))
        }
        var err: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fds[0], &chunk, chunk.count)
            if n > 0 { if err.count < 65536 { err += chunk[0..<n] }; continue }
            if n < 0, errno == EINTR { continue }
            break
        }
        close(fds[0])
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) < 0, errno == EINTR {}
        let signal = raw & 0x7F
        return (signal == 0 ? (raw >> 8) & 0xFF : 128 + signal, String(decoding: err, as: UTF8.self))
    }
}
