import LVBWeb

/// What `lvbnode mesh` knows about the processes it runs, built only from
/// the JSON lines each prints (`--json`), as an outsider reading them would:
/// who is where in the media tree, how the stream and the room's events
/// reach each viewer, and what happened. Times are seconds since the mesh
/// started. Not thread-safe: the mesh feeds it on one event loop.
public final class MeshModel {
    public enum Role: String, Sendable {
        /// `player`: plays the first room's replay after the room ends (`--replay`).
        case rendezvous, host, viewer, guest, player
    }

    /// The first room's replay (`--replay`): kept by its host, served after
    /// the room ends, played by the mesh's player from the start and after a seek.
    public struct Replay: Equatable, Sendable {
        public let id: String
        /// When the host ended the live and began serving the replay.
        public var servingAt: Double?
        public var durationMs: Double?
        /// Play → first picture, and seek → first picture (ms), with the time sought (ms into the replay).
        public var firstFrameMs: Double?
        public var seekToMs: Double?
        public var seekFrameMs: Double?
        public var frames: Int?
        public var ended = false
    }

    /// One process of the mesh.
    /// With two rooms or more: the first two rooms' PK, as their hosts saw it.
    public struct PK: Equatable, Sendable {
        public var startedAt: Double?
        /// Each room's own score as its host last showed it (room index → points).
        public var scores: [Int: Int] = [:]
        /// The other side's score as each room's host showed it, proven by the other host's keepalive.
        public var theirs: [Int: Int] = [:]
        /// How it ended for each room (reason, result), if it did.
        public var ended: [Int: (reason: String, result: String)] = [:]

        public static func == (a: PK, b: PK) -> Bool {
            a.startedAt == b.startedAt && a.scores == b.scores && a.theirs == b.theirs
                && a.ended.mapValues { "\($0.reason) \($0.result)" } == b.ended.mapValues { "\($0.reason) \($0.result)" }
        }
    }

    public struct Node {
        public let name: String
        public let role: Role
        /// Which room (0-based; the rendezvous: nil).
        public let room: Int?
        public var pid: Int32 = 0
        public var id: String?
        public var listen: String?
        public var roomID: String?
        public var admitted: Double?
        /// `first_frame`'s own figure: join (or start) to the first picture, ms.
        public var firstFrameMs: Double?
        public var parent: String?
        /// How the stream comes from the parent: "direct", "relay via ID", "relay" (`tree.parent_path` of its stats).
        public var parentPath: String?
        /// Where the parent is (`tree.parent_address`): an IPv6 one in brackets.
        public var parentAddress: String?
        /// The kind of that link (`tree.parent_link`): "direct IPv4", "direct IPv6", "birthday IPv4", "rendezvous relay via ID", "member relay via ID".
        public var parentLink: String?
        /// Its established sessions straight to the peer, and through a relay (its last stats line).
        public var sessionsDirect: Int?
        public var sessionsRelayed: Int?
        public var depth: Int?
        public var children = 0
        public var failovers = 0
        public var fps: Double?
        public var latencyP95: Double?
        /// Share of video packets lost on the way in the last stats interval (before repair).
        public var loss: Double?
        /// Video packets repaired (retransmitted on NACK) so far.
        public var repaired = 0
        public var onStage = false
        /// The last cumulative counters of a stats line: packets, lost, recovered.
        var lastCounts: (packets: Int, lost: Int, recovered: Int)?
        /// From the exit line: the whole run's figures.
        public var finalFrames: Int?
        public var finalSkipped: Int?
        public var finalP50: Double?
        public var finalP95: Double?
        public var finalDepth: Int?
        public var depthAtStop: Int?
        /// Its link to its parent as the mesh began to stop (`link(of:)`).
        public var linkAtStop: String?
        /// How it ended: its exit status, or killed by the mesh on purpose.
        public var exitStatus: Int32?
        public var killedAt: Double?
        /// Texts of the chat lines and bullet comments it showed.
        public var seen: Set<String> = []
        /// Its studio page (`--web`), as its `web` event gave it.
        public var webURL: String?

        public var isViewer: Bool { role == .viewer || role == .guest }
        public var isRunning: Bool { exitStatus == nil }
    }

    /// A chat line or bullet comment as a viewer showed it (the feed).
    public struct Said: Equatable {
        public let at: Double
        public let kind: String
        public let nick: String
        public let text: String
    }

