import LVBCore
import LVBCrypto
import LVBGossip
import LVBRoom
import LVBTestSupport
import Testing

/// A page command's fields without the web layer.
private struct Fields: CommandFields {
    var values: [String: Any] = [:]
    func stringField(_ key: String) -> String? { values[key] as? String }
    func numberField(_ key: String) -> Double? { values[key] as? Double }
    func boolField(_ key: String) -> Bool? { values[key] as? Bool }
    func has(_ key: String) -> Bool { values[key] != nil }
}

/// The commands and notices the event kinds declare, run against real room
/// nodes: what the console and the page get from the table is what the
/// room then does and shows.
@Suite struct RoomCommandTests {
    @Test func everyCommandIsFoundByItsOneName() {
        let words = RoomEvents.commands.compactMap(\.word)
        let pages = RoomEvents.commands.compactMap(\.pageName)
        #expect(Set(words).count == words.count && Set(pages).count == pages.count)
        #expect(Set(words) == ["", "/danmaku", "/like", "/nick", "/profile", "/title", "/chatrate", "/kick", "/mute", "/unmute", "/close", "/gift",
                              "/quiz", "/answer", "/reveal", "/linkmic", "/accept", "/reject", "/hangup", "/layout", "/pk", "/viewers", "/rank"])
        #expect(Set(pages) == ["chat", "danmaku", "like", "title", "chat_rate", "kick", "mute", "close", "gift",
                              "quiz", "answer", "reveal", "linkmic", "accept", "reject", "hangup", "layout", "pk", "viewers"])
        #expect(RoomEvents.commands.filter { $0.word != nil }.allSatisfy { !$0.usage.isEmpty && !$0.summary.isEmpty })
        #expect(RoomEvents.command(console: "/fly") == nil && RoomEvents.command(page: "fly") == nil)
    }

    @Test func aConsoleMistakeGetsTheUsage() {
        func usage(_ word: String, _ arguments: String) -> String? {
            do {
                _ = try RoomEvents.command(console: word)?.consoleAction(arguments)
                return nil
            } catch { return "\(error)".split(separator: " — ").first.map(String.init) }
        }
        #expect(usage("/like", "0") == "usage: /like [N]")
        #expect(throws: RoomActionError.invalid("usage: /like [N] — like the stream (N times, N from 1 to 1000)")) {
            try RoomEvents.command(console: "/like")?.consoleAction("0")
        }
        #expect(usage("/like", "1001") == "usage: /like [N]")
        #expect(usage("/like", "") == nil && usage("/like", "1000") == nil)
        #expect(usage("/danmaku", "") == "usage: /danmaku [#RRGGBB] TEXT")
        #expect(usage("/danmaku", "#00ff00 ") == "usage: /danmaku [#RRGGBB] TEXT")
        #expect(usage("/kick", "") == "usage: /kick NAME|ID")
        #expect(usage("/profile", "colour=blue") == "usage: /profile key=value…")
        #expect(usage("/profile", "gender=robot") == "usage: /profile key=value…")
        #expect(usage("/close", "now") == "usage: /close")
    }

    @Test func aPageMistakeNamesTheField() {
        func error(_ name: String, _ values: [String: Any]) -> CommandFieldError? {
            do {
                _ = try RoomEvents.command(page: name)?.pageAction(Fields(values: values))
                return nil
            } catch { return error }
        }
        #expect(error("chat", [:]) == .missing("text"))
        #expect(error("chat", ["text": "  "]) == .invalid("text"))
        #expect(error("danmaku", ["text": "x", "color": "red"]) == .invalid("color"))
        #expect(error("danmaku", ["text": "x", "color": "#00FF00"]) == nil)
        #expect(error("like", ["count": 101.0]) == .invalid("count"))
        #expect(error("like", ["count": 2.5]) == .invalid("count"))
        #expect(error("like", [:]) == nil)
        #expect(error("kick", ["id": "two words"]) == .invalid("id"))
        #expect(error("mute", ["id": "ben", "muted": "no"]) == .invalid("muted"))
        #expect(error("title", ["text": 5.0]) == .invalid("text"))
        #expect(error("close", [:]) == nil)
        // Link-mic and its layout, and PK, declared by their features.
        #expect(error("linkmic", [:]) == nil && error("linkmic", ["text": "hi"]) == nil)
        #expect(error("linkmic", ["text": String(repeating: "a", count: CommandLimits.maxText + 1)]) == .invalid("text"))
        #expect(error("hangup", [:]) == nil && error("hangup", ["id": "abc"]) == nil)
        #expect(error("accept", ["id": "abc"]) == nil)
        #expect(error("accept", ["id": "two words"]) == .invalid("id"))
        #expect(error("reject", [:]) == .missing("id"))
        #expect(error("reject", ["id": "a", "reason": 5.0]) == .invalid("reason"))
        #expect(error("reject", ["id": "abc", "reason": "busy now"]) == nil)
        #expect(error("layout", ["layout": "grid"]) == nil)
        #expect(error("layout", ["layout": "cube"]) == .invalid("layout"))
        #expect(error("viewers", [:]) == nil)
        #expect(error("pk", [:]) == .missing("do"))
        #expect(error("pk", ["do": "fly"]) == .invalid("do"))
        #expect(error("pk", ["do": "ask", "room": "D73NARKO5YOA6KRGK5MYVPF5YE"]) == .invalid("room"))
        #expect(error("pk", ["do": "ask", "room": "d73narko5yoa6krgk5myvpf5ye", "minutes": 61.0]) == .invalid("minutes"))
        #expect(error("pk", ["do": "reject", "reason": 5.0]) == .invalid("reason"))
    }

    /// PK's commands are typed: the console's text and the page's fields mean the same.
    @Test func pkCommandsAreTyped() throws {
        let room = "d73narko5yoa6krgk5myvpf5ye"
        #expect(PKCommand(console: room) == .ask(room, minutes: PKCommand.defaultMinutes))
        #expect(PKCommand(console: "3 10") == .ask("3", minutes: 10))
        #expect(PKCommand(console: "accept") == .accept)
        #expect(PKCommand(console: "reject busy right now") == .reject(reason: "busy right now"))
        #expect(PKCommand(console: "reject") == .reject(reason: ""))
        #expect(PKCommand(console: "END") == .end)
        #expect(PKCommand(console: "") == nil && PKCommand(console: "\(room) 61") == nil && PKCommand(console: "\(room) soon") == nil)
        #expect(try PKCommand(page: Fields(values: ["do": "ask", "room": room, "minutes": 10.0])) == .ask(room, minutes: 10))
        #expect(try PKCommand(page: Fields(values: ["do": "ask", "room": room])) == .ask(room, minutes: PKCommand.defaultMinutes))
        #expect(try PKCommand(page: Fields(values: ["do": "reject", "reason": "busy right now"])) == .reject(reason: "busy right now"))
        #expect(try PKCommand(page: Fields(values: ["do": "end"])) == .end)
        // A node command on a room node alone says what it needs.
        let layout = try #require(RoomEvents.command(console: "/layout")).consoleAction("grid")
        let (_, host, _) = simRoom(viewers: 0, seed: 3, loss: 0)
        #expect(throws: RoomActionError.self) { try layout(host.room) }
    }

    @Test func commandsFromTheTableActOnTheRoomAndShowAsTheirKindSays() throws {
        let (net, host, viewers) = simRoom(viewers: 2, seed: 27, loss: 0)
        #expect(net.run(until: { viewers.allSatisfy(\.room.isAdmitted) }, timeout: .seconds(30)))
        net.run(for: .seconds(2))
        let ben = viewers[0]
        func console(_ sim: RoomSim, _ word: String, _ arguments: String) throws {
            let action = try #require(RoomEvents.command(console: word)).consoleAction(arguments)
            try action(sim.room)
        }
        func page(_ sim: RoomSim, _ name: String, _ values: [String: Any]) throws {
            let action = try #require(RoomEvents.command(page: name)).pageAction(Fields(values: values))
            try action(sim.room)
        }
        try console(ben, "/nick", "ben")
        net.run(for: .seconds(1))
        try console(ben, "", "hello from the console")
        try page(ben, "danmaku", ["text": "wow", "color": "#00ff00"])
        try console(ben, "/like", "3")
        try page(viewers[1], "like", ["count": 2.0])
        try page(host, "title", ["text": "Night songs"])
        // Host-only commands refuse a viewer with the room layer's reason.
        #expect(throws: RoomActionError.hostOnly) { try console(ben, "/title", "mine") }
        net.run(for: .seconds(2))  // ben's lines reach the host before it mutes ben
        try console(host, "/mute", "ben")
        net.run(for: .seconds(2))

        let names = RoomNames { id in host.room.state?.profile(of: id)?.nickname ?? id.short }
        let notices = host.changes.compactMap { RoomEvents.notice(for: $0, names: names) }
        let lines = notices.map(\.line.text)
        let ids = ben.id.text
        #expect(lines.contains { $0.hasPrefix(#"{"event":"chat","id":"\#(ids)","nick":"ben","text":"hello from the console","time":"#) })
        #expect(lines.contains(##"{"event":"danmaku","id":"\##(ids)","nick":"ben","text":"wow","color":"#00ff00","lane":0}"##))
        #expect(lines.contains { $0.hasPrefix(#"{"event":"like","id":"\#(ids)","nick":"ben","count":3,"total":"#) })
        #expect(lines.contains(#"{"event":"like","id":"\#(viewers[1].id.text)","nick":"\#(viewers[1].id.short)","count":2,"total":5}"#)
                || lines.contains(#"{"event":"like","id":"\#(viewers[1].id.text)","nick":"\#(viewers[1].id.short)","count":2,"total":2}"#))
        #expect(host.room.state?.likeTotal == 5)
        #expect(lines.contains { $0.hasPrefix(#"{"event":"room_info","title":"Night songs""#) })
        #expect(lines.contains(#"{"event":"muted","id":"\#(ids)","nick":"ben","muted":true}"#))
        #expect(notices.contains { $0.tag == "danmaku" && $0.human == "ben ≫ wow" })
        #expect(notices.contains { $0.tag == "join" && $0.line.text.hasPrefix(#"{"event":"joined","id":"\#(ids)""#) })
        // The mute holds: the room refuses ben's next chat, with the reason the user reads.
        #expect(throws: RoomActionError.refused("you are muted by the host")) { try console(ben, "", "still here?") }
        try console(host, "/close", "")
        net.run(for: .seconds(2))
        #expect(ben.changes.compactMap { RoomEvents.notice(for: $0, names: names) }.last?.line.text == #"{"event":"room_closed"}"#)
    }
}
