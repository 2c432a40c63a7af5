import Foundation
import Testing

/// Real NATs: network namespaces made for the test (an "internet" with the
/// rendezvous, and two sites, each a node behind a router that masquerades
/// with nftables), the binary as processes in them. Needs root, `ip` and
/// `nft` (Scripts/setup installs nftables); skipped without them. Nothing
/// leaves the namespaces, and they are removed afterwards.
@Suite(.serialized, .enabled(if: NATLab.available)) struct NATNamespaceProcessTests {
    @Test func behindSymmetricNATsAViewerJoinsThroughTheRelayAndWatches() throws {
        let lab = try NATLab(tag: "lvs\(getpid() % 1000)", random: true)
        defer { lab.remove() }
        let (rv, host, room, _) = try lab.room(relayKbps: 4000)
        defer { for p in [host, rv] { p.signal(SIGTERM); _ = p.waitExit() } }
        let viewer = try lab.run("b", ["join", room, "--rendezvous", "198.18.2.1:7600", "--ephemeral", "--json", "--duration", "5"])
        #expect(viewer.waitFor("first_frame", timeout: 10) != nil, "viewer: \(viewer.stderr)")
        #expect(viewer.waitExit(timeout: 20) == 0, "\(viewer.stderr)")
        let media = try #require(viewer.waitFor("exit", timeout: 1)?["media"] as? [String: Any])
        #expect((media["frames"] as? Int ?? 0) > 90, "\(media)")
        rv.signal(SIGTERM)
        #expect(rv.waitExit() == 0)
        let counters = try #require(rv.waitFor("exit", timeout: 1)?["rendezvous"] as? [String: Any])
        #expect(counters["introductions"] as? Int == 1 && (counters["relayed_datagrams"] as? Int ?? 0) > 100, "\(counters)")
    }

    /// Two ordinary Linux NATs (masquerade keeps ports): no relay needed,
    /// the introduction's simultaneous dial punches through, and the session
    /// runs straight to the host's NAT.
    @Test func behindPortPreservingNATsAViewerPunchesThroughDirectly() throws {
        let lab = try NATLab(tag: "lvd\(getpid() % 1000)", random: false)
        defer { lab.remove() }
        let (rv, host, room, hostID) = try lab.room()
        defer { for p in [host, rv] { p.signal(SIGTERM); _ = p.waitExit() } }
        let viewer = try lab.run("b", ["join", room, "--rendezvous", "198.18.2.1:7600", "--ephemeral", "--json", "--duration", "4"])
        let session = viewer.waitFor("session", timeout: 10, where: { $0["peer"] as? String == hostID })
        #expect(session?["address"] as? String == "198.18.1.2:7400", "the host's NAT, straight: \(String(describing: session)) \(viewer.stderr)")
        #expect(viewer.waitFor("first_frame", timeout: 10) != nil)
        #expect(viewer.waitExit(timeout: 20) == 0, "\(viewer.stderr)")
    }

    @Test func behindSymmetricNATsWithoutARelayTheJoinFailsWithOneLine() throws {
        let lab = try NATLab(tag: "lvn\(getpid() % 1000)", random: true)
        defer { lab.remove() }
        let (rv, host, room, _) = try lab.room(hostArguments: ["--video", "none", "--audio", "none"])
        defer { for p in [host, rv] { p.signal(SIGTERM); _ = p.waitExit() } }
        let viewer = try lab.run("b", ["join", room, "--rendezvous", "198.18.2.1:7600", "--ephemeral", "--json", "--no-media", "--duration", "4"])
        #expect(viewer.waitExit(timeout: 20) == 1)
        #expect(viewer.stderr.contains("never connected"), "\(viewer.stderr)")
    }
}

/// Five namespaces: `net` (the internet, 198.18.1.1 and 198.18.2.1), and per
/// site a router (`ar`, `br`: 198.18.n.2 outside, 10.n.0.1 inside,
/// masquerading, with random ports when `random`) and a node (`a`, `b`: 10.n.0.2).
struct NATLab {
    let tag: String