    /// Something worth a line on the dashboard: joined, relay moved, on stage, killed…
    public struct Happening: Equatable {
        public let at: Double
        public let text: String
    }

    /// A scripted chat line or bullet comment: who should show it.
    public struct Scripted {
        public let text: String
        public let kind: String
        public let room: Int
        public let at: Double
        /// Viewers and host of the room running when it was sent.
        public var audience: Set<String>
    }

    /// The relay killed midway: when, and the children it had then.
    public struct Kill {
        public let name: String
        public let id: String
        public let at: Double
        public let children: [String]
        /// Child → seconds from the kill to its next parent.
        public var recovered: [String: Double] = [:]
    }

    /// `--nat`: which home each node is behind and which NATs are hard.
    public struct NATPlan: Sendable {
        public let internet: String
        public let homes: [String: Int]
        public let hard: Set<Int>
    }

    public internal(set) var nat: NATPlan?
    /// The mesh is stopping its processes.
    public private(set) var isStopping = false
    public private(set) var order: [String] = []
    public private(set) var nodes: [String: Node] = [:]
    public private(set) var feed: [Said] = []
    public private(set) var happenings: [Happening] = []
    public private(set) var scripted: [Scripted] = []
    public private(set) var likes: [Int: Int] = [:]
    public private(set) var kill: Kill?
    public private(set) var replay: Replay?
    public private(set) var pk: PK?
    /// Gift points the hosts were given (each gift event as its host showed it).
    public private(set) var giftPoints: [Int: Int] = [:]
    public private(set) var gifts = 0
    /// Happenings and feed lines ever recorded (the lists keep the latest `kept`).
    public private(set) var happeningsCount = 0
    public private(set) var feedCount = 0
    /// Lines that were not JSON (counted, not fatal: a child's stray output).
    public private(set) var unreadable = 0

    /// Lines of the feed and happenings kept for the dashboard.
    public static let kept = 200

    public init() {}

    public func add(_ name: String, role: Role, room: Int?, pid: Int32) {
        guard nodes[name] == nil else { return }
        order.append(name)
        var node = Node(name: name, role: role, room: room)
        node.pid = pid
        nodes[name] = node
    }

    /// Who feeds `node`: its parent in the media tree, or for a guest on
    /// stage (which leaves the tree) its host, which sends it the mix directly.
    public func feeder(of node: Node) -> String? {
        if let parent = node.parent { return parent }
        guard node.onStage, let room = node.room else { return nil }
        return nodes(in: room).first { $0.role == .host }?.id
    }

    public func name(of id: String) -> String? {
        order.first { nodes[$0]?.id == id }
    }

    /// A node's link to its parent for people: "direct", "direct IPv6",
    /// "birthday" (direct, by birthday punching), "relay via NAME" (the
    /// node relaying: the rendezvous, a member), "relay"; nil when unknown.
    public func link(of node: Node) -> String? {
        guard node.parent != nil, let path = node.parentPath else { return nil }
        let prefix = "relay via "
        if path == "direct", node.parentAddress?.hasPrefix("[") == true { return "direct IPv6" }
        if path == "direct", node.parentLink == "birthday IPv4" { return "birthday" }
        guard path.hasPrefix(prefix) else { return path }
        let id = String(path.dropFirst(prefix.count))
        // Whose relay: the rendezvous's, or a member's (`parent_link`).
        let whose = node.parentLink?.hasPrefix("member") == true ? " (member)" : node.parentLink?.hasPrefix("rendezvous") == true ? " (rendezvous)" : ""
        return "relay via " + (name(of: id) ?? String(id.prefix(8))) + whose
    }

    public func nodes(in room: Int) -> [Node] {
        order.compactMap { nodes[$0] }.filter { $0.room == room }
    }

    /// Records a happening for the dashboard (and the `--json` stream).
    public func note(_ text: String, at: Double) {
        happenings.append(Happening(at: at, text: text))
        happeningsCount += 1
        if happenings.count > Self.kept { happenings.removeFirst(happenings.count - Self.kept) }
    }

    /// A chat line or bullet comment the mesh made `sender` say.
    public func sent(_ text: String, kind: String, by sender: String, room: Int, at: Double) {
        let audience = Set(nodes(in: room).filter { $0.name != sender && $0.isRunning && ($0.role == .host || $0.admitted != nil) }.map(\.name))
        scripted.append(Scripted(text: text, kind: kind, room: room, at: at, audience: audience))
    }

