import LVBCore
import LVBCrypto
import LVBGossip
import LVBMedia
import LVBRendezvous
import LVBRoom
import LVBTransport
import LVBWeb

/// The console: plain text is chat, `/commands` do the rest. Every command
/// runs on the node's event loop; mistakes get one `error` line with a hint.
struct ConsoleCommands: Sendable {
    let out: Output
    let live: UDPLiveNode
    let termination: Termination
    let reporters: Reporters

    /// The node's own commands; the room's (chat, likes, moderation…) come
    /// from the event kinds that declare them (`RoomEvents.commands`).
    static let nodeHelp: [(String, String)] = [
        ("/viewers", "who is in the room"),
        ("/rank", "the room's top givers of gifts, as the host ranks them"),
        ("/invite ID", "print an invite for a node id (host of a private room)"),
        ("/linkmic [TEXT]", "ask the host to go on stage as co-host (viewer)"),
        ("/accept [NAME], /reject NAME [REASON]", "answer a link-mic request (host)"),
        ("/hangup [NAME]", "leave the stage or withdraw your request (viewer); take NAME off stage (host)"),
        ("/layout pip|split|grid", "how co-hosts are placed in the mixed picture (host)"),
        ("/pk ROOM-ID|N [MINUTES]", "ask another room's host for a PK battle of MINUTES (5), found through the rendezvous (host)"),
        ("/pk accept, /pk reject [REASON]", "answer another host's PK request (host)"),
        ("/pk end", "end the PK, or withdraw the request (host)"),
        ("/rooms [N]", "the live rooms the rendezvous lists (page N), numbered"),
        ("/switch N|ROOM-ID", "watch another listed room (viewer; the ones next to it are kept ready)"),
        ("/next, /prev", "the next or previous open room in the list (viewer)"),
        ("/peers", "encrypted sessions (id, address, direct or relayed, round-trip time, place in the media tree)"),
        ("/stats", "transport, room and media counters"),
        ("/help", "this list"),
        ("/quit", "leave the room cleanly"),
    ]

    static let help = (RoomEvents.commands.filter { $0.word != nil }.map { ($0.usage, $0.summary) } + nodeHelp)
        .map { usage, summary in (usage.count < 19 ? usage.padding(to: 19) : usage + "   ") + summary }
        .joined(separator: "\n")

    /// What the studio server checks a room command's fields with (the command runs in `handle(_:)`).
    static let pageChecks: [String: (JSONValue) throws(CommandFieldError) -> Void] = Dictionary(
        uniqueKeysWithValues: RoomEvents.commands.compactMap { command in
            command.pageName.map { name in (name, { fields throws(CommandFieldError) in _ = try command.pageAction(fields) }) }
        })

    func handle(_ line: String) {
        guard line.hasPrefix("/") else { return roomCommand("", line) }
        let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
        let word = parts[0]
        let rest = parts.count > 1 ? parts[1].trimmingCharacters() : ""
        switch word {
        case "/quit", "/exit": termination.finish(.quit)
        case "/help":
            var l = JSONLine(event: "help")
            l.add("text", Self.help)
            out.emit(l, human: "\n" + Self.help, kind: "help")
        case "/viewers": room { _ in reporters.room.viewers() }
        case "/rank": room { _ in reporters.room.rank() }
        case "/invite": invite(rest)
        case "/linkmic": room { try $0.requestLinkMic(rest) }
        case "/accept": room { try $0.acceptLinkMic(rest) }
        case "/reject":
            let args = rest.split(separator: " ", maxSplits: 1).map(String.init)
            guard let who = args.first else { return fail("usage: /reject NAME [REASON]") }
            room { try $0.rejectLinkMic(who, reason: args.count > 1 ? args[1] : "") }
        case "/hangup": room { try $0.hangUpLinkMic(rest.isEmpty ? nil : rest) }
        case "/layout": layout(rest)
        case "/pk": pk(rest)
        case "/rooms": rooms(rest)
        case "/switch": switchRoom(rest)
        case "/next": switcher { _ = try $0.step(1) }
        case "/prev": switcher { _ = try $0.step(-1) }
        case "/peers": peers()
        case "/stats": stats()
        default: roomCommand(word, rest)
        }
    }

    /// A command an event kind declares (`RoomEvents.commands`), or the unknown-command line.
    private func roomCommand(_ word: String, _ arguments: String) {
        guard let command = RoomEvents.command(console: word) else {
            return fail("unknown command '\(word.prefix(20))'; type /help for the commands")
        }
        do {
            let action = try command.consoleAction(arguments)
            room { try action($0) }
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
            guard let declared = RoomEvents.command(page: name) else { return fail("unknown command \"\(name.prefix(32))\"") }
            do {
                let action = try declared.pageAction(fields)
                room { try action($0) }
            } catch {
                fail("\(error)")
            }
        case .linkMic(let message): room { try $0.requestLinkMic(message) }
        case .hangUp(let who): room { try $0.hangUpLinkMic(who) }
        case .accept(let who): room { try $0.acceptLinkMic(who) }
        case let .reject(who, reason): room { try $0.rejectLinkMic(who, reason: reason) }
        case .layout(let name): layout(name)
        case .pk(let arguments): pk(arguments)
        case .viewers: room { _ in reporters.room.viewers() }
        case .camera: break  // the page's camera: StudioStage takes it, knowing which page asked
        case .rooms:
            live.execute { node in
                guard let browser = node.role(RoomBrowser.self) else {
                    return fail("no rendezvous: the room list needs --rendezvous IP:PORT")
                }
                if !browser.list(page: 0) { fail("not connected to the rendezvous yet; try again in a moment") }
            }
        case .switchRoom("next"): switcher { _ = try $0.step(1) }
        case .switchRoom("prev"): switcher { _ = try $0.step(-1) }
        case .switchRoom(let id): switchRoom(id)
        case .seek, .pause, .play, .speed: fail("this node is in a live room: seeking, pausing and speed are for a replay's page")
        case .replay: fail("replays play from a viewer's page that lists rooms: join with --rendezvous IP:PORT (or `lvbnode join REPLAY-ID --rendezvous IP:PORT`)")
        }
    }

