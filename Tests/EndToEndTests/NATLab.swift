import Foundation

/// Real NATs in network namespaces made for a test, removed afterwards:
/// an "internet" (namespace `net`, a router), a rendezvous's own namespace
/// on it at `<prefix>.0.2`, and `sites` homes. Home n is a NAT router
/// (`r<n>`: `<prefix>.n.2` outside, masquerading with nftables, with random
/// ports where `hard` names it) in front of one node (`h<n>`) at
/// 192.168.1.2, every home numbered alike, as real ones are. The internet is
/// numbered from 198.18.0.0/15 (public-looking, the benchmarking range) or
/// from 10.99.0.0/16 (a company WAN, a campus, Docker bridges: private).
/// Needs root, `ip` and `nft` (Scripts/setup installs nftables). Nothing
/// leaves the namespaces.
struct NATLab {
    enum Internet: String, CustomStringConvertible {
        case publicRange = "198.18", privateRange = "10.99"
        var description: String { self == .publicRange ? "public-range internet" : "private-range internet" }
    }

    let tag: String
    let internet: Internet
    let sites: Int

    static var available: Bool {
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: ip)
            && ["/usr/sbin/nft", "/sbin/nft", "/usr/bin/nft"].contains { FileManager.default.isExecutableFile(atPath: $0) }
    }
    static let ip = FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") ? "/usr/sbin/ip" : "/sbin/ip"

    /// The rendezvous's address, where it listens on port 7600.
    var rendezvous: String { "\(internet.rawValue).0.2:7600" }
    /// Where the internet sees home `site`'s NAT.
    func outside(_ site: Int) -> String { "\(internet.rawValue).\(site).2" }

    init(tag: String, sites: Int, internet: Internet = .publicRange, hard: Set<Int> = []) throws {
        self.tag = tag
        self.internet = internet
        self.sites = sites
        remove()
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
        let (status, err) = Self.shell(script)
        guard status == 0 else {
            remove()
            throw LabError(message: "could not build the NAT lab: \(err)")
        }
    }

    /// A rendezvous on the internet and a host behind home 1 announcing to
    /// it: both processes, the room id and the host's id, once announced.
    func room(relayKbps: Int = 0, hostArguments: [String] = ["--size", "320x180"]) throws -> (rv: NodeProcess, host: NodeProcess, room: String, hostID: String) {
        let rv = try run("rv", ["rendezvous", "--ephemeral", "--listen", "0.0.0.0:7600", "--json", "--relay-kbps", "\(relayKbps)"])
        guard rv.waitFor("ready") != nil else { throw LabError(message: "rendezvous: \(rv.stderr)") }
        let host = try run("1", ["host", "--ephemeral", "--listen", "0.0.0.0:7400", "--json", "--rendezvous", rendezvous] + hostArguments)
        guard let ready = host.waitFor("ready"), let room = ready["room"] as? String, let id = ready["id"] as? String else {
            throw LabError(message: "host: \(host.stderr)")
        }
        Thread.sleep(forTimeInterval: 1)  // its first announcement
        return (rv, host, room, id)
    }

    /// The binary in the rendezvous's namespace ("rv") or behind home "1"…
    func run(_ site: String, _ arguments: [String]) throws -> NodeProcess {
        try NodeProcess(arguments, executable: URL(fileURLWithPath: Self.ip),
                        prefix: ["netns", "exec", tag + (site == "rv" ? "rv" : "h\(site)"), NodeProcess.binary.path])
    }

    func remove() {
        let names = ["net", "rv"] + (1...max(sites, 1)).flatMap { ["r\($0)", "h\($0)"] }
        _ = Self.shell(names.map { "ip netns del \(tag)\($0) 2>/dev/null" }.joined(separator: "; ") + "; true")
    }

    struct LabError: Error { let message: String }

    /// Runs a bash script; its status and its stderr.
    @discardableResult
    static func shell(_ script: String) -> (Int32, String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/bash")
        p.arguments = ["-c", script]
        p.environment = ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"]
        let pipe = Pipe()
        p.standardError = pipe
        p.standardOutput = FileHandle.nullDevice
        do { try p.run() } catch { return (-1, "\(error)") }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