    /// The running nodes whose parent in the media tree is node `id`.
    public func children(of id: String) -> [String] {
        order.filter { nodes[$0]?.parent == id && nodes[$0]?.isRunning == true }
    }

    /// The relay is being killed now: remember its children.
    public func killing(_ name: String, at: Double) {
        guard let node = nodes[name], let id = node.id else { return }
        let children = children(of: id)
        kill = Kill(name: name, id: id, at: at, children: children)
        nodes[name]?.killedAt = at
        note("killed relay \(name) (\(children.count) \(children.count == 1 ? "child" : "children"): \(children.joined(separator: ", ")))", at: at)
    }

    /// The mesh is stopping: each node's depth now is its depth for the
    /// summary (as everyone leaves at once, the exit lines' own depths are
    /// those of a tree coming apart).
    public func stopping() {
        isStopping = true
        for name in order {
            guard let node = nodes[name] else { continue }
            // (Worked out first: assigning through `nodes[name]?` holds the dictionary while the right side runs.)
            let link = link(of: node)
            nodes[name]?.depthAtStop = node.depth
            nodes[name]?.linkAtStop = link
        }
    }

    public func exited(_ name: String, status: Int32, at: Double) {
        guard nodes[name]?.exitStatus == nil else { return }
        nodes[name]?.exitStatus = status
        if nodes[name]?.killedAt == nil, status != 0 { note("\(name) exited with status \(status)", at: at) }
    }

    /// One line a process printed (nil: not JSON).
    public func ingest(_ name: String, _ line: JSONValue?, at now: Double) {
        guard nodes[name] != nil else { return }
        guard let value = line, let event = value["event"]?.string else {
            unreadable += 1
            return
        }
        var node = nodes[name]!
        defer { nodes[name] = node }
        switch event {
        case "ready":
            node.id = value["id"]?.string
            node.listen = value["listen"]?.string
            if let room = value["room"]?.string { node.roomID = room }
        case "admitted":
            node.admitted = now
            if let room = value["room"]?.string { node.roomID = room }
            note("\(name) joined", at: now)
        case "web":
            node.webURL = value["url"]?.string
        case "first_frame":
            if node.firstFrameMs == nil { node.firstFrameMs = value["ms"]?.number }
        case "tree":
            let parent = value["parent"]?.string
            let moved = node.parent != nil && parent != nil && parent != node.parent
            node.parent = parent
            node.depth = value["depth"]?.number.map { Int($0) }
            node.failovers = Int(value["failovers"]?.number ?? 0)
            if let parent, let k = kill, k.children.contains(name), parent != k.id, kill?.recovered[name] == nil {
                kill?.recovered[name] = now - k.at
                note("\(name) recovered under \(self.name(of: parent) ?? String(parent.prefix(8))) \(Self.seconds(now - k.at)) after the kill", at: now)
            } else if moved, let parent {
                note("relay moved: \(name) now under \(self.name(of: parent) ?? String(parent.prefix(8)))", at: now)
            }
        case "stats":
            stats(&node, value)
        case "chat", "danmaku":
            guard let text = value["text"]?.string else { break }
            node.seen.insert(text)
            // One viewer's copy makes the feed (every node sees each line).
            if name == feedWitness(room: node.room) {
                feed.append(Said(at: now, kind: event, nick: value["nick"]?.string ?? "?", text: text))
                feedCount += 1
                if feed.count > Self.kept { feed.removeFirst(feed.count - Self.kept) }
            }
        case "like":
            if node.role == .host, let room = node.room, let total = value["total"]?.number { likes[room] = Int(total) }
        case "gift" where node.role == .host:
            gifts += Int(value["count"]?.number ?? 1)
            if let room = node.room { giftPoints[room, default: 0] += Int(value["points"]?.number ?? 0) }
        case "pk_started", "pk_score", "pk_ended":
            guard node.role == .host, let room = node.room else { break }
            if pk == nil { pk = PK(startedAt: now) }
            if event == "pk_started" { note("\(name) in a PK with «\(value["title"]?.string ?? "?")»", at: now) }
            pk?.scores[room] = Int(value["ours"]?.number ?? 0)
            pk?.theirs[room] = Int(value["theirs"]?.number ?? 0)
            if event == "pk_ended", let reason = value["reason"]?.string, let result = value["result"]?.string {
                pk?.ended[room] = (reason, result)
                note("\(name)'s PK is over (\(reason)): \(result) \(pk?.scores[room] ?? 0) : \(pk?.theirs[room] ?? 0)", at: now)
            }
        case "linkmic_started":
            if node.role == .host, let id = value["id"]?.string {
                let who = self.name(of: id) ?? value["nick"]?.string ?? "?"
                nodes[who]?.onStage = true
                if who == name { node.onStage = true }
                note("\(who) is on stage with \(name)", at: now)
            }
        case "linkmic_ended":
            if node.role == .host, let id = value["id"]?.string, let who = self.name(of: id) {
                nodes[who]?.onStage = false
                note("\(who) left the stage", at: now)
            }
        case "replay" where node.role == .host:
            if replay == nil, let id = value["id"]?.string { replay = Replay(id: id) }
        case "serving":
            replay?.servingAt = now
            note("\(name) ended its live; serving its replay", at: now)
        case "replay_info":
            replay?.durationMs = value["duration_ms"]?.number
        case "replay_frame":
            guard let after = value["after_ms"]?.number, let at = value["at_ms"]?.number else { break }
            if replay?.firstFrameMs == nil {
                replay?.firstFrameMs = after
                note("\(name): the replay's first picture \(Int(after.rounded())) ms after asking", at: now)
            } else if replay?.seekFrameMs == nil, at > 0 {
                replay?.seekFrameMs = after
                replay?.seekToMs = at
                note("\(name): sought to \(Self.seconds(at / 1000)), its picture \(Int(after.rounded())) ms after asking", at: now)
            }
        case "replay_ended":
            replay?.ended = true
        case "exit":
            if node.role == .player { replay?.frames = value["replay"]?["frames"]?.number.map { Int($0) } }
            if let media = value["media"] {
                node.finalFrames = media["frames"]?.number.map { Int($0) }
                node.finalSkipped = media["skipped_frames"]?.number.map { Int($0) }
                node.finalP50 = media["video_latency_p50_ms"]?.number
                node.finalP95 = media["video_latency_p95_ms"]?.number
            }
            node.finalDepth = value["tree"]?["depth"]?.number.map { Int($0) } ?? node.depth
        default:
            break
        }
    }

