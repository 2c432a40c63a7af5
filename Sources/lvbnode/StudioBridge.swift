import ArgumentParser
import LVBCore
import LVBCrypto
import LVBMedia
import LVBRendezvous
import LVBRoom
import LVBWeb
import NIOCore

/// `--web`: the studio page served by this node. Every event the node
/// prints goes to the page as its JSON line (the `--json` vocabulary); the
/// stream this node shows goes as encoded frames straight from its jitter
/// buffer (a host's page gets its own picture); the page's commands run as
/// the console's do.
final class StudioBridge: @unchecked Sendable {
    let server: StudioServer
    private let live: UDPLiveNode
    private let stage: StudioStage
    private let reporters: Reporters
    private var status: String?
    private var layout: StageLayout?
    /// Audio was concealed since the last packet handed to the page.
    private var audioGap = false
    private var statusTask: RepeatedTask?
    /// Room browsing, when this node is a viewer that knows a rendezvous.
    private var rooms: StudioRooms?
    /// A replay from the room list, played to the page while the node stays in its room.
    private var replay: StudioReplay?
    private let commands: ConsoleCommands
    private let out: Output

    /// Without video for this long a viewer's page says the host is away.
    static let hostAway: Duration = .seconds(3)

    /// Starts serving at `address` on the node's loop; nil (with the reason
    /// printed) when the address cannot be bound.
    static func start(_ address: WebAddress, live: UDPLiveNode, out: Output, commands: ConsoleCommands, reporters: Reporters) async -> StudioBridge? {
        guard let server = await serve(address, loop: live.udp.eventLoop, out: out, setUp: { server in
            server.onCommand = { commands.handle($0) }
            server.roomCommands = commands.pageChecks
        }) else { return nil }
        let bridge = StudioBridge(server: server, live: live, reporters: reporters, out: out, commands: commands)
        server.onConnect = { [unowned bridge] in bridge.greeting() }
        server.onCommand = { [unowned bridge] in bridge.command($0) }
        try? await live.submit { node in bridge.wire(node) }
        return bridge
    }

    /// Serves the page at `address` on `loop` with every line the node
    /// prints teed to it, `setUp` run before the first page can connect;
    /// says where (the `web` event, and a warning beyond this machine).
    /// Nil, with the reason printed, when the address cannot be bound.
    static func serve(_ address: WebAddress, loop: EventLoop, out: Output, setUp: (StudioServer) -> Void) async -> StudioServer? {
        let token = Hex.encode(SodiumRandom.shared.bytes(16))
        let server = StudioServer(loop: loop, token: token, host: address.host, port: address.port)
        setUp(server)
        do { try await server.start().get() } catch {
            Output.fail("cannot serve the studio page on \(address): \(describeSocketError(error)); choose another with --web [IP:]PORT")
            return nil
        }
        out.tee = { [weak server] text in server?.broadcast(text) }
        var line = JSONLine(event: "web")
        line.add("url", server.url)
        let bound = WebAddress(host: address.host, port: server.port)
        line.add("listen", bound.description)
        out.emit(line, human: "studio page: \(server.url) (open it in a browser on this machine)", kind: "web")
        if !address.isLoopback {
            let message = "the studio page listens on \(bound), beyond this machine: anyone who learns its URL can act as you in the room"
            out.emit(JSONLine(event: "warning", ("message", message)), human: message, kind: "warning")
        }
        return server
    }

    private init(server: StudioServer, live: UDPLiveNode, reporters: Reporters, out: Output, commands: ConsoleCommands) {
        self.server = server
        self.live = live
        self.reporters = reporters
        self.commands = commands
        stage = StudioStage(server: server, live: live, out: out)
        self.out = out
    }

    /// A page's command, on the loop: the replay's while one plays from the
    /// room list (a switch ends it), else the console's.
    private func command(_ command: StudioCommand) {
        guard let replay else { return commands.handle(command) }
        switch command {
        case .replay(let id):
            replay.start(id)
        case .seek, .pause, .play, .speed:
            guard let state = replay.state else { return commands.handle(command) }
            state.page(command)
        case .switchRoom(let to):
            guard replay.stopPlaying() else { return commands.handle(command) }
            // A click on the room the node is still in: the live is back already.
            if to != live.node?.room.room.text { commands.handle(command) }
        default:
            commands.handle(command)
        }
    }

    /// On the loop: media taps, the viewer list and the room's status.
    private func wire(_ node: LiveNode) {
        // Frames are put together for the page only while a page is open (on the loop, as the server's clients are).
        node.viewing.onHostVideo = { [unowned self] frame in
            if let replay, replay.state != nil { return replay.keep(StudioMediaFrame(frame)) }
            if server.clientCount > 0 { server.broadcast(StudioMediaFrame(frame)) }
        }
        node.viewing.onHostAudio = { [unowned self] frame in
            // Concealed audio has no packet to hand on; the next real one says a gap came before it.
            guard frame.encoded != nil else {
                audioGap = true
                return
            }
            let gap = audioGap
            audioGap = false
            guard server.clientCount > 0, replay?.state == nil, var f = StudioMediaFrame(frame) else { return }
            f.afterLoss = gap
            server.broadcast(f)
        }
        // A host's page shows its own picture; a co-host's shows the host's stream only.
        node.publishing.tap(video: { [server, weak node] frame in
            if server.clientCount > 0, node?.room.isHost == true, let f = StudioMediaFrame(published: frame) { server.broadcast(f) }
        })
        stage.wire(node)
        rooms = StudioRooms.wire(node, server: server) { [unowned self] in greeting() }
        if rooms != nil, let browser = node.role(RoomSwitcher.self)?.browser {
            let replay = StudioReplay(server: server, browser: browser, core: node.core, loop: live.udp.eventLoop, out: out) { [unowned node] in
                node.room.room
            }
            replay.isNeeded = { [unowned node, unowned browser] peer in node.isNeeded(peer) || browser.servers.contains(peer) }
            node.register(replay)
            rooms?.playing = { [unowned replay] in replay.state?.id }
            replay.greeting = { [unowned self] in greeting() }
            self.replay = replay
        }
        layout = node.publishing.mixer?.layout
        reporters.room.onMembersChanged = { [unowned self, weak node] in
            if let viewers = node?.room.viewersNotice() { server.broadcast(viewers.line.text) }
            if let node { updateLayout(node) }
        }
        // Runs on the node's loop already.
        statusTask = live.udp.eventLoop.scheduleRepeatedTask(initialDelay: .milliseconds(500), delay: .milliseconds(500)) { [unowned self, weak node] _ in
            if let node {
                updateStatus(node)
                updateLayout(node)
            }
        }
    }

