import LVBWeb

/// The mesh as text: the terminal dashboard (the tree with each node's
/// figures, the chat and bullet comments, the events that matter) and the
/// same as JSON lines for `--json`.
public enum MeshDashboard {
    /// The dashboard's lines, `width` columns at most, for a screen of `height` rows.
    public static func render(_ model: MeshModel, config: MeshConfig, now: Double, width: Int = 100, height: Int = 40) -> [String] {
        var out: [String] = []
        let running = model.order.filter { model.nodes[$0]?.isRunning == true }.count
        let length = config.duration.map { " of \(Int($0)) s" } ?? " (Ctrl-C stops)"
        out.append("lvbnode mesh · \(plural(config.rooms, "room")), \(plural(config.viewers, "viewer")), \(plural(config.guests, "guest"))"
                   + " · loss \(Int((config.loss * 100).rounded())) % · \(Int(now)) s\(length) · \(plural(running, "process", "processes")) running")
        if let nat = model.nat {
            out.append("behind NATs: \(plural(nat.homes.count, "home")), each its own NAT (\(nat.hard.count) hard, marked *: a new port for every destination),"
                       + " on a \(nat.internet); the rendezvous relays pairs that cannot punch")
        }
        out.append("")
        let header = "  " + pad("node", 24) + pad("depth", 7) + pad("link", 20) + pad("fps", 7) + pad("p95 ms", 8) + pad("loss", 8) + pad("repaired", 10) + "children"
        for room in 0..<config.rooms {
            guard let host = model.nodes(in: room).first(where: { $0.role == .host }) else { continue }
            var line = "Mesh room \(room + 1) · \(host.name) · likes \(model.likes[room] ?? 0) · gifts \(model.giftPoints[room] ?? 0) points"
            if let pk = model.pk, let ours = pk.scores[room] {
                line += " · PK \(ours) : \(pk.theirs[room] ?? 0)" + (pk.ended[room].map { " (\($0.result), \($0.reason))" } ?? "")
            }
            out.append(line)
            out.append(header)
            var shown: Set<String> = []
            out += tree(model, room: room, from: host, prefix: "", last: true, isRoot: true, shown: &shown)
            let loose = model.nodes(in: room).filter { $0.isViewer && !shown.contains($0.name) }
            for n in loose {
                let state = n.killedAt != nil ? "killed" : !n.isRunning ? "exited" : n.admitted == nil ? "joining" : "finding a parent"
                out.append("  " + pad("· \(n.name) (\(state))", 24) + figures(n, model))
            }
            out.append("")
        }
        if let r = model.replay, r.servingAt != nil {
            var line = "Replay of Mesh room 1 · \(r.id.prefix(8))… · served by \(model.nodes(in: 0).first { $0.role == .host }?.name ?? "its host")"
            if let first = r.firstFrameMs { line += " · first picture \(Int(first.rounded())) ms" }
            if let to = r.seekToMs, let after = r.seekFrameMs { line += " · seek to \(clock(to / 1000)) → \(Int(after.rounded())) ms" }
            out += [line, ""]
        }
        let rest = max(4, height - out.count - 4)
        out.append("chat & bullet comments")
        for s in model.feed.suffix(rest / 2) {
            out.append("  \(clock(s.at)) " + pad(s.nick, 12) + (s.kind == "danmaku" ? "» " : "") + s.text)
        }
        out.append("events")
        for h in model.happenings.suffix(rest - rest / 2) { out.append("  \(clock(h.at)) \(h.text)") }
        return out.map { cut($0, width) }
    }

    private static func tree(_ model: MeshModel, room: Int, from node: MeshModel.Node, prefix: String, last: Bool, isRoot: Bool,
                             shown: inout Set<String>) -> [String] {
        shown.insert(node.name)
        let branch = isRoot ? "" : prefix + (last ? "└─ " : "├─ ")
        let hard = model.nat.map { nat in nat.homes[node.name].map { nat.hard.contains($0) } ?? false } ?? false
        let label = node.name + (hard ? " *" : "") + (node.onStage ? " (on stage)" : "") + (node.killedAt != nil ? " ✕" : "")
        var out = ["  " + pad(branch + label, 24) + figures(node, model)]
        guard let id = node.id else { return out }
        let kids = model.nodes(in: room).filter { model.feeder(of: $0) == id && $0.isRunning && !shown.contains($0.name) }
        let inner = isRoot ? "" : prefix + (last ? "   " : "│  ")
        for (i, kid) in kids.enumerated() {
            out += tree(model, room: room, from: kid, prefix: inner, last: i == kids.count - 1, isRoot: false, shown: &shown)
        }
        return out
    }

