import LVBCore
import LVBCrypto
import LVBGossip
import LVBMedia
import LVBRendezvous
import LVBRoom
import LVBTransport
import LVBWeb

/// The console: plain text is chat, `/commands` do the rest. Every command
/// is declared in one registry: the room's, by the event kinds and features
/// that bring them (`RoomEvents.commands`), then the node's own few below;
/// `/help` and the page's checks are made from it. Every command runs on the
/// node's event loop; mistakes get one `error` line with a hint.
struct ConsoleCommands: Sendable {
    let out: Output
    let live: UDPLiveNode
    /// Every command, the room's first, then the node's own.
    let all: [RoomCommand]

    init(out: Output, live: UDPLiveNode, termination: Termination, reporters: Reporters) {
        self.out = out
        self.live = live
        all = RoomEvents.commands + Self.own(out: out, termination: termination, reporters: reporters)
    }

    /// `/help`: every console command's usage and what it does.
    var help: String { Self.help(all) }

    private static func help(_ all: [RoomCommand]) -> String {
        all.filter { $0.word != nil }
            .map { c in (c.usage.count < 19 ? c.usage.padding(to: 19) : c.usage + "   ") + c.summary }
            .joined(separator: "\n")
    }

    /// What the studio server checks a page command's fields with (the command runs in `handle(_:)`).
    var pageChecks: [String: (JSONValue) throws(CommandFieldError) -> Void] {
        Dictionary(uniqueKeysWithValues: all.compactMap { command in
            command.pageName.map { name in (name, { fields throws(CommandFieldError) in _ = try command.pageAction(fields) }) }
        })
    }

    func handle(_ line: String) {
        guard line.hasPrefix("/") else { return run("", line) }
        let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
        run(parts[0] == "/exit" ? "/quit" : parts[0], parts.count > 1 ? parts[1].trimmingCharacters() : "")
    }

    /// The command `word` declares (`""`: chat), or the unknown-command line.
    private func run(_ word: String, _ arguments: String) {
        guard let command = all.first(where: { $0.word == word }) else {
            return fail("unknown command '\(word.prefix(20))'; type /help for the commands")
        }
        do {
            let action = try command.consoleAction(arguments)
            node { try action($0) }
        } catch {
            fail("\(error)")
        }
    }

    /// A command from the studio page (`--web`): the console's actions,
    /// with text taken as typed (a chat starting with "/" is a chat).
    func handle(_ command: StudioCommand) {
        switch command {
        case let .room(name, fields):
            // The server checked the fields (`pageChecks`); a name it let through has a declaration.
            guard let declared = all.first(where: { $0.pageName == name }) else { return fail("unknown command \"\(name.prefix(32))\"") }
            do {
                let action = try declared.pageAction(fields)
                node { try action($0) }
            } catch {
                fail("\(error)")
            }
        case .camera: break  // the page's camera: StudioStage takes it, knowing which page asked
        case .rooms:
            live.execute { node in
                guard let browser = node.role(RoomBrowser.self) else {
                    return fail("no rendezvous: the room list needs --rendezvous IP:PORT")
                }
                if !browser.list(page: 0) { fail("not connected to the rendezvous yet; try again in a moment") }
            }
        case .switchRoom("next"): node { [out] in _ = try Self.switcher($0, out).step(1) }
        case .switchRoom("prev"): node { [out] in _ = try Self.switcher($0, out).step(-1) }
        case .switchRoom(let id): run("/switch", id)
        case .seek, .pause, .play, .speed: fail("this node is in a live room: seeking, pausing and speed are for a replay's page")
        case .replay: fail("replays play from a viewer's page that lists rooms: join with --rendezvous IP:PORT (or `lvbnode join REPLAY-ID --rendezvous IP:PORT`)")
        }
    }

    private func fail(_ message: String) { out.error(message) }

    /// Runs `action` on the loop with the node; reports a refusal.
    private func node(_ action: @escaping (LiveNode) throws -> Void) {
        live.execute { [out] node in
            do { try action(node) } catch { out.error("\(error)") }
        }
    }