    /// What a page gets first: the replay's greeting while one plays from the room list, else the room's.
    private func greeting() -> [String] {
        if let state = replay?.state { return state.greeting() + [rooms?.listLine].compactMap { $0 } }
        return liveGreeting()
    }

    /// Who this node is, the room, who is in it, its status.
    private func liveGreeting() -> [String] {
        guard let node = live.node else { return [] }
        let room = node.room
        var hello = JSONLine(event: "hello")
        hello.add("role", room.isHost ? "host" : "viewer")
        hello.add("id", room.core.nodeID.text)
        hello.add("nick", room.profile.nickname ?? room.core.nodeID.short)
        hello.add("room", room.room.text)
        // Just after a switch the new room's own state may not be here yet: its announcement's title meanwhile.
        hello.add("title", room.state?.info.title ?? rooms?.announcedTitle(room.room))
        hello.add("likes", Int(room.state?.likeTotal ?? 0))
        hello.add("channels", AudioReceiverConfig().channels)
        // What a reloaded page would otherwise forget: the host's layout, a viewer's own link-mic.
        hello.add("layout", node.publishing.mixer?.layout.rawValue)
        if !room.isHost {
            switch room.linkMicPhase {
            case .idle: hello.add("linkmic", "idle")
            case .asking: hello.add("linkmic", "asking")
            case .onStage: hello.add("linkmic", "onstage")
            }
        }
        // Whether this node has stage sources of its own (--video/--audio): without, a co-host's page offers its camera at once.
        hello.add("stage_sources", node.plan.publish.map { !$0.isEmpty } ?? false)
        // The gifts its gift button offers.
        hello.addRaw("gifts", "[" + GiftCatalogue.all.map { g in
            var o = JSONLine()
            o.add("name", g.name)
            o.add("glyph", g.glyph)
            o.add("points", Int(g.points))
            o.add("big", g.big)
            return o.text
        }.joined(separator: ",") + "]")
        // The page shows its room list and binds the switching gestures only then.
        hello.add("rendezvous", rooms != nil)
        var out = [hello.text]
        if let list = rooms?.listLine { out.append(list) }
        if let viewers = room.viewersNotice() { out.append(viewers.line.text) }
        if let rank = room.rankNotice() { out.append(rank.line.text) }
        // Each room feature's own (link-mic's queue, a PK battle or request, an open quiz…).
        out += room.featureLines(reporters.room.names).map(\.text)
        let now = currentStatus(node)
        status = now
        out.append(Self.statusLine(now))
        return out
    }

    /// A host's layout follows the guest count until one is chosen: the
    /// page hears of each change (stage changes and the mixer's own order
    /// of events may differ, so the status timer looks too).
    private func updateLayout(_ node: LiveNode) {
        guard let now = node.publishing.mixer?.layout, now != layout else { return }
        layout = now
        server.broadcast(JSONLine(event: "layout", ("layout", now.rawValue)).text)
    }

    private func updateStatus(_ node: LiveNode) {
        guard replay?.state == nil else { return }
        let now = currentStatus(node)
        guard now != status else { return }
        status = now
        server.broadcast(Self.statusLine(now))
    }

    private func currentStatus(_ node: LiveNode) -> String {
        let room = node.room
        if room.state?.isClosed == true { return "closing" }
        if room.isHost { return "live" }
        guard room.isAdmitted else { return "entering" }
        let heard = node.media.lastHeard(from: room.host)
        if let heard, SystemClock.shared.now() - heard < Self.hostAway { return "live" }
        return heard == nil ? "entering" : "host_away"
    }

    private static func statusLine(_ status: String) -> String {
        JSONLine(event: "status", ("status", status)).text
    }

    func stop() async {
        statusTask?.cancel()
        try? await server.close().get()
    }
}

/// Where `--web` serves: `PORT` (127.0.0.1) or `IP:PORT`; port 0 takes any free one (the `web` event names it).
struct WebAddress: CustomStringConvertible {
    let host: String
    let port: Int

    init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    init(parsing text: String) throws(ValidationError) {
        if let port = UInt16(text) {
            self.host = "127.0.0.1"
            self.port = Int(port)
            return
        }
        guard let address = try? PeerAddress(parsing: text) else {
            throw ValidationError("--web \(text): give PORT or IP:PORT, PORT from 0 (any free one) to 65535 (e.g. 8080 or 127.0.0.1:8080)")
        }
        host = address.hostString
        port = Int(address.port)
    }

    var isLoopback: Bool { host == "127.0.0.1" || host == "::1" || host.hasPrefix("127.") }

    var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
