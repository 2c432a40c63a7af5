import ArgumentParser
import LVBTransport

/// `lvbnode host`: start a room and print its join ticket.
struct HostCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "host",
        abstract: "Start a live room and print its join ticket.",
        discussion: "Listens on 0.0.0.0:7400 unless --listen says otherwise, accepts encrypted sessions from joiners, and runs until /quit, SIGINT/SIGTERM or --duration.")

    @OptionGroup var node: NodeOptions

    func run() async throws {
        let status = await NodeRunner(options: node, role: .host, defaultPort: 7400).run()
        if status != 0 { throw ExitCode(status) }
    }
}
