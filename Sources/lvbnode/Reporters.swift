import LVBCore
import LVBCrypto
import LVBGossip
import LVBMedia
import LVBRoom
import LVBTransport
import NIOCore

/// Everything a running node reports, turned into output lines: sessions
/// (`EventReporter`), the room (`RoomReporter`), media (`MediaStatsReporter`
/// and the sinks' events). Runs on the node's loop.
final class Reporters: @unchecked Sendable {
    let out: Output
    let sessions: EventReporter
    let room: RoomReporter
    let media = MediaStatsReporter()
    let tree = TreeStatsReporter()
    private let termination: Termination
    private var statsTask: RepeatedTask?

    init(out: Output, termination: Termination, setup: RoomSetup) {
        self.out = out
        self.termination = termination
        var dialled: (addresses: [PeerAddress], id: NodeID?)?
        if case let .join(_, host, _, addresses, _) = setup { dialled = (addresses, host) }
        sessions = EventReporter(out: out, termination: termination, dialled: dialled)
        room = RoomReporter(out: out, termination: termination)
    }

    /// The node is built (on its loop, before it starts).
    func attach(_ node: LiveNode) {
        room.room = node.room
        media.node = node
    }

    /// No more periodic `stats` lines (the node is stopping).
    func stopStats() { statsTask?.cancel() }

    /// With `--json`, a `stats` line every 2 s while the node has media or a place in a media tree.
    func startStats(on live: UDPLiveNode) {
        guard out.json || out.tee != nil else { return }
        statsTask = live.udp.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(2), delay: .seconds(2)) { [self] _ in
            let mediaJSON = media.json(final: false), treeJSON = media.node.flatMap { tree.json($0, final: false) }
            guard mediaJSON != nil || treeJSON != nil else { return }
            var line = JSONLine(event: "stats")
            if let mediaJSON { line.addRaw("media", mediaJSON) }
            if let treeJSON { line.addRaw("tree", treeJSON) }
            if let node = media.node { line.addRaw("sessions", StatsJSON.sessions(node.core.peers)) }
            out.emitMachine(line)
        }
    }

    func report(_ output: NodeOutput) {
        switch output {
        case .transport(let event): sessions.report(event)
        case .room(let event): room.report(event)
        case .sink(let event): report(event)
        case .mediaEnded(let why):
            out.emit(JSONLine(event: "media_ended", ("reason", why)), human: "media input stopped: \(why)", kind: "media")
        case let .treeParent(parent, depth, failovers):
            var line = JSONLine(event: "tree")
            if let parent { line.add("parent", parent.text) } else { line.addRaw("parent", "null") }
            if let depth { line.add("depth", depth) } else { line.addRaw("depth", "null") }
            line.add("failovers", failovers)
            let human = parent.map { "media tree: now fed by \($0.short)\(depth.map { " at depth \($0)" } ?? "")" }
                ?? "media tree: no parent for now (finding another)"
            out.emit(line, human: human, kind: "tree")
        case let .liar(peer, why, cost):
            let message = "parent \(peer.short) sent media the host did not sign (\(why.rawValue)): none of it was shown; left it for good"
                + " (it cost \(cost.nacks) NACKs, \(cost.signatureChecks) signature checks, \(cost.refusals) refusals)"
            var line = JSONLine(event: "warning", ("message", message), ("kind", "forged_media"), ("peer", peer.text), ("reason", why.rawValue))
            line.add("nacks", cost.nacks)
            line.add("signature_checks", cost.signatureChecks)
            line.add("refusals", cost.refusals)
            out.emit(line, human: message, kind: "warning")
        case .preloaded(let id):
            out.emit(JSONLine(event: "preloaded", ("room", id.text)), human: "room \(id.text) is ready for a quick switch", kind: "room")
        case let .switched(from, to, preloaded):
            // The room's outputs now come from the new room.
            room.room = media.node?.room
            room.switches += 1
            var line = JSONLine(event: "switched")
            line.add("from", from.text)
            line.add("to", to.text)
            line.add("preloaded", preloaded)
            out.emit(line, human: "switching to room \(to.text)\(preloaded ? " (preloaded)" : "")", kind: "room")
        }
    }

    /// The `first_frame` line's common fields (a live stream's, a replay's).
    static func firstFrameLine(ms: Double, width: Int, height: Int) -> JSONLine {
        var line = JSONLine(event: "first_frame")
        line.add("ms", ms)
        line.add("width", width)
        line.add("height", height)
        return line
    }

    private func report(_ event: SinkEvent) {
        switch event {
        case let .firstFrame(ms, width, height, keyframe, preloaded):
            var line = Self.firstFrameLine(ms: ms, width: width, height: height)
            line.add("keyframe", keyframe)
            line.add("preloaded", preloaded)
            if let room = room.room?.room { line.add("room", room.text) }
            let since = room.switches > 0 ? "switching" : "starting"
            out.emit(line, human: "first picture \(Duration.milliseconds(ms).millisecondsText) ms after \(since)\(preloaded ? " (preloaded)" : "") (\(width)x\(height))", kind: "media")
        case .recording(let path):
            out.emit(JSONLine(event: "recording", ("path", path)), human: "recording to \(path)", kind: "media")
        case .failed(let why):
            Output.fail(why)
        }
    }

    /// Our leave was not acknowledged by every member in time.
    func leaveUnconfirmed() {
        let message = "the leave was not acknowledged by every member within \(RoomConstants.leaveWait.seconds) s; some may show us a while longer"
        out.emit(JSONLine(event: "warning", ("message", message)), human: message, kind: "leave")
    }

    /// How the run ended, for the exit line and status: a joiner that never
    /// got into the room did not succeed, whatever stopped it.
    func outcome(of reason: ExitReason, dialled setup: RoomSetup) -> Outcome {
        switch reason {
        case .failed(let why): return Outcome(text: reason.text, status: reason.status, failure: why)
        case .removed(let why): return Outcome(text: reason.text, status: reason.status, failure: why)
        default: break
        }
        if case let .join(_, _, _, addresses, _) = setup, !room.admitted {
            let waited = Int(sessions.startedAt.map { (SystemClock.shared.now() - $0).seconds.rounded() } ?? 0)
            let where_ = addresses.map(\.description).joined(separator: ", ")
            let why = sessions.reachedHost
                ? "never admitted: \(where_) answered but did not let us into the room within \(waited) s"
                : "never connected: no answer from \(where_) within \(waited) s; check the address or ticket and that the host is running"
            return Outcome(text: why, status: 1, failure: why)
        }
        return Outcome(text: reason.text, status: reason.status, failure: nil)
    }
}

/// The end of a run as the user sees it.
struct Outcome {
    var text: String
    var status: Int32
    /// One line for stderr, if the run failed.
    var failure: String?
}
