/// The end of a mesh run in figures: did every viewer get the stream and
/// every event, how fast, and how the tree healed.
public struct MeshSummary: Equatable, Sendable {
    /// One viewer that ran to the end (the killed relay is left out).
    public struct Viewer: Equatable, Sendable {
        public let name: String
        public let depth: Int?
        public let frames: Int
        public let skipped: Int
        public let firstFrameMs: Double?
        public let p50: Double?
        public let p95: Double?
        /// Scripted lines it should have shown, and did.
        public let eventsExpected: Int
        public let eventsSeen: Int

        /// Frames shown of those the host sent while it watched (unrepaired ones were skipped).
        public var frameRatio: Double { frames + skipped > 0 ? Double(frames) / Double(frames + skipped) : 0 }
    }

    /// Glass-to-glass at one depth of the tree, over the viewers there.
    public struct Depth: Equatable, Sendable {
        public let depth: Int
        public let viewers: Int
        /// The median of the viewers' own p50s, and the worst of their p95s (ms).
        public let p50: Double
        public let p95: Double
    }

    public let viewers: [Viewer]
    public let depths: [Depth]
    public let framesShown: Int
    public let framesSkipped: Int
    public let eventsExpected: Int
    public let eventsSeen: Int
    public let firstFrameMs: [Double]
    /// The killed relay, its children and their repair times (nil: none was killed).
    public let killed: String?
    public let killedChildren: [String]
    public let repairSeconds: [String: Double]
    /// Viewers' links to their parents at the end: straight, or through a relay.
    public let treeLinksDirect: Int
    public let treeLinksRelayed: Int
    /// Of the direct ones, those over IPv6 (`--nat --ipv6`).
    public let treeLinksIPv6: Int
    /// Of the direct ones, those birthday punching found (`--hard-nats`).
    public let treeLinksBirthday: Int
    /// Of the relayed ones, those a member relays (the rest: a rendezvous).
    public let treeLinksMemberRelay: Int
    /// Every node's established sessions at its last stats line, by path (each session counted at both ends).
    public let sessionsDirect: Int
    public let sessionsRelayed: Int
    /// `--replay`: the first room's replay as its player saw it (nil: none asked).
    public let replay: MeshModel.Replay?
    /// The first two rooms' PK (two rooms or more), and the gifts the hosts were given.
    public let pk: MeshModel.PK?
    public let gifts: Int

    public var frameRatio: Double { framesShown + framesSkipped > 0 ? Double(framesShown) / Double(framesShown + framesSkipped) : 0 }
    public var eventRatio: Double { eventsExpected > 0 ? Double(eventsSeen) / Double(eventsExpected) : 1 }
    /// Every viewer decoded the stream.
    public var everyViewerGotTheStream: Bool { !viewers.isEmpty && viewers.allSatisfy { $0.frames > 0 } }
    /// Every child of the killed relay found another parent.
    public var childrenRecovered: Bool { killedChildren.allSatisfy { repairSeconds[$0] != nil } }

    public init(_ model: MeshModel) {
        var viewers: [Viewer] = []
        for name in model.order {
            guard let n = model.nodes[name], n.isViewer, n.killedAt == nil else { continue }
            let expected = model.scripted.filter { $0.audience.contains(name) }
            viewers.append(Viewer(name: name, depth: n.depthAtStop ?? n.finalDepth ?? n.depth, frames: n.finalFrames ?? 0, skipped: n.finalSkipped ?? 0,
                                  firstFrameMs: n.firstFrameMs, p50: n.finalP50, p95: n.finalP95,
                                  eventsExpected: expected.count, eventsSeen: expected.filter { n.seen.contains($0.text) }.count))
        }
        // The host shows the room's lines as well.
        var expected = viewers.reduce(0) { $0 + $1.eventsExpected }, seen = viewers.reduce(0) { $0 + $1.eventsSeen }
        for name in model.order {
            guard let n = model.nodes[name], n.role == .host else { continue }
            let mine = model.scripted.filter { $0.audience.contains(name) }
            expected += mine.count
            seen += mine.filter { n.seen.contains($0.text) }.count
        }
        self.viewers = viewers
        eventsExpected = expected
        eventsSeen = seen
        framesShown = viewers.reduce(0) { $0 + $1.frames }
        framesSkipped = viewers.reduce(0) { $0 + $1.skipped }
        firstFrameMs = viewers.compactMap(\.firstFrameMs).sorted()
        var byDepth: [Int: [Viewer]] = [:]
        for v in viewers { if let d = v.depth, v.p50 != nil { byDepth[d, default: []].append(v) } }
        depths = byDepth.keys.sorted().map { d in
            let at = byDepth[d]!
            return Depth(depth: d, viewers: at.count, p50: Self.median(at.compactMap(\.p50)), p95: at.compactMap(\.p95).max() ?? 0)
        }
        killed = model.kill?.name
        killedChildren = model.kill?.children ?? []
        repairSeconds = model.kill?.recovered ?? [:]
        let running = model.order.compactMap { model.nodes[$0] }.filter { $0.killedAt == nil }
        let links = running.filter(\.isViewer).compactMap { $0.linkAtStop ?? model.link(of: $0) }
        treeLinksRelayed = links.filter { $0.hasPrefix("relay") }.count
        treeLinksDirect = links.count - treeLinksRelayed
        treeLinksIPv6 = links.filter { $0 == "direct IPv6" }.count
        treeLinksBirthday = links.filter { $0 == "birthday" }.count
        treeLinksMemberRelay = links.filter { $0.hasPrefix("relay") && $0.hasSuffix("(member)") }.count
        sessionsDirect = running.reduce(0) { $0 + ($1.sessionsDirect ?? 0) }
        sessionsRelayed = running.reduce(0) { $0 + ($1.sessionsRelayed ?? 0) }
        replay = model.replay
        pk = model.pk
        gifts = model.gifts
    }