    /// The node's own console commands (the room's come from its kinds and features).
    private static func own(out: Output, termination: Termination, reporters: Reporters) -> [RoomCommand] {
        var list: [RoomCommand] = []
        list.append(RoomCommand(node: "/invite ID", "print an invite for a node id (host of a private room)") { text -> RoomCommand.NodeAction? in
            guard let id = try? NodeID(text: text) else { return nil }
            return { try invite(id, $0.room, out) }
        })
        list.append(RoomCommand(node: "/rooms [N]", "the live rooms the rendezvous lists (page N), numbered") { text -> RoomCommand.NodeAction? in
            guard let page = text.isEmpty ? 1 : Int(text), (1...10_000).contains(page) else { return nil }
            return { try rooms(page: page, $0, out) }
        })
        list.append(RoomCommand(node: "/switch N|ROOM-ID", "watch another listed room (viewer; the ones next to it are kept ready)") { text -> RoomCommand.NodeAction? in
            if let n = Int(text), n >= 1 { return { node in _ = try switcher(node, out).switchTo(position: n) } }
            guard let id = RoomID(text: text.lowercased()) else { return nil }
            return { node in try switcher(node, out).switchTo(id: id) }
        })
        list.append(RoomCommand(node: "/next", "the next open room in the list (viewer)") { text -> RoomCommand.NodeAction? in
            guard text.isEmpty else { return nil }
            return { node in _ = try switcher(node, out).step(1) }
        })
        list.append(RoomCommand(node: "/prev", "the previous open room in the list (viewer)") { text -> RoomCommand.NodeAction? in
            guard text.isEmpty else { return nil }
            return { node in _ = try switcher(node, out).step(-1) }
        })
        list.append(RoomCommand(node: "/peers", "encrypted sessions (id, address, direct or relayed, round-trip time, place in the media tree)") { _ -> RoomCommand.NodeAction? in
            { peers($0, out, reporters) }
        })
        list.append(RoomCommand(node: "/stats", "transport, room and media counters") { _ -> RoomCommand.NodeAction? in { stats($0, out, reporters) } })
        list.append(RoomCommand(node: "/help", "this list") { _ -> RoomCommand.NodeAction? in
            { _ in
                let text = help(RoomEvents.commands + own(out: out, termination: termination, reporters: reporters))
                out.emit(JSONLine(event: "help", ("text", text)), human: "\n" + text, kind: "help")
            }
        })
        list.append(RoomCommand(node: "/quit", "leave the room cleanly") { _ -> RoomCommand.NodeAction? in { _ in termination.finish(.quit) } })
        return list
    }

    /// The node's room switcher (a viewer that knows a rendezvous); its later refusals become error lines.
    private static func switcher(_ node: LiveNode, _ out: Output) throws(RoomActionError) -> RoomSwitcher {
        guard let switcher = node.role(RoomSwitcher.self) else {
            throw .refused(node.room.isHost ? "a host stays in its own room" : "no rendezvous: switching rooms needs join … --rendezvous IP:PORT")
        }
        switcher.onRefused = { out.error($0) }
        return switcher
    }

    private static func rooms(page: Int, _ node: LiveNode, _ out: Output) throws(RoomActionError) {
        guard let browser = node.role(RoomBrowser.self) else {
            throw .refused("no rendezvous: /rooms needs a host started with --rendezvous, or a join by room id")
        }
        browser.onAnswer = { answer in
            guard case let .page(_, total, rooms) = answer else { return }
            RoomListOutput.emit(rooms, total: total, page: page, to: out)
        }
        if !browser.list(page: page - 1) { throw .refused("not connected to the rendezvous yet; try again in a moment") }
    }

    private static func invite(_ id: NodeID, _ room: RoomNode, _ out: Output) throws {
        let invite = try room.makeInvite(for: id)
        var l = JSONLine(event: "invite")
        l.add("for", id.text)
        l.add("invite", invite.text)
        out.emit(l, human: "invite for \(id.short): \(invite.text)", kind: "invite")
    }

    private static func peers(_ node: LiveNode, _ out: Output, _ reporters: Reporters) {
        let peers = node.core.peers
        let tree = node.tree, children = Set(tree?.children ?? [])
        // What each peer is to this node in the media tree, if anything.
        func treeRole(_ id: NodeID) -> String? {
            guard let tree else { return nil }
            if id == tree.parent { return "parent" }
            if children.contains(id) { return "child" }
            return id == tree.backup ? "backup" : nil
        }
        let json = "[" + peers.map { p in
            var o = JSONLine()
            o.add("id", p.id.text)
            o.add("address", p.endpoint.description)
            o.add("established", p.established)
            o.add("path", node.core.path(to: p.id))
            o.add("link", node.core.link(to: p.id))
            if let rtt = p.rtt { o.add("rtt_ms", rtt.milliseconds) }
            if let age = p.keyAge { o.add("key_age_s", age.seconds) }
            o.add("tree", treeRole(p.id))
            return o.text
        }.joined(separator: ",") + "]"
        var l = JSONLine(event: "peers")
        l.addRaw("peers", json)
        if let t = reporters.tree.json(node, final: true) { l.addRaw("tree", t) }
        var human = peers.isEmpty ? "no sessions" : peers.map { p in
            "\(p.id.text) \(p.endpoint) \(node.core.link(to: p.id)) rtt \(p.rtt.map { $0.millisecondsText + " ms" } ?? "?")" + (treeRole(p.id).map { " · tree \($0)" } ?? "")
        }.joined(separator: "\n    ")
        if let line = TreeStatsReporter.describe(node) { human += "\n    " + line }
        out.emit(l, human: human, kind: "peers")
    }

    private static func stats(_ node: LiveNode, _ out: Output, _ reporters: Reporters) {
        let transport = node.core.stats, media = reporters.media.json(final: true)
        var l = JSONLine(event: "stats")
        l.addRaw("transport", StatsJSON.encode(transport))
        l.addRaw("room", StatsJSON.encode(room: node.room))
        l.add("nat", node.core.config.nat.name)
        if let media { l.addRaw("media", media) }
        if let tree = reporters.tree.json(node, final: true) { l.addRaw("tree", tree) }
        var human = StatsText.describe(transport: transport, room: node.room, node: node)
        if let line = TreeStatsReporter.describe(node) { human += "\n    " + line }
        out.emit(l, human: human, kind: "stats")
    }
}
