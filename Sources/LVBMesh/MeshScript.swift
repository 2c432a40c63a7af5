import LVBCore
import LVBWeb
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// The mesh's script: what each node does once running (a guest asks for
/// the stage, a host accepts; chat, bullet comments, likes and gifts in
/// turn), and the scheduled happenings (a PK, the kill of a relay, the end
/// of a live and its replay's player).
extension MeshRun {
    /// The first room's host asks the second's for a PK (found through the rendezvous) that lasts past the mesh's end.
    func askForAPK() {
        guard !ending, hostNames.count >= 2, let other = model.nodes[hostNames[1]]?.roomID, let child = children[hostNames[0]] else { return }
        model.note("\(hostNames[0]) asks \(hostNames[1]) for a PK", at: now)
        child.send("/pk \(other) 60")
        onUpdate?(.happening)
    }

    /// `--replay`: when the first room's host ends its live (nil: never).
    var closeAt: Double? {
        guard config.replay, let duration = config.duration else { return nil }
        return duration - MeshConfig.replayPhase
    }

    /// The first room's host closes its room; it goes on serving the replay.
    func endTheLive() {
        guard !ending, let host = hostNames.first, let child = children[host] else { return }
        model.note("\(host) closes its room", at: now)
        child.send("/close")
        onUpdate?(.happening)
    }

    /// The player: plays the replay its host serves, through the rendezvous,
    /// as a user would (`join REPLAY-ID`); the rendezvous lists the replay a
    /// moment after the host says it serves, so the player is started then.
    func startPlayer() {
        guard !ending, !playerStarted, let id = model.replay?.id, let rendezvous else { return }
        playerStarted = true
        loop.scheduleTask(in: .seconds(1)) {
            Task { [self] in
                do {
                    _ = try await self.launch("replay-1", role: .player, room: 0, arguments: ["join", id, "--rendezvous", rendezvous])
                } catch {
                    await self.onLoop {
                        guard !self.ending else { return }
                        self.model.note("the replay's player did not start: \(error)", at: self.now)
                        self.onUpdate?(.happening)
                    }
                }
            }
        }
    }

    /// What a line from `name` sets off: a guest asks for the stage once in; a host accepts.
    func react(_ name: String, _ value: JSONValue) {
        guard let event = value["event"]?.string else { return }
        switch event {
        case "admitted":
            if model.nodes[name]?.role == .guest { children[name]?.send("/linkmic a co-host from the mesh") }
            onUpdate?(.happening)
        case "linkmic_request":
            if model.nodes[name]?.role == .host, let nick = value["nick"]?.string { children[name]?.send("/accept \(nick)") }
        case "pk_request":
            if model.nodes[name]?.role == .host { children[name]?.send("/pk accept") }
        case "tree", "linkmic_started", "linkmic_ended", "pk_started", "pk_ended":
            onUpdate?(.happening)
        case "serving":
            startPlayer()
            onUpdate?(.happening)
        case "replay_frame":
            // Two seconds in, the player seeks to the middle.
            if model.nodes[name]?.role == .player, !seekAsked, let duration = model.replay?.durationMs {
                seekAsked = true
                loop.scheduleTask(in: .seconds(2)) { [self] in
                    children[name]?.send("/seek \((duration / 200).rounded() / 10)")
                }
            }
            onUpdate?(.happening)
        case "chat", "danmaku":
            onUpdate?(.said)
        default:
            break
        }
    }

    /// One scripted action: a chat line, a bullet comment, likes or a gift, from the next viewer in turn (the host now and then; it gives no gifts).
    func scriptTurn() {
        guard !ending, config.duration.map({ now < $0 - Self.quietBeforeEnd }) ?? true else { return }
        // The room that ends for its replay falls quiet before, as the mesh does before its end.
        let quietRoom = closeAt.map { now >= $0 - Self.quietBeforeEnd } == true ? 0 : nil
        let speakers = model.order.filter {
            guard let n = model.nodes[$0], n.isRunning, n.killedAt == nil, n.room != quietRoom else { return false }
            return n.role == .host || n.admitted != nil
        }
        guard !speakers.isEmpty else { return }
        turn += 1
        let name = speakers[turn % speakers.count]
        guard let node = model.nodes[name], let room = node.room, let child = children[name] else { return }
        switch turn % 4 {
        case 3 where node.role != .host:
            // Roses and hearts mostly, now and then a rocket flying across the picture.
            let gift = ["rose", "heart", "rose", "rocket"][(turn / 4) % 4]
            child.send("/gift \(gift)")
        case 0:
            let text = "hello #\(turn) from \(name)"
            model.sent(text, kind: "chat", by: name, room: room, at: now)
            child.send(text)
        case 1:
            let colours = ["#FF5A5A", "#FFD84A", "#5AD7FF", "#9BFF5A"]
            let text = "bullet #\(turn) from \(name)"
            model.sent(text, kind: "danmaku", by: name, room: room, at: now)
            child.send("/danmaku \(colours[turn % colours.count]) \(text)")
        default:
            child.send("/like \(1 + turn % 3)")
        }
    }

    /// Midway: kills (SIGKILL) a viewer that relays to others, to show the tree healing.
    func killARelay() {
        guard !ending else { return }
        let relaysWithChildren = model.order.filter { name in
            // (The viewer whose studio page the mesh page links to is a leaf.)
            guard let n = model.nodes[name], n.role == .viewer, n.isRunning, let id = n.id else { return false }
            return !model.children(of: id).isEmpty
        }
        guard let victim = relaysWithChildren.first, let child = children[victim] else {
            model.note("no relay had children to kill", at: now)
            onUpdate?(.happening)
            return
        }
        model.killing(victim, at: now)
        child.kill()
        onUpdate?(.happening)
    }
}
