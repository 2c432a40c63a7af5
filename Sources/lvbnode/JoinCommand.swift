import ArgumentParser
import LVBCore
import LVBCrypto
import LVBTransport

/// `lvbnode join`: connect to a room's host by ticket or address.
struct JoinCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "join",
        abstract: "Join a live room by its ticket, or by the host's IP:PORT.",
        discussion: """
            With a ticket the session uses Noise IK (the ticket carries the host's key). With IP:PORT \
            (or localhost:PORT) it uses Noise XX and prints the host's id so you can check it. \
            Listens on an ephemeral port unless --listen says otherwise.
            """)

    @Argument(help: ArgumentHelp("A join ticket (lvb1…), IP:PORT, [IPv6]:PORT or localhost:PORT.", valueName: "peer"))
    var peer: String

    @OptionGroup var node: NodeOptions

    func validate() throws { _ = try target() }

    /// The addresses to dial and the identity expected there.
    func target() throws -> (addresses: [PeerAddress], expecting: NodeID?) {
        let peer = self.peer.trimmingCharacters()
        if peer.lowercased().hasPrefix(JoinTicket.prefix) {
            do {
                let ticket = try JoinTicket(text: peer)
                return (ticket.addresses, ticket.host)
            } catch { throw ValidationError("\(error)") }
        }
        do { return ([try PeerAddress(parsing: peer)], nil) } catch {
            throw ValidationError("'\(peer)' is neither a join ticket (lvb1…) nor an address: use IP:PORT, [IPv6]:PORT or localhost:PORT")
        }
    }

    func run() async throws {
        var runner = NodeRunner(options: node, role: .viewer, defaultPort: 0)
        runner.dial = try target()
        let status = await runner.run()
        if status != 0 { throw ExitCode(status) }
    }
}