    static var available: Bool {
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: ip)
            && ["/usr/sbin/nft", "/sbin/nft", "/usr/bin/nft"].contains { FileManager.default.isExecutableFile(atPath: $0) }
    }
    static let ip = FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") ? "/usr/sbin/ip" : "/sbin/ip"

    init(tag: String, random: Bool) throws {
        self.tag = tag
        remove()
        var script = "set -e\n"
        script += "ip netns add \(tag)net; ip -n \(tag)net link set lo up; ip netns exec \(tag)net sysctl -qw net.ipv4.ip_forward=1\n"
        for (i, site) in ["a", "b"].enumerated() {
            let n = i + 1, r = "\(tag)\(site)r", h = "\(tag)\(site)"
            script += """
                ip netns add \(r); ip netns add \(h)
                ip -n \(tag)net link add up\(n) type veth peer name pub netns \(r)
                ip -n \(tag)net addr add 198.18.\(n).1/24 dev up\(n); ip -n \(tag)net link set up\(n) up
                ip -n \(r) addr add 198.18.\(n).2/24 dev pub; ip -n \(r) link set pub up; ip -n \(r) link set lo up
                ip -n \(r) link add lan type veth peer name eth0 netns \(h)
                ip -n \(r) addr add 10.\(n).0.1/24 dev lan; ip -n \(r) link set lan up
                ip -n \(h) addr add 10.\(n).0.2/24 dev eth0; ip -n \(h) link set eth0 up; ip -n \(h) link set lo up
                ip -n \(h) route add default via 10.\(n).0.1; ip -n \(r) route add default via 198.18.\(n).1
                ip netns exec \(r) sysctl -qw net.ipv4.ip_forward=1
                ip netns exec \(r) nft add table ip nat
                ip netns exec \(r) nft add chain ip nat post '{ type nat hook postrouting priority 100 ; }'
                ip netns exec \(r) nft add rule ip nat post oifname pub masquerade\(random ? " random" : "")

                """
        }
        let (status, err) = Self.shell(script)
        guard status == 0 else {
            remove()
            throw LabError(message: "could not build the NAT lab: \(err)")
        }
    }

    /// A rendezvous in the internet and a host behind site a announcing to it:
    /// both processes, the room id and the host's id, once the room is announced.
    func room(relayKbps: Int = 0, hostArguments: [String] = ["--size", "320x180"]) throws -> (rv: NodeProcess, host: NodeProcess, room: String, hostID: String) {
        let rv = try run("net", ["rendezvous", "--ephemeral", "--listen", "0.0.0.0:7600", "--json", "--relay-kbps", "\(relayKbps)"])
        guard rv.waitFor("ready") != nil else { throw LabError(message: "rendezvous: \(rv.stderr)") }
        let host = try run("a", ["host", "--ephemeral", "--listen", "0.0.0.0:7400", "--json", "--rendezvous", "198.18.1.1:7600"] + hostArguments)
        guard let ready = host.waitFor("ready"), let room = ready["room"] as? String, let id = ready["id"] as? String else {
            throw LabError(message: "host: \(host.stderr)")
        }
        Thread.sleep(forTimeInterval: 1)  // its first announcement
        return (rv, host, room, id)
    }

    /// The binary in namespace `site` ("net", "a" or "b").
    func run(_ site: String, _ arguments: [String]) throws -> NodeProcess {
        try NodeProcess(arguments, executable: URL(fileURLWithPath: Self.ip),
                        prefix: ["netns", "exec", tag + site, NodeProcess.binary.path])
    }

    func remove() {
        _ = Self.shell(["a", "ar", "b", "br", "net"].map { "ip netns del \(tag)\($0) 2>/dev/null" }.joined(separator: "; ") + "; true")
    }

    struct LabError: Error { let message: String }

    @discardableResult
    static func shell(_ script: String) -> (Int32, String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/bash")
        p.arguments = ["-c", script]
        p.environment = ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"]
        let err = Pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        do { try p.run() } catch { return (-1, "\(error)") }
        let data = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
