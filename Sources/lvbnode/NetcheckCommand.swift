#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import LVBCore
import LVBRendezvous
import LVBTransport

/// `lvbnode netcheck`: what this machine's NAT does, measured against
/// rendezvous (RFC 5780 behaviour discovery with one server IP), as
/// `tailscale netcheck` reports it.
struct NetcheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "netcheck",
        abstract: "Report this machine's NAT: reflexive addresses, mapping, filtering, hard or not, IPv6, round trips.",
        discussion: """
            Sends STUN Binding requests from one new UDP socket to each rendezvous's port and then to its \
            alternate port (OTHER-ADDRESS in its answer; `lvbnode rendezvous --alternate-port`), and from a \
            second socket to its port asking for the answer from the alternate one (CHANGE-REQUEST). The mapping is \
            endpoint-independent when both ports see the same reflexive address, endpoint-dependent (a hard \
            NAT: peers meet it directly only over IPv6, by port prediction or through a relay) when they \
            differ, and no NAT when the reflexive address is one of this machine's own. Port-preserving: the \
            reflexive port is the socket's own. Filtering is address-and-port-dependent when the answer from \
            the other port never comes, not port-dependent when it does. Give an IPv6 rendezvous \
            (--rendezvous [2001:db8::2]:7600) to measure IPv6 too; this machine's global IPv6 addresses are \
            listed either way. Exits 1 when a rendezvous does not answer.
            """)

    @Option(name: .long, help: ArgumentHelp("A rendezvous, IP:PORT or [IPv6]:PORT (repeatable; each is probed).", valueName: "ip:port"))
    var rendezvous: [String] = []

    @Option(name: .long, help: ArgumentHelp("Seconds to wait for each rendezvous (default \(Int(RendezvousConstants.netcheckTimeout.seconds))).", valueName: "s"))
    var timeout: Double?

    @Flag(name: .long, help: "Print one JSON object on one line instead of readable text.")
    var json = false

    func validate() throws {
        guard !rendezvous.isEmpty else { throw ValidationError("give the rendezvous with --rendezvous IP:PORT") }
        for r in rendezvous { _ = try parseAddress(r, what: "--rendezvous") }
        if let timeout, !(timeout > 0 && timeout <= 60) {
            throw ValidationError("--timeout must be more than 0 and at most 60 seconds")
        }
    }

    func run() async throws {
        let servers = try rendezvous.map { try parseAddress($0, what: "--rendezvous") }
        let wait = timeout.map { Duration.milliseconds(Int64($0 * 1000)) } ?? RendezvousConstants.netcheckTimeout
        let result: NetCheck.Result
        do { result = try await NetCheck.run(servers, timeout: wait) } catch {
            Output.fail("\(error)")
            throw ExitCode(1)
        }
        let silent = result.observations.filter { !$0.answered }
        // No rendezvous answered: one line, nothing to report.
        guard silent.count < result.observations.count else {
            Output.fail(RendezvousQuery.Failure.noAnswer(silent.first?.server ?? servers[0], wait).description)
            throw ExitCode(1)
        }
        let global6 = result.localHosts.map { PeerAddress(host: $0, port: 0) }.filter(\.isGlobalIPv6).map(\.hostString).sorted()
        let v4 = result.report(ipv6: false), v6 = result.report(ipv6: true)
        if json {
            print(NetcheckOutput.json(result, v4: v4, v6: v6, global6: global6).text)
        } else {
            print(NetcheckOutput.text(result, v4: v4, v6: v6, global6: global6), terminator: "")
        }
        fflush(stdout)
        for o in silent {
            Output.fail(RendezvousQuery.Failure.noAnswer(o.server, wait).description)
        }
        if !silent.isEmpty { throw ExitCode(1) }
    }
}