    private static func figures(_ n: MeshModel.Node, _ model: MeshModel) -> String {
        let depth = n.role == .host ? "0" : n.depth.map(String.init) ?? "–"
        let link = model.link(of: n) ?? "–"
        let fps = n.fps.map { String(format1($0)) } ?? "–"
        let p95 = n.latencyP95.map { format1($0) } ?? "–"
        let loss = n.loss.map { format1($0 * 100) + " %" } ?? "–"
        let repaired = n.role == .host ? "–" : String(n.repaired)
        return pad(depth, 7) + pad(link, 20) + pad(fps, 7) + pad(p95, 8) + pad(loss, 8) + pad(repaired, 10) + String(n.children)
    }

    // MARK: JSON lines (--json)

    /// A process started.
    public static func startedJSON(_ n: MeshModel.Node, at: Double) -> String {
        object(["event": "\"mesh_node\"", "at": num(at), "name": quote(n.name), "role": quote(n.role.rawValue),
                "room": n.room.map { String($0 + 1) } ?? "null", "pid": String(n.pid)])
    }

    public static func exitedJSON(_ n: MeshModel.Node, at: Double) -> String {
        object(["event": "\"mesh_exited\"", "at": num(at), "name": quote(n.name), "status": n.exitStatus.map(String.init) ?? "null",
                "killed": n.killedAt != nil ? "true" : "false"])
    }

    /// Where a viewer's studio page is (`--web`).
    public static func linksJSON(viewer: String, studio: String) -> String {
        object(["event": "\"mesh_links\"", "viewer": quote(viewer), "studio": quote(studio)])
    }

    public static func happeningJSON(_ h: MeshModel.Happening) -> String {
        object(["event": "\"mesh_event\"", "at": num(h.at), "text": quote(h.text)])
    }

    public static func saidJSON(_ s: MeshModel.Said) -> String {
        object(["event": "\"mesh_said\"", "at": num(s.at), "kind": quote(s.kind), "nick": quote(s.nick), "text": quote(s.text)])
    }

    /// Every node's place and figures now.
    public static func nodesJSON(_ model: MeshModel, at: Double) -> String {
        let nodes = model.order.compactMap { model.nodes[$0] }.map { n in
            object(["name": quote(n.name), "role": quote(n.role.rawValue), "room": n.room.map { String($0 + 1) } ?? "null",
                    "listen": n.listen.map(quote) ?? "null",
                    "depth": n.role == .host ? "0" : n.depth.map(String.init) ?? "null",
                    "parent": model.feeder(of: n).flatMap { model.name(of: $0) }.map(quote) ?? "null",
                    "parent_path": model.link(of: n).map(quote) ?? "null",
                    "home": model.nat?.homes[n.name].map(String.init) ?? "null",
                    "hard_nat": model.nat.map { nat in nat.homes[n.name].map { nat.hard.contains($0) } ?? false } == true ? "true" : "false",
                    "sessions_direct": n.sessionsDirect.map(String.init) ?? "null",
                    "sessions_relayed": n.sessionsRelayed.map(String.init) ?? "null",
                    "fps": n.fps.map(num) ?? "null", "latency_p95_ms": n.latencyP95.map(num) ?? "null",
                    "loss": n.loss.map(num) ?? "null", "repaired": String(n.repaired), "children": String(n.children),
                    "on_stage": n.onStage ? "true" : "false", "running": n.isRunning ? "true" : "false"])
        }
        let likes = (0..<max(1, model.likes.keys.max().map { $0 + 1 } ?? 1)).map { String(model.likes[$0] ?? 0) }
        return object(["event": "\"mesh_nodes\"", "at": num(at), "nodes": "[" + nodes.joined(separator: ",") + "]",
                       "likes": "[" + likes.joined(separator: ",") + "]"])
    }

