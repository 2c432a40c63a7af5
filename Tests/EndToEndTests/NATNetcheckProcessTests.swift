import Foundation
import LVBMesh
import Testing

/// `lvbnode netcheck` behind real NATs (issue 48, "Know your NAT"): the
/// rendezvous on the lab's internet, dual stack, with its alternate STUN
/// port; home 1 behind an ordinary Linux masquerade, home 2 behind a hard
/// one (`random,fully-random`), home 3 ordinary; every home with a global
/// IPv6 address behind a stateful firewall. Each home is told what its NAT
/// does, and the rendezvous's own namespace, over loopback, that it has none.
@Suite(.serialized, .ownThread, .enabled(if: NATLab.available)) struct NATNetcheckProcessTests {
    /// Runs netcheck in `site` to the end: its exit status, stdout and stderr.
    private static func netcheck(_ lab: NATLab, _ site: String, _ arguments: [String]) throws -> (Int32, String, String) {
        let command = lab.command(in: site, [NodeProcess.binary.path, "netcheck"] + arguments)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: command.executable)
        p.arguments = command.arguments
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = FileHandle.nullDevice
        try p.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile(), stderr = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
    }

    /// The one JSON object netcheck --json prints.
    private static func report(_ lab: NATLab, _ site: String, _ rendezvous: [String]) throws -> [String: Any] {
        let (status, out, err) = try netcheck(lab, site, rendezvous.flatMap { ["--rendezvous", $0] } + ["--json"])
        #expect(status == 0, "netcheck in \(site): \(err)")
        let line = try #require(out.split(separator: "\n").first, "netcheck in \(site) printed nothing: \(err)")
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    @Test func eachHomeLearnsWhatItsNATDoesAndTheRendezvousLoopbackHasNone() throws {
        let lab = try NATLab(tag: "lvc\(getpid() % 1000)", sites: 3, hard: [2], ipv6: true)
        defer { lab.remove() }
        let rv = try lab.run("rv", ["rendezvous", "--ephemeral", "--listen", "[::]:7600", "--json"])
        defer { rv.signal(SIGTERM); _ = rv.waitExit() }
        let ready = try #require(rv.waitFor("ready"), "rendezvous: \(rv.stderr)")
        #expect(ready["alternate"] as? String == "[::]:7601")
        let both = [lab.rendezvous, "[2001:db8::2]:7600"]

        // An ordinary home: one mapping for every destination, its port kept, only the address and port it sent to may answer.
        let easy = try Self.report(lab, "1", both)
        #expect(easy["ipv4_mapping"] as? String == "endpoint-independent", "\(easy)")
        #expect(easy["ipv4_port_preserving"] as? Bool == true, "\(easy)")
        #expect(easy["ipv4_filtering"] as? String == "address-and-port-dependent", "\(easy)")
        #expect(easy["ipv4_hard_nat"] as? Bool == false, "\(easy)")
        let port = (easy["local"] as? String)?.split(separator: ":").last.map(String.init) ?? "?"
        #expect(easy["ipv4_reflexive"] as? [String] == ["\(lab.outside(1)):\(port)"], "\(easy)")
        // Its IPv6 address is global and its own: no NAT, the firewall filters.
        #expect(easy["ipv6_global"] as? [String] == ["2001:db8:1::2"], "\(easy)")
        #expect(easy["ipv6"] as? Bool == true, "\(easy)")
        #expect(easy["ipv6_reflexive"] as? [String] == ["[2001:db8:1::2]:\(port)"], "\(easy)")
        #expect(easy["ipv6_mapping"] as? String == "no NAT", "\(easy)")
        #expect(easy["ipv6_filtering"] as? String == "address-and-port-dependent", "\(easy)")
        let rtt = easy["rtt_ms"] as? [String: Any]
        #expect(rtt?[lab.rendezvous] is Double && rtt?["[2001:db8::2]:7600"] is Double, "\(easy)")

        // A hard home: a new random port for every destination.
        let hard = try Self.report(lab, "2", both)
        #expect(hard["ipv4_mapping"] as? String == "endpoint-dependent", "\(hard)")
        #expect(hard["ipv4_hard_nat"] as? Bool == true, "\(hard)")
        #expect((hard["ipv4_reflexive"] as? [String])?.count == 2, "\(hard)")
        #expect(hard["ipv4_filtering"] as? String == "address-and-port-dependent", "\(hard)")
        #expect(hard["ipv6_mapping"] as? String == "no NAT", "\(hard)")

        // The rendezvous's own machine over loopback: no NAT, nothing filtered.
        let loop = try Self.report(lab, "rv", ["127.0.0.1:7600"])
        #expect(loop["ipv4_mapping"] as? String == "no NAT", "\(loop)")
        #expect(loop["ipv4_filtering"] as? String == "not port-dependent", "\(loop)")
        #expect(loop["ipv4_hard_nat"] as? Bool == false, "\(loop)")

        // The readable report, as a user sees it.
        for site in ["1", "2"] {
            let (status, text, err) = try Self.netcheck(lab, site, both.flatMap { ["--rendezvous", $0] })
            #expect(status == 0, "\(err)")
            print("netcheck in home \(site) (\(lab.hard.contains(Int(site) ?? 0) ? "hard" : "ordinary") NAT):\n\(text)")
            #expect(text.contains("hard NAT: \(site == "2" ? "yes" : "no")"), "\(text)")
        }

        // A rendezvous that is not there: one clear line, exit status 1.
        let (status, out, err) = try Self.netcheck(lab, "3", ["--rendezvous", lab.rendezvous.replacingOccurrences(of: ":7600", with: ":7609"), "--timeout", "1"])
        #expect(status == 1 && out.isEmpty, "\(out)")
        #expect(err.contains("no answer from the rendezvous at 198.18.0.2:7609 within 1 s; check the address and that it is running"), "\(err)")
    }
}
