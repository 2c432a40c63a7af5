import LVBCore
import LVBTransport

/// The console commands a running node understands on stdin.
struct ConsoleCommands: Sendable {
    let out: Output
    let node: UDPNode
    let termination: Termination

    static let help = """
        /peers   list sessions (id, address, round-trip time, key age)
        /stats   transport counters
        /help    this list
        /quit    leave cleanly
        """

    func handle(_ line: String) {
        let word = line.split(separator: " ", maxSplits: 1).first.map(String.init) ?? ""
        switch word {
        case "/quit", "/exit":
            termination.finish(.quit)
        case "/help":
            var l = JSONLine(event: "help")
            l.add("text", Self.help)
            out.emit(l, human: "\n" + Self.help, kind: "help")
        case "/peers":
            node.execute { core in
                let peers = core.peers
                let json = "[" + peers.map { p in
                    var o = JSONLine(event: "peer")
                    o.add("id", p.id.text)
                    o.add("address", p.endpoint.description)
                    o.add("established", p.established)
                    if let rtt = p.rtt { o.add("rtt_ms", rtt.milliseconds) }
                    if let age = p.keyAge { o.add("key_age_s", age.seconds) }
                    return o.text
                }.joined(separator: ",") + "]"
                var l = JSONLine(event: "peers")
                l.addRaw("peers", json)
                let human = peers.isEmpty ? "no sessions" : peers.map { p in
                    "\(p.id.text) \(p.endpoint) rtt \(p.rtt.map { $0.millisecondsText + " ms" } ?? "?")"
                }.joined(separator: "\n    ")
                out.emit(l, human: human, kind: "peers")
            }
        case "/stats":
            node.execute { core in
                var l = JSONLine(event: "stats")
                l.addRaw("transport", StatsJSON.encode(core.stats))
                out.emit(l, human: StatsJSON.encode(core.stats), kind: "stats")
            }
        default:
            var l = JSONLine(event: "error")
            let message = "unknown input '\(line.prefix(40))'; type /help for the commands"
            l.add("message", message)
            out.emit(l, human: message, kind: "error")
        }
    }
}