    public static func summaryJSON(_ s: MeshSummary) -> String {
        let viewers = s.viewers.map { v in
            object(["name": quote(v.name), "depth": v.depth.map(String.init) ?? "null", "frames": String(v.frames),
                    "skipped": String(v.skipped), "frame_ratio": num(v.frameRatio),
                    "first_frame_ms": v.firstFrameMs.map(num) ?? "null", "latency_p50_ms": v.p50.map(num) ?? "null",
                    "latency_p95_ms": v.p95.map(num) ?? "null", "events_expected": String(v.eventsExpected),
                    "events_seen": String(v.eventsSeen)])
        }
        let depths = s.depths.map { d in
            object(["depth": String(d.depth), "viewers": String(d.viewers), "latency_p50_ms": num(d.p50), "latency_p95_ms": num(d.p95)])
        }
        let repairs = s.killedChildren.map { c in object(["name": quote(c), "seconds": s.repairSeconds[c].map(num) ?? "null"]) }
        return object([
            "event": "\"summary\"", "viewers": "[" + viewers.joined(separator: ",") + "]",
            "every_viewer_got_the_stream": s.everyViewerGotTheStream ? "true" : "false",
            "frames_shown": String(s.framesShown), "frames_skipped": String(s.framesSkipped), "frame_ratio": num(s.frameRatio),
            "events_expected": String(s.eventsExpected), "events_seen": String(s.eventsSeen), "event_ratio": num(s.eventRatio),
            "first_frame_ms": "[" + s.firstFrameMs.map(num).joined(separator: ",") + "]",
            "depths": "[" + depths.joined(separator: ",") + "]",
            "killed": s.killed.map(quote) ?? "null", "repairs": "[" + repairs.joined(separator: ",") + "]",
            "children_recovered": s.childrenRecovered ? "true" : "false",
            "tree_links_direct": String(s.treeLinksDirect), "tree_links_ipv6": String(s.treeLinksIPv6), "tree_links_birthday": String(s.treeLinksBirthday), "tree_links_member_relay": String(s.treeLinksMemberRelay), "tree_links_relayed": String(s.treeLinksRelayed),
            "sessions_direct": String(s.sessionsDirect), "sessions_relayed": String(s.sessionsRelayed),
            "gifts": String(s.gifts),
            "pk": s.pk.map { pk in
                let rooms = pk.scores.keys.sorted()
                return object(["started": pk.startedAt == nil ? "false" : "true",
                               "scores": "[" + rooms.map { String(pk.scores[$0] ?? 0) }.joined(separator: ",") + "]",
                               "theirs": "[" + rooms.map { String(pk.theirs[$0] ?? 0) }.joined(separator: ",") + "]",
                               "ended": "[" + rooms.map { r in pk.ended[r].map { quote($0.reason) } ?? "null" }.joined(separator: ",") + "]"])
            } ?? "null",
            "replay": s.replay.map { r in
                object(["id": quote(r.id), "served": r.servingAt == nil ? "false" : "true", "duration_ms": r.durationMs.map(num) ?? "null",
                        "first_frame_ms": r.firstFrameMs.map(num) ?? "null", "seek_to_ms": r.seekToMs.map(num) ?? "null",
                        "seek_frame_ms": r.seekFrameMs.map(num) ?? "null", "frames": r.frames.map(String.init) ?? "null",
                        "ended": r.ended ? "true" : "false"])
            } ?? "null",
            "text": "[" + s.text.map(quote).joined(separator: ",") + "]",
        ])
    }

    // MARK: Text helpers

    /// Keys in a fixed order (event first) so the lines read alike.
    private static func object(_ fields: [String: String]) -> String {
        let keys = fields.keys.sorted { a, b in a == "event" ? true : b == "event" ? false : a < b }
        return "{" + keys.map { "\(quote($0)):\(fields[$0]!)" }.joined(separator: ",") + "}"
    }

    private static func quote(_ s: String) -> String { JSONValue.quote(s) }

    private static func num(_ x: Double) -> String {
        guard x.isFinite else { return "null" }
        let r = (x * 1000).rounded() / 1000
        return r == r.rounded() && abs(r) < 1e15 ? String(Int(r)) : String(r)
    }

    private static func format1(_ x: Double) -> String {
        let r = (x * 10).rounded() / 10
        return r == r.rounded() ? "\(Int(r)).0" : String(r)
    }

    public static func clock(_ seconds: Double) -> String {
        let s = Int(seconds)
        return (s / 60 < 10 ? "0" : "") + "\(s / 60):" + (s % 60 < 10 ? "0" : "") + "\(s % 60)"
    }

    private static func plural(_ n: Int, _ one: String, _ many: String? = nil) -> String {
        "\(n) " + (n == 1 ? one : many ?? one + "s")
    }

    static func pad(_ s: String, _ width: Int) -> String {
        let n = s.count
        return n >= width ? s + " " : s + String(repeating: " ", count: width - n)
    }

    private static func cut(_ s: String, _ width: Int) -> String {
        s.count <= width ? s : String(s.prefix(max(1, width - 1))) + "…"
    }
}
