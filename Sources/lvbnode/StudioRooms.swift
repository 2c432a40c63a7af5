import LVBCore
import LVBGossip
import LVBRendezvous
import LVBReplay
import LVBRoom
import LVBWeb

/// Room browsing on the studio page (a node that knows a rendezvous: a
/// viewer switches to a listed room, a host picks one for a PK): the
/// list the node's rendezvous gives, as a `room_list` event each time it
/// changes (a page of the list, a newer thumbnail), live rooms first and
/// then replays (`"replay": true`, played by `StudioReplay`); each listed
/// room's thumbnail at `GET /thumbs/ROOM-ID.jpg` (a replay's: its live's
/// last, at `GET /thumbs/REPLAY-ID.jpg`); and after a switch, a fresh
/// greeting for the new room so the page's widgets start over. The switch
/// itself is the console's (`ConsoleCommands`, `/next`, `/prev`, `/switch`).
/// Everything here runs on the node's loop.
final class StudioRooms {
    private let server: StudioServer
    private unowned let browser: RoomBrowser
    /// A viewer's switcher (nil: a host's page, whose own room is "current").
    private weak var switcher: RoomSwitcher?
    private unowned let node: LiveNode
    /// The page's greeting for the room the node is in now.
    private let greeting: () -> [String]
    /// The replay the page plays from the list, if one.
    var playing: () -> ReplayID? = { nil }

    /// Wires room browsing for `node` if it browses (nil: no rendezvous).
    static func wire(_ node: LiveNode, server: StudioServer, greeting: @escaping () -> [String]) -> StudioRooms? {
        guard let browser = node.role(RoomBrowser.self) else { return nil }
        let switcher = node.role(RoomSwitcher.self)
        let rooms = StudioRooms(server: server, browser: browser, switcher: switcher, node: node, greeting: greeting)
        browser.fetchesThumbnails = true
        // Replays play from a viewer's page; a host's lists the live rooms it may challenge.
        browser.listsReplays = switcher != nil
        browser.onListed = { [unowned rooms] in rooms.sendList() }
        browser.onThumbnail = { [unowned rooms] _ in rooms.sendList() }
        server.thumbnail = { [unowned browser] text in
            guard let bytes = try? Base32.decode(text), let id = try? RoomID(bytes: bytes) else { return nil }
            // A listed replay's id: its room's thumbnail.
            let room = (try? ReplayID(text: text)).flatMap { browser.replay($0)?.card.info.room } ?? id
            return browser.thumbnails[room]?.jpeg
        }
        // After the node's own report of a switch (the `switched` line), the page's fresh start.
        let reported = node.onOutput
        node.onOutput = { [unowned rooms] output in
            reported?(output)
            if case .switched = output { rooms.switched() }
        }
        return rooms
    }

    private init(server: StudioServer, browser: RoomBrowser, switcher: RoomSwitcher?, node: LiveNode, greeting: @escaping () -> [String]) {
        self.server = server
        self.browser = browser
        self.switcher = switcher
        self.node = node
        self.greeting = greeting
    }

    /// The title the room's signed announcement gives, until the room's own state says.
    func announcedTitle(_ room: RoomID) -> String? { browser.room(room)?.info.title }

    /// The list as the page shows it, if one came yet.
    var listLine: String? {
        guard !browser.pages.isEmpty else { return nil }
        let rooms = browser.rooms
        let playing = playing()
        let current = playing == nil ? switcher?.currentRoom ?? node.room.room : nil
        var items = rooms.map { a in
            var o = JSONLine()
            o.add("id", a.room.text)
            o.add("title", a.info.title)
            o.add("nick", a.hostNickname ?? a.host.short)
            o.add("viewers", Int(a.viewers))
            o.add("likes", Int(a.likes))
            o.add("access", ["open", "password", "invite-only"][Int(min(a.access, 2))])
            o.add("current", a.room == current)
            // The thumbnail's version, so the page loads a newer one (0: none).
            o.add("thumb", Int(clamping: browser.thumbnails[a.room]?.seq ?? 0))
            return o.text
        }
        // Then the replays, newest first as the rendezvous lists them.
        items += browser.replays.map { r in
            let info = r.card.info
            var o = JSONLine()
            o.add("id", r.card.id.text)
            o.add("replay", true)
            o.add("title", info.title)
            o.add("nick", info.host.short)
            o.add("duration_ms", Int(r.card.durationMs))
            o.add("started_ms", Int(clamping: info.startedMs))
            o.add("holders", Int(r.holders))
            o.add("current", r.card.id == playing)
            o.add("thumb", Int(clamping: browser.thumbnails[info.room]?.seq ?? 0))
            return o.text
        }
        var line = JSONLine(event: "room_list")
        line.addRaw("rooms", "[" + items.joined(separator: ",") + "]")
        return line.text
    }

    private func sendList() {
        if server.clientCount > 0, let line = listLine { server.broadcast(line) }
    }

    private func switched() {
        for line in greeting() { server.broadcast(line) }
    }
}
