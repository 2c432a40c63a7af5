import Logging
import LVBCore
import LVBCrypto
import LVBTransport
import NIOCore
import NIOPosix

/// Runs one node (host or joiner) until it is told to stop: binds the socket,
/// prints `ready` with the join ticket, dials if asked, reports every session
/// event, serves console commands, and leaves cleanly (bye to every peer).
struct NodeRunner {
    let options: NodeOptions
    let role: Hello.Role
    let defaultPort: UInt16
    /// Whom to dial after start, if anyone: candidate addresses and the expected identity.
    var dial: (addresses: [PeerAddress], expecting: NodeID?)?

    func run() async -> Int32 {
        let level = Logger.Level(rawValue: LogLevelName.parse(options.logLevel) ?? "warning") ?? .warning
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let out = Output(json: options.json)
        let identity: Identity
        do {
            let (loaded, note) = try options.identity.load()
            identity = loaded
            if let note { out.emit(info("identity", note), human: note, kind: "identity") }
        } catch {
            Output.fail("\(error)")
            return 1
        }
        let listen: PeerAddress
        do { listen = try options.listenAddress(defaultPort: defaultPort) } catch {
            Output.fail("\(error)")
            return 64
        }

        let group = MultiThreadedEventLoopGroup.singleton
        let termination = Termination(duration: options.duration)
        var config = TransportConfig()
        config.hello = Hello(agent: "lvbnode/\(CoreConstants.version)", role: role)
        let reporter = EventReporter(out: out, termination: termination, dialling: dial != nil)

        let node: UDPNode
        do {
            node = try await UDPNode.start(identity: identity, listen: listen, config: config, group: group) { event in
                reporter.report(event)
            }
        } catch {
            Output.fail("cannot listen on \(listen): \(describeSocketError(error)); choose another address or port with --listen")
            return 1
        }
        let ticket = JoinTicket(host: identity.nodeID, addresses: LocalAddresses.advertised(for: node.localAddress))
        var ready = JSONLine(event: "ready")
        ready.add("id", identity.nodeID.text)
        ready.add("listen", node.localAddress.description)
        ready.add("ticket", ticket.text)
        ready.add("role", role == .host ? "host" : "viewer")
        out.emit(ready, human: "node \(identity.nodeID.text) listening on \(node.localAddress)\n    ticket: \(ticket.text)", kind: "ready")

        if let dial {
            var line = JSONLine(event: "connecting")
            line.add("to", dial.addresses.map(\.description).joined(separator: ","))
            line.add("pattern", dial.expecting == nil ? "XX" : "IK")
            out.emit(line, human: "connecting to \(dial.addresses.map(\.description).joined(separator: ", "))"
                         + (dial.expecting == nil ? " (no ticket: the host's id will be shown for you to check)" : ""), kind: "connect")
            node.execute { core in core.connect(to: dial.addresses, expecting: dial.expecting) }
        }

        let commands = ConsoleCommands(out: out, node: node, termination: termination)
        Console { line in commands.handle(line) }.start()

        let reason = await termination.wait()
        await node.close()
        let stats = (try? await node.submit { $0.stats }) ?? node.core.stats
        var bye = JSONLine(event: "exit")
        bye.add("reason", reason.text)
        bye.addRaw("stats", StatsJSON.encode(stats))
        out.emit(bye, human: "leaving (\(reason.text))", kind: "exit")
        if case .failed(let why) = reason { Output.fail(why) }
        return reason.status
    }

    private func info(_ event: String, _ message: String) -> JSONLine {
        var l = JSONLine(event: event)
        l.add("message", message)
        return l
    }
}

extension ExitReason {
    var text: String {
        switch self {
        case .signal(let s): s == 2 ? "interrupted" : "terminated"
        case .duration: "duration elapsed"
        case .quit: "quit"
        case .failed(let why): why
        }
    }
}

func describeSocketError(_ error: Error) -> String {
    if let e = error as? IOError {
        switch e.errnoCode {
        case 98: return "address already in use"
        case 99: return "address not available on this machine"
        case 13: return "permission denied"
        default: return "\(e)"
        }
    }
    return "\(error)"
}
