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

    static let help = """
        TEXT               send a chat message to the room
        /danmaku [#RRGGBB] TEXT   a bullet comment (optional colour)
        /like [N]          like the stream (N times)
        /viewers           who is in the room
        /nick NAME         set your nickname
        /profile key=value…   nick, avatar, gender (female|male|other|unspecified), location
        /title TEXT        set the room title (host)
        /kick NAME|ID      remove a member from the room (host)
        /mute NAME|ID, /unmute NAME|ID   silence a member's chat (host)
        /invite ID         print an invite for a node id (host of a private room)
        /linkmic [TEXT]    ask the host to go on stage as co-host (viewer)
        /accept [NAME], /reject NAME [REASON]   answer a link-mic request (host)
        /hangup [NAME]     leave the stage or withdraw your request (viewer); take NAME off stage (host)
        /layout pip|split|grid   how co-hosts are placed in the mixed picture (host)
        /rooms [N]         the live rooms the rendezvous lists (page N), numbered
        /switch N|ROOM-ID  watch another listed room (viewer; the ones next to it are kept ready)
        /next, /prev       the next or previous open room in the list (viewer)
        /close             end the room for everyone (host)
        /peers             encrypted sessions (id, address, direct or relayed, round-trip time, place in the media tree)
        /stats             transport, room and media counters
        /help              this list
        /quit              leave the room cleanly
        """

    func handle(_ line: String) {
        if !line.hasPrefix("/") {
            room { try $0.chat(line) }
            return
        }
        let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
        let word = parts[0]
        let rest = parts.count > 1 ? parts[1].trimmingCharacters() : ""
        switch word {
        case "/quit", "/exit": termination.finish(.quit)
        case "/help":
            var l = JSONLine(event: "help")
            l.add("text", Self.help)
            out.emit(l, human: "\n" + Self.help, kind: "help")
        case "/danmaku":
            guard !rest.isEmpty else { return fail("usage: /danmaku [#RRGGBB] TEXT") }
            var text = rest
            var color: UInt32 = 0xFFFFFF
            if rest.hasPrefix("#"), let space = rest.firstIndex(of: " "),
               let c = UInt32(rest[rest.index(after: rest.startIndex)..<space], radix: 16), c <= 0xFFFFFF {
                color = c
                text = String(rest[rest.index(after: space)...])
            }
            room { try $0.danmaku(text, color: color) }
        case "/like":
            guard let n = rest.isEmpty ? 1 : UInt64(rest), n >= 1, n <= 1000 else { return fail("usage: /like [N], N from 1 to 1000") }
            room { try $0.like(n) }
        case "/viewers": room { _ in reporters.room.viewers() }
        case "/nick":
            guard !rest.isEmpty else { return fail("usage: /nick NAME") }
            room { r in var p = r.profile; p.nickname = rest; try r.setProfile(p) }
        case "/profile": profile(rest)
        case "/title":
            guard !rest.isEmpty else { return fail("usage: /title TEXT") }
            setTitle(rest)
        case "/kick": member(rest, usage: "/kick NAME|ID") { r, id in try r.kick(id) }
        case "/mute": member(rest, usage: "/mute NAME|ID") { r, id in try r.mute(id, true) }
        case "/unmute": member(rest, usage: "/unmute NAME|ID") { r, id in try r.mute(id, false) }
        case "/invite": invite(rest)
        case "/linkmic": room { try $0.requestLinkMic(rest) }
        case "/accept": room { try $0.acceptLinkMic(rest) }
        case "/reject":
            let args = rest.split(separator: " ", maxSplits: 1).map(String.init)
            guard let who = args.first else { return fail("usage: /reject NAME [REASON]") }
            room { try $0.rejectLinkMic(who, reason: args.count > 1 ? args[1] : "") }
        case "/hangup": room { try $0.hangUpLinkMic(rest.isEmpty ? nil : rest) }
        case "/layout": layout(rest)
        case "/rooms": rooms(rest)
        case "/switch": switchRoom(rest)
        case "/next": switcher { _ = try $0.step(1) }
        case "/prev": switcher { _ = try $0.step(-1) }
        case "/close": room { try $0.closeRoom() }
        case "/peers": peers()
        case "/stats": stats()
        default: fail("unknown command '\(word.prefix(20))'; type /help for the commands")
        }
    }

    /// A command from the studio page (`--web`): the console's actions,
    /// with text taken as typed (a chat starting with "/" is a chat).
    func handle(_ command: StudioCommand) {
        switch command {
        case .chat(let text): room { try $0.chat(text) }
        case let .danmaku(text, color): room { try $0.danmaku(text, color: color) }
        case .like(let n): room { try $0.like(UInt64(n)) }
        case .linkMic(let message): room { try $0.requestLinkMic(message) }
        case .hangUp(let who): room { try $0.hangUpLinkMic(who) }
        case .accept(let who): room { try $0.acceptLinkMic(who) }
        case let .reject(who, reason): room { try $0.rejectLinkMic(who, reason: reason) }
        case .kick(let who): member(who, usage: "kick NAME|ID") { r, id in try r.kick(id) }
        case let .mute(who, muted): member(who, usage: "mute NAME|ID") { r, id in try r.mute(id, muted) }
        case .layout(let name): layout(name)
        case .title(let text): setTitle(text)
        case .close: room { try $0.closeRoom() }
        case .viewers: room { _ in reporters.room.viewers() }
        case .camera: break  // the page's camera: StudioStage takes it, knowing which page asked
        case .rooms: switcher { _ = $0.browser.list(page: 0) }
        case .switchRoom("next"): switcher { _ = try $0.step(1) }
        case .switchRoom("prev"): switcher { _ = try $0.step(-1) }
        case .switchRoom(let id): switchRoom(id)
        }
    }

    private func setTitle(_ title: String) {
        room { r in var info = r.state?.info ?? RoomInfo(); info.title = title; try r.setRoomInfo(info) }
    }

    private func fail(_ message: String) {
        var l = JSONLine(event: "error")
        l.add("message", message)
        out.emit(l, human: message, kind: "error")
    }

    /// Runs `action` on the loop with the room node; reports a refusal.
    private func room(_ action: @escaping (RoomNode) throws -> Void) {
        live.execute { node in
            do { try action(node.room) } catch { fail("\(error)") }
        }
    }

    private func member(_ who: String, usage: String, _ action: @escaping (RoomNode, NodeID) throws -> Void) {
        guard !who.isEmpty else { return fail("usage: \(usage)") }
        room { r in try action(r, try r.member(named: who)) }
    }

    private func profile(_ text: String) {
        var pairs: [(String, String)] = []
        for item in text.split(separator: " ") {
            let kv = item.split(separator: "=", maxSplits: 1).map(String.init)
            guard kv.count == 2, ["nick", "avatar", "gender", "location"].contains(kv[0]) else {
                return fail("usage: /profile nick=NAME avatar=URL gender=female|male|other|unspecified location=PLACE")
            }
            pairs.append((kv[0], kv[1]))
        }
        room { r in
            var p = r.profile
            for (k, v) in pairs {
                switch k {
                case "nick": p.nickname = v
                case "avatar": p.avatar = v
                case "location": p.location = v
                default:
                    guard let g = RoomReporter.genders.firstIndex(of: v.lowercased()) else {
                        throw RoomActionError.invalid("gender must be female, male, other or unspecified")
                    }
                    p.gender = UInt8(g)
                }
            }
            try r.setProfile(p)
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
                if let rtt = p.rtt { o.add("rtt_ms", rtt.milliseconds) }
                if let age = p.keyAge { o.add("key_age_s", age.seconds) }
                o.add("tree", treeRole(p.id))
                return o.text
            }.joined(separator: ",") + "]"
            var l = JSONLine(event: "peers")
            l.addRaw("peers", json)
            if let t = reporters.tree.json(node, final: true) { l.addRaw("tree", t) }
            var human = peers.isEmpty ? "no sessions" : peers.map { p in
                "\(p.id.text) \(p.endpoint) \(node.core.path(to: p.id)) rtt \(p.rtt.map { $0.millisecondsText + " ms" } ?? "?")" + (treeRole(p.id).map { " · tree \($0)" } ?? "")
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
            if let media { l.addRaw("media", media) }
            if let tree = reporters.tree.json(node, final: true) { l.addRaw("tree", tree) }
            var human = StatsText.describe(transport: transport, room: node.room, node: node)
            if let line = TreeStatsReporter.describe(node) { human += "\n    " + line }
            out.emit(l, human: human, kind: "stats")
        }
    }
}