    static func median(_ xs: [Double]) -> Double {
        let s = xs.sorted()
        guard !s.isEmpty else { return 0 }
        return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
    }

    /// The `p` quantile (0–1) of sorted `xs`, nearest rank.
    static func quantile(_ xs: [Double], _ p: Double) -> Double? {
        guard !xs.isEmpty else { return nil }
        return xs[min(xs.count - 1, max(0, Int((p * Double(xs.count)).rounded(.up)) - 1))]
    }

    /// The summary as lines of text for a person.
    public var text: [String] {
        var out = ["summary"]
        out.append("  stream   \(viewers.filter { $0.frames > 0 }.count) of \(viewers.count) viewers decoded it; frames shown \(Self.percent(frameRatio))"
                   + " (\(framesShown) shown, \(framesSkipped) skipped)")
        out.append("  events   \(eventsSeen) of \(eventsExpected) chat lines and bullet comments shown where sent (\(Self.percent(eventRatio)))")
        if let lo = firstFrameMs.first, let hi = firstFrameMs.last, let mid = Self.quantile(firstFrameMs, 0.5) {
            out.append("  first picture after joining: min \(Self.ms(lo)), median \(Self.ms(mid)), max \(Self.ms(hi))")
        }
        if treeLinksDirect + treeLinksRelayed + sessionsDirect + sessionsRelayed > 0 {
            out.append("  links    tree: \(treeLinksDirect) direct\(treeLinksIPv6 > 0 ? " (\(treeLinksIPv6) over IPv6)" : "")\(treeLinksBirthday > 0 ? " (\(treeLinksBirthday) by birthday punching)" : ""), \(treeLinksRelayed) relayed\(treeLinksMemberRelay > 0 ? " (\(treeLinksMemberRelay) by a member)" : "");"
                       + " sessions (counted at both ends): \(sessionsDirect) direct, \(sessionsRelayed) relayed")
        }
        for d in depths {
            out.append("  depth \(d.depth)  glass-to-glass p50 \(Self.ms(d.p50)) p95 \(Self.ms(d.p95))  (\(d.viewers) \(d.viewers == 1 ? "viewer" : "viewers"))")
        }
        if let killed {
            let repairs = killedChildren.map { c in "\(c) \(repairSeconds[c].map { MeshModel.seconds($0) } ?? "not recovered")" }
            out.append("  repair   killed \(killed) with \(killedChildren.count) \(killedChildren.count == 1 ? "child" : "children")"
                       + (repairs.isEmpty ? "" : ": " + repairs.joined(separator: ", ")))
        } else {
            out.append("  repair   no relay had children to kill")
        }
        if gifts > 0 { out.append("  gifts    \(gifts) given") }
        if let pk {
            let rooms = pk.scores.keys.sorted()
            let sides = rooms.map { r in "room \(r + 1) \(pk.scores[r] ?? 0) (its view of the other: \(pk.theirs[r] ?? 0))" }
            out.append("  PK       " + (sides.isEmpty ? "asked, never began" : sides.joined(separator: " vs ")))
        }
        if let r = replay {
            var line = "  replay   \(r.id.prefix(8))…"
            line += r.durationMs.map { " (\(MeshModel.seconds($0 / 1000)))" } ?? ""
            line += r.servingAt == nil ? ": the live did not end" : ": played from its host after the live ended"
            line += r.firstFrameMs.map { "; first picture \(Self.ms($0))" } ?? "; no picture"
            if let to = r.seekToMs, let after = r.seekFrameMs { line += "; seek to \(MeshModel.seconds(to / 1000)) → picture \(Self.ms(after))" }
            line += r.frames.map { "; \($0) pictures shown" } ?? ""
            out.append(line)
        }
        return out
    }

    static func percent(_ r: Double) -> String { "\((r * 10000).rounded() / 100) %" }
    static func ms(_ v: Double) -> String { "\((v * 10).rounded() / 10) ms" }
}
