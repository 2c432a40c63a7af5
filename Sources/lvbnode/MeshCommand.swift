import ArgumentParser
import LVBCore
import LVBCrypto
import LVBMesh
import NIOCore
import NIOPosix
#if canImport(Glibc)
import Glibc
#endif

/// `lvbnode mesh`: a whole live room on this machine in one command.
struct MeshCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mesh",
        abstract: "Run a whole live room on this machine: a rendezvous, hosts, viewers relaying in a tree, link-mic guests, chat, bullet comments, likes, gifts and a PK.",
        discussion: """
            Every node is a process of this same binary on 127.0.0.1. Viewers join by room id through the \
            rendezvous and relay to each other (2 children each); guests go on stage and the host mixes them in; \
            the mesh has viewers chat, send bullet comments, like and give gifts; midway it kills a relay that has \
            children and shows them find another. With --rooms 2 or more, a quarter of the way in the first room's \
            host asks the second's for a PK (/pk, through the rendezvous) and it accepts: both rooms' pictures \
            split in two, and the likes and gifts score for each side. A dashboard shows the tree with each node's depth, frame rate, \
            glass-to-glass p95, loss and repairs, then a summary: delivery of frames and events, glass-to-glass \
            per depth, first-picture and repair times. Ctrl-C, SIGTERM or --duration stops every process it started.

            With --nat (as root) every host, viewer and guest runs in its own home: a network namespace at 192.168.1.2 \
            behind its own NAT (nftables masquerade; --hard-nats of them with random ports), the homes and the \
            rendezvous joined by an "internet" router, numbered from 198.18.0.0/15 or with --private-internet from \
            10.99.0.0/16. Nodes meet through introductions and punch through; pairs that cannot are relayed by the \
            rendezvous. The dashboard's link column says how each viewer's stream comes (direct, or relay via whom); \
            the summary counts direct and relayed links. The namespaces are removed when the mesh stops.
            """)

    @Option(name: .long, help: ArgumentHelp("Viewers, relaying to each other in a tree.", valueName: "n"))
    var viewers = 8

    @Option(name: .long, help: ArgumentHelp("Link-mic guests the hosts put on stage.", valueName: "n"))
    var guests = 1

    @Option(name: .long, help: ArgumentHelp("Rooms, each with its own host; viewers and guests are dealt out among them; the first two meet in a PK.", valueName: "n"))
    var rooms = 1

    @Option(name: .long, help: ArgumentHelp("Loss on every link, each way (0–0.5): each node but the rendezvous drops that share of what it receives (--inbound-loss).", valueName: "p"))
    var loss = 0.0

    @Flag(name: .long, help: "Put every host, viewer and guest behind its own real NAT (a network namespace masquerading with nftables), the rendezvous on an \"internet\" between them, relaying for pairs that cannot punch. Needs root, ip and nft.")
    var nat = false

    @Option(name: .long, help: ArgumentHelp("With --nat: homes behind hard NATs (a new port for every destination), spread among the viewers and guests (default: one in four).", valueName: "n"))
    var hardNats: Int?

    @Flag(name: .long, help: "With --nat: number the \"internet\" from 10.99.0.0/16 (a company WAN, a campus) instead of 198.18.0.0/15.")
    var privateInternet = false

    @Flag(name: .long, help: "With --nat: every home dual-stack, an IPv6 address from 2001:db8::/32 behind its router's stateful firewall beside its NATed IPv4; nodes list and punch both, and the link column says which links run over IPv6.")
    var ipv6 = false

    @Option(name: .long, help: ArgumentHelp("Stop after this many seconds (default: run until Ctrl-C).", valueName: "seconds"))
    var duration: Double?

    @Flag(name: .long, help: "The first room's host keeps a replay; 12 s before the end (--duration, at least 24) it closes the room and serves the replay, and a player plays it from the start and seeks to its middle: the dashboard and the summary give play → first picture and seek → picture.")
    var replay = false

    @Option(name: .long, help: ArgumentHelp("Serve the first viewer's studio page at [IP:]PORT (IP defaults to 127.0.0.1).", valueName: "[ip:]port"))
    var web: String?

    @Flag(name: .long, help: "Print JSON lines (the nodes, their figures every 2 s, events, chat, the summary) instead of the dashboard.")
    var json = false

    func validate() throws {
        guard (1...64).contains(viewers) else { throw ValidationError("--viewers must be from 1 to 64") }
        guard (0...8).contains(guests) else { throw ValidationError("--guests must be from 0 to 8") }
        guard (1...8).contains(rooms) else { throw ValidationError("--rooms must be from 1 to 8") }
        guard loss >= 0, loss <= 0.5 else { throw ValidationError("--loss must be from 0 to 0.5 (a share of datagrams, 0.1 is 10 %)") }
        if let duration { guard duration >= 6, duration.isFinite else { throw ValidationError("--duration must be at least 6 seconds") } }
        if let web { _ = try WebAddress(parsing: web) }
        if !nat, hardNats != nil || privateInternet || ipv6 { throw ValidationError("--hard-nats, --private-internet and --ipv6 go with --nat") }
        if let hardNats { guard (0...(viewers + guests)).contains(hardNats) else { throw ValidationError("--hard-nats must be from 0 to the number of viewers and guests") } }
        if replay { guard let duration, duration >= 24 else { throw ValidationError("--replay needs --duration of at least 24 seconds: the live, then 12 s of its replay") } }
    }

    func run() async throws {
        guard let executable = Self.ownExecutable() else {
            Output.fail("cannot find this program's own binary (/proc/self/exe) to start the mesh's nodes")
            throw ExitCode(1)
        }
        // The nodes' pipes: a write to one that just exited must not end the mesh.
        signal(SIGPIPE, SIG_IGN)
        var config = MeshConfig(executable: executable)
        config.viewers = viewers
        config.guests = guests
        config.rooms = rooms
        config.loss = loss
        config.duration = duration
        config.replay = replay
        if nat {
            if let why = NATLab.unavailable {
                Output.fail("--nat puts each node behind a real NAT in a network namespace, but \(why); run it as root with iproute2 and nftables installed, or without --nat")
                throw ExitCode(1)
            }
            config.nat = MeshConfig.NAT(hard: hardNats ?? (viewers + guests) / 4, internet: privateInternet ? .privateRange : .publicRange)
            config.nat?.ipv6 = ipv6
        }
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let mesh = MeshRun(config: config, loop: loop)
        let screen = MeshScreen(mesh: mesh, json: json)
        if let web {
            // The mesh page where --web says; the first viewer's studio page beside it on any free port.
            let address = try WebAddress(parsing: web)
            let page = MeshWeb(loop: loop, token: Hex.encode(SodiumRandom.shared.bytes(16)), host: address.host, port: address.port)
            do { try await page.start().get() } catch {
                Output.fail("cannot serve the mesh page on \(address): \(describeSocketError(error)); choose another with --web [IP:]PORT")
                throw ExitCode(1)
            }
            screen.web = page
            mesh.config.web = WebAddress(host: address.host, port: 0).description
            let line = "{\"event\":\"mesh_web\",\"url\":\(JSONLine.quote(page.url))}"
            if json { screen.write(line) } else { screen.write("mesh page: \(page.url) (open it in a browser on this machine)") }
            if !address.isLoopback {
                screen.write(json ? "{\"event\":\"warning\",\"message\":\"the mesh pages listen beyond this machine\"}"
                                  : "warning: the mesh pages listen on \(address.host), beyond this machine")
            }
        }
        mesh.onUpdate = { screen.update($0) }
        let termination = Termination(duration: duration)
        let startup = Task { try await mesh.start() }
        let status: Int32
        do {
            try await withTaskCancellationHandler {
                try await startup.value
            } onCancel: { startup.cancel() }
            screen.startTicking(on: loop)
            let reason = await termination.wait()
            if case .signal = reason { screen.note("stopping (signal)") }
            status = 0
        } catch {
            Output.fail("\(error); stopping the mesh")
            status = 1
        }
        screen.lastPicture()
        await mesh.stop()
        screen.finish()
        if let page = screen.web {
            // A moment for the summary to reach an open page.
            try? await Task.sleep(for: .milliseconds(200))
            try? await page.close().get()
        }
        let left = await mesh.running
        if !left.isEmpty {
            Output.fail("still running after the stop: \(left.joined(separator: ", "))")
            throw ExitCode(1)
        }
        if status != 0 { throw ExitCode(status) }
    }

    /// This binary, to run as every node.
    static func ownExecutable() -> String? {
        var buffer = [Int8](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Where the mesh is shown: redrawn in place on a terminal, as log lines
/// when stdout is not one, as JSON lines with `--json`; and with `--web`,
/// the same JSON lines to the mesh page.
final class MeshScreen: @unchecked Sendable {
    private let mesh: MeshRun
    private let json: Bool
    private let terminal: Bool
    var web: MeshWeb?
    private var task: RepeatedTask?
    private var shownHappenings = 0
    private var shownSaid = 0
    private var linked = false
    private var ticks = 0
    private let lock = NSLockish()

    init(mesh: MeshRun, json: Bool) {
        self.mesh = mesh
        self.json = json
        terminal = !json && isatty(1) == 1
    }

    /// An update from the mesh (on its loop).
    func update(_ update: MeshUpdate) {
        let model = mesh.model
        switch update {
        case .started(let name):
            if let n = model.nodes[name] { emit(MeshDashboard.startedJSON(n, at: mesh.now), human: nil, kind: .recent) }
        case .exited(let name):
            if let n = model.nodes[name] { emit(MeshDashboard.exitedJSON(n, at: mesh.now), human: nil, kind: .recent) }
        case .happening, .said:
            break
        }
        if !linked, let viewer = model.order.first(where: { model.nodes[$0]?.webURL != nil }), let url = model.nodes[viewer]?.webURL {
            linked = true
            emit(MeshDashboard.linksJSON(viewer: viewer, studio: url), human: "\(viewer)'s studio page: \(url)", kind: .links)
        }
        flushLines()
    }

    /// Happenings and chat not shown yet.
    private func flushLines() {
        let model = mesh.model
        // The model keeps the latest `kept` of each: take the new ones from what it still has.
        let newHappenings = model.happenings.suffix(max(0, min(model.happenings.count, model.happeningsCount - shownHappenings)))
        let newSaid = model.feed.suffix(max(0, min(model.feed.count, model.feedCount - shownSaid)))
        shownHappenings = model.happeningsCount
        shownSaid = model.feedCount
        for h in newHappenings { emit(MeshDashboard.happeningJSON(h), human: "\(MeshDashboard.clock(h.at)) \(h.text)", kind: .recent) }
        for s in newSaid {
            emit(MeshDashboard.saidJSON(s), human: "\(MeshDashboard.clock(s.at)) \(s.nick): \(s.kind == "danmaku" ? "» " : "")\(s.text)", kind: .recent)
        }
    }

    /// The dashboard every second on a terminal; the nodes' figures every 2 s as JSON.
    func startTicking(on loop: EventLoop) {
        task = loop.scheduleRepeatedTask(initialDelay: .zero, delay: .seconds(1)) { [self] _ in
            ticks += 1
            if terminal { draw() }
            if ticks % 2 == 0 { emit(MeshDashboard.nodesJSON(mesh.model, at: mesh.now), human: nil, kind: .nodes) }
        }
    }

    /// A line for a person (not on the dashboard, which says it all).
    func note(_ text: String) {
        if !json && !terminal { write(text) }
    }

    /// One JSON line: printed with --json, to the mesh page with --web; its human form off a terminal.
    private func emit(_ line: String, human: String?, kind: MeshWeb.Kind) {
        if json { write(line) } else if !terminal, let human { write(human) }
        web?.send(line, kind: kind)
    }

    private func draw() {
        var size = winsize()
        let rows = ioctl(1, UInt(TIOCGWINSZ), &size) == 0 && size.ws_row > 0 ? Int(size.ws_row) : 40
        let cols = size.ws_col > 0 ? Int(size.ws_col) : 100
        var lines = MeshDashboard.render(mesh.model, config: mesh.config, now: mesh.now, width: cols, height: rows)
        if let web { lines.insert("mesh page: \(web.url)", at: 1) }
        // Home (the whole screen cleared the first time), draw, clear what is left of it.
        write((ticks <= 1 ? "\u{1b}[2J" : "") + "\u{1b}[H" + lines.map { $0 + "\u{1b}[K" }.joined(separator: "\n") + "\u{1b}[J", newline: false)
    }

    /// Before the stop: the dashboard as the mesh ran, kept on screen (no more redraws).
    func lastPicture() {
        task?.cancel()
        if terminal { draw() }
    }

    /// After the stop: the last lines and the summary.
    func finish() {
        task?.cancel()
        let summary = MeshSummary(mesh.model)
        flushLines()
        emit(MeshDashboard.nodesJSON(mesh.model, at: mesh.now), human: nil, kind: .nodes)
        emit(MeshDashboard.summaryJSON(summary), human: nil, kind: .summary)
        if json { return }
        if terminal { write("") }
        for line in summary.text { write(line) }
    }

    func write(_ text: String, newline: Bool = true) {
        lock.withLock {
            fputs(newline ? text + "\n" : text, stdout)
            fflush(stdout)
        }
    }
}
