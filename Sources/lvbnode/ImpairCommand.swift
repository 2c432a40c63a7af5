import ArgumentParser
import LVBCore
import LVBTransport
import NIOPosix

/// `lvbnode impair`: a UDP relay that drops, delays, duplicates and reorders
/// datagrams, for testing over real sockets on kernels without netem.
struct ImpairCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "impair",
        abstract: "Relay UDP between --listen and --to with loss, delay, jitter, duplication and reordering.",
        discussion: "Point a joiner at the --listen address instead of the host's. Each client gets its own upstream socket, so the host sees every client as a separate address.")

    @Option(name: .long, help: ArgumentHelp("Address to accept clients on.", valueName: "ip:port"))
    var listen: String
    @Option(name: .long, help: ArgumentHelp("Address to forward to (the host).", valueName: "ip:port"))
    var to: String
    @Option(name: .long, help: "Probability (0–1) that a datagram is dropped, each direction.")
    var loss: Double = 0
    @Option(name: .long, help: ArgumentHelp("One-way delay in milliseconds.", valueName: "ms"))
    var delay: Double = 0
    @Option(name: .long, help: ArgumentHelp("Extra uniform random delay up to this many milliseconds.", valueName: "ms"))
    var jitter: Double = 0
    @Option(name: .long, help: "Probability (0–1) that a datagram is delivered twice.")
    var duplicate: Double = 0
    @Option(name: .long, help: "Probability (0–1) that a datagram is held back 20 ms so later ones overtake it.")
    var reorder: Double = 0
    @Option(name: .long, help: "Seed of the random choices (same seed, same pattern).")
    var seed: UInt64 = 1
    @Option(name: .long, help: ArgumentHelp("Stop after this many seconds.", valueName: "seconds"))
    var duration: Double?
    @Flag(name: .long, help: "Print JSON lines instead of text.")
    var json = false

    var impairment: Impairment {
        Impairment(loss: loss, delay: .microseconds(Int64(delay * 1000)), jitter: .microseconds(Int64(jitter * 1000)),
                   duplicate: duplicate, reorder: reorder)
    }

    func validate() throws {
        _ = try parseAddress(listen, what: "--listen")
        _ = try parseAddress(to, what: "--to")
        do { try impairment.validate() } catch { throw ValidationError("\(error)") }
        guard delay >= 0, jitter >= 0 else { throw ValidationError("--delay and --jitter must not be negative") }
        if let duration, !(duration > 0) { throw ValidationError("--duration must be a positive number of seconds") }
    }

    func run() async throws {
        let out = Output(json: json)
        let group = MultiThreadedEventLoopGroup.singleton
        let relay: ImpairmentRelay
        do {
            relay = try await ImpairmentRelay.start(listen: try parseAddress(listen, what: "--listen"), target: try parseAddress(to, what: "--to"),
                                                    upstream: impairment, downstream: impairment, seed: seed, group: group)
        } catch {
            Output.fail("cannot listen on \(listen): \(describeSocketError(error)); choose another address with --listen")
            throw ExitCode(1)
        }
        var ready = JSONLine(event: "ready")
        ready.add("listen", relay.localAddress.description)
        ready.add("to", to)
        out.emit(ready, human: "relaying \(relay.localAddress) → \(to) with loss \(loss), delay \(delay) ms, jitter \(jitter) ms", kind: "ready")
        let termination = Termination(duration: duration)
        _ = await termination.wait()
        let stats = await relay.stats()
        try? await relay.close()
        var l = JSONLine(event: "exit")
        let json = RelayStatsJSON.encode(stats)
        l.addRaw("stats", json)
        out.emit(l, human: json, kind: "exit")
    }
}

/// Relay counters as a JSON object.
enum RelayStatsJSON {
    static func encode(_ s: RelayStats) -> String {
        func direction(_ d: RelayStats.Direction) -> String {
            "{\"received\":\(d.received),\"forwarded\":\(d.forwarded),\"dropped\":\(d.dropped),\"duplicated\":\(d.duplicated),\"rejected\":\(d.rejected)}"
        }
        return "{\"upstream\":\(direction(s.upstream)),\"downstream\":\(direction(s.downstream)),\"clients\":\(s.clients)}"
    }
}