    private func stats(_ node: inout Node, _ value: JSONValue) {
        if let tree = value["tree"] {
            node.children = Int(tree["children"]?.number ?? 0)
            if let depth = tree["depth"]?.number { node.depth = Int(depth) }
            if let parent = tree["parent"]?.string { node.parent = parent }
            node.parentPath = tree["parent_path"]?.string
            node.parentAddress = tree["parent_address"]?.string
            node.parentLink = tree["parent_link"]?.string
        }
        // (Once the mesh stops, sessions end one by one: the counts as it ran stand.)
        if let sessions = value["sessions"], !isStopping {
            node.sessionsDirect = sessions["direct"]?.number.map { Int($0) }
            node.sessionsRelayed = sessions["relayed"]?.number.map { Int($0) }
        }
        guard let media = value["media"] else { return }
        node.fps = media["fps"]?.number
        if media["role"]?.string == "viewer" {
            node.latencyP95 = media["video_latency_p95_ms"]?.number
            let packets = Int(media["video_packets"]?.number ?? 0), lost = Int(media["video_lost"]?.number ?? 0)
            let recovered = Int(media["recovered"]?.number ?? 0)
            if let last = node.lastCounts {
                // Originals sent ≈ originals received (packets minus repairs) plus those lost on the way.
                let received = (packets - last.packets) - (recovered - last.recovered), missed = lost - last.lost
                node.loss = received + missed > 0 ? Double(max(0, missed)) / Double(received + missed) : nil
            }
            node.lastCounts = (packets, lost, recovered)
            node.repaired = recovered
        }
    }

    /// The viewer whose copy of chat feeds the dashboard: the room's first still running.
    private func feedWitness(room: Int?) -> String? {
        guard let room else { return nil }
        return nodes(in: room).first { $0.isViewer && $0.isRunning && $0.killedAt == nil }?.name
    }

    static func seconds(_ s: Double) -> String {
        s < 10 ? "\((s * 100).rounded() / 100) s" : "\((s * 10).rounded() / 10) s"
    }
}