    private func fail(_ message: String) { out.error(message) }

    /// Runs `action` on the loop with the room node; reports a refusal.
    private func room(_ action: @escaping (RoomNode) throws -> Void) {
        live.execute { node in
            do { try action(node.room) } catch { fail("\(error)") }
        }
    }

    private func rooms(_ text: String) {
        guard let page = text.isEmpty ? 1 : Int(text), (1...10_000).contains(page) else { return fail("usage: /rooms [PAGE], from 1") }
        live.execute { node in
            guard let browser = node.roles.lazy.compactMap({ $0 as? RoomBrowser }).first else {
                return fail("no rendezvous: /rooms needs a host started with --rendezvous, or a join by room id")
            }
            browser.onAnswer = { answer in
                guard case let .page(_, total, rooms) = answer else { return }
                RoomListOutput.emit(rooms, total: total, page: page, to: out)
            }
            if !browser.list(page: page - 1) { fail("not connected to the rendezvous yet; try again in a moment") }
        }
    }

    /// Runs `action` on the loop with the node's room switcher (a viewer that knows a rendezvous).
    private func switcher(_ action: @escaping (RoomSwitcher) throws -> Void) {
        live.execute { node in
            guard let switcher = node.roles.lazy.compactMap({ $0 as? RoomSwitcher }).first else {
                return fail(node.room.isHost ? "a host stays in its own room" : "no rendezvous: switching rooms needs join … --rendezvous IP:PORT")
            }
            switcher.onRefused = { fail($0) }
            do { try action(switcher) } catch { fail("\(error)") }
        }
    }

    private func switchRoom(_ text: String) {
        if let n = Int(text), n >= 1 {
            switcher { _ = try $0.switchTo(position: n) }
        } else if text.count == 26, let bytes = try? Base32.decode(text.lowercased()), let id = try? RoomID(bytes: bytes) {
            switcher { try $0.switchTo(id: id) }
        } else {
            fail("usage: /switch N|ROOM-ID (N as /rooms numbers the rooms, or the 26-character room id)")
        }
    }

    /// `/pk ROOM-ID|N [MINUTES]`, `/pk accept`, `/pk reject [REASON]`, `/pk end`.
    private func pk(_ text: String) {
        let args = text.split(separator: " ", maxSplits: 1).map(String.init)
        guard let first = args.first else { return fail("usage: /pk ROOM-ID|N [MINUTES], /pk accept, /pk reject [REASON], /pk end") }
        let more = args.count > 1 ? args[1] : ""
        switch first.lowercased() {
        case "accept": room { try $0.acceptPK() }
        case "reject": room { try $0.rejectPK(reason: more) }
        case "end": room { try $0.endPK() }
        default:
            guard more.isEmpty || UInt8(more).map(PKMessage.minutes.contains) == true else {
                return fail("a PK lasts 1 to 60 minutes: /pk ROOM-ID|N [MINUTES]")
            }
            let minutes = UInt8(more) ?? 5
            live.execute { node in
                guard node.room.isHost else { return fail(RoomActionError.hostOnly.description) }
                guard let dialler = node.role(PKDialler.self) else {
                    return fail("a PK finds the other room through the rendezvous: start the host with --rendezvous IP:PORT")
                }
                do { try dialler.ask(first, minutes: minutes) } catch { fail("\(error)") }
            }
        }
    }

    private func layout(_ text: String) {
        guard let layout = StageLayout(rawValue: text.lowercased()) else { return fail("usage: /layout pip|split|grid") }
        live.execute { node in
            do {
                try node.publishing.setLayout(layout)
                var l = JSONLine(event: "layout")
                l.add("layout", layout.rawValue)
                out.emit(l, human: "co-hosts now shown as \(layout.rawValue)", kind: "linkmic")
            } catch { fail("\(error)") }
        }
    }

    private func invite(_ text: String) {
        guard let id = try? NodeID(text: text) else { return fail("usage: /invite NODE-ID (the 52-character id `lvbnode id` prints)") }
        room { r in
            let invite = try r.makeInvite(for: id)
            var l = JSONLine(event: "invite")
            l.add("for", id.text)
            l.add("invite", invite.text)
            out.emit(l, human: "invite for \(id.short): \(invite.text)", kind: "invite")
        }
    }

    private func peers() {
        live.execute { node in
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
    }

    private func stats() {
        live.execute { node in
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
}
