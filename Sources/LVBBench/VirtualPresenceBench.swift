#if canImport(Glibc)
import Glibc
#endif
import LVBCore
import LVBCrypto
import LVBGossip
import LVBRoom
import LVBTestSupport
import LVBTransport

// The room layer's cost per member at sizes processes on one machine cannot
// reach (issue 28): the real room, gossip and transport code, one process,
// on the virtual network (1 % loss, 10 ± 5 ms a link) with its manual clock.
// A host without media and N viewers joining 50 a second (a twentieth of
// the room a second above 1,000: 10,000 join in 20 s); once all are in
// and the room has settled (10 s): every member's census count against the
// truth; each viewer's bytes in per second over 20 s idle and over 20 s of
// chat at 90 % of the room's chat rate (10 authors), with how many members
// each line reached and how late; a late joiner's bytes to its first census;
// and, a tenth of the viewers crashed, how long until every member's count
// is within 2 % of the rest, and until it is exact. The same figures as the process bench
// (`presence`), whose 40-member room is the reference for the ratio. CPU is
// what the one simulating process spent per member and second of the idle
// window, the virtual network's scheduling included: an upper bound on what
// the room code costs a member, with real signatures and encryption. The host's
// own bytes in and out are shown too: it holds a session with every member.
// `LVBBench <seconds> presence-virtual [N,N,…]` (default 200,1000; 10,000
// takes about half an hour of one core and a few GB).
enum VirtualPresenceBench {
    private typealias M = MediaBench

    static let defaultSizes = [200, 1000]
    static let minJoinsPerSecond = 50.0, settle: Duration = .seconds(10), window: Duration = .seconds(20)

    struct Room {
        var members: Int
        var joinSeconds = 0.0, wallSeconds = 0.0
        var bytesPerSecond: [Double] = []
        var countError: Double?
        /// A tenth crashed: until every member's count was within 2 %, and exact.
        var staleness: Double?, exactAfter: Double?
        /// Chatting: bytes in per viewer, lines sent and refused, receipts owed and made, latencies.
        var chatBytesPerSecond: [Double] = []
        var linesSent = 0, linesRefused = 0, owed = 0, reached = 0
        var latenciesMs: [Double] = []
        var joinerBytes: Int?
        var joinerSeconds: Double?
        /// The host's bytes in and out per second over the idle window.
        var hostIn = 0.0, hostOut = 0.0
        /// CPU seconds the simulation spent per member per second of the
        /// idle window (the virtual network's own work included).
        var idleCPUPerMember: Double?
    }

    static func runAndPrint(sizes: [Int]) {
        M.say("")
        M.say("room cost per member on the virtual network: real room, gossip and transport code in one process, 1 % loss")
        M.say("  a host without media and N viewers (50 joins a second, N/20 above 1,000); bytes in per viewer over \(window.seconds) s idle")
        var reference: Room?
        for n in sizes {
            let room = run(viewers: n)
            printRoom(room, reference: reference)
            if reference == nil { reference = room }
        }
    }

    /// When each bench chat line was said, and when members heard it.
    final class ChatTally {
        var sentAt: [String: Instant] = [:]
        var reached = 0
        var latenciesMs: [Double] = []

        func heard(_ e: RoomEvent, at now: Instant) {
            guard let text = e.body.as(ChatLine.self)?.text, let sent = sentAt[text] else { return }
            reached += 1
            latenciesMs.append((now - sent).seconds * 1000)
        }
    }

    final class Member {
        let sim: SimulatedNode
        let room: RoomNode
        var ticker: TimerHandle?

        init(_ sim: SimulatedNode, _ room: RoomNode, network: VirtualNetwork, chat: ChatTally) {
            self.sim = sim
            self.room = room
            sim.recordsEvents = false
            sim.onTransportEvent = { [unowned self] in self.room.handle($0) }
            let me = sim.id
            room.onOutput = { out in
                if case let .change(.chat(e)) = out, e.author != me { chat.heard(e, at: network.clock.now()) }
            }
            ticker = network.every(GossipConstants.tickInterval) { [unowned self] in self.room.tick() }
            room.start()
        }

        func crash() {
            ticker?.cancel()
            sim.crash()
        }

        var count: UInt32? { room.state?.roomCount }
        var census: Census? { room.state?.census }
    }

    static func run(viewers n: Int) -> Room {
        let wallStart = ProcessRunner.now()
        let seed: UInt64 = 2800 + UInt64(n)
        let net = VirtualNetwork(seed: seed, defaultImpairment: Impairment(loss: 0.01, delay: .milliseconds(10), jitter: .milliseconds(5)))
        let nodes = net.makeNodes(n + 2, seed: seed)
        let random = SeededRandom(seed: seed ^ 0xABC)
        let roomID = RoomID.random(random)
        let chat = ChatTally()
        let policy = AdmissionPolicy(room: roomID, host: nodes[0].core.identity, mode: .open, clock: net.clock)
        let host = Member(nodes[0], RoomNode(hosting: policy, core: nodes[0].core, clock: net.clock, random: random,
                                              info: RoomInfo(title: "bench")), network: net, chat: chat)
        var viewers: [Member] = []
        func join(_ node: SimulatedNode) -> Member {
            let r = RoomNode(joining: roomID, host: nodes[0].id, proof: .none, core: node.core, clock: net.clock, random: random)
            node.core.connect(to: nodes[0].address, expecting: nodes[0].id)
            return Member(node, r, network: net, chat: chat)
        }
        var room = Room(members: n + 1)
        let joinStart = net.clock.now()
        let pace = Duration.seconds(1) / max(minJoinsPerSecond, Double(n) / 20)
        for node in nodes[1...n] {
            viewers.append(join(node))
            net.run(for: pace)
        }
        _ = poll(net, timeout: .seconds(60)) { viewers.allSatisfy(\.room.isAdmitted) }
        room.joinSeconds = (net.clock.now() - joinStart).seconds
        // Progress, for the large rooms that take a while (stderr: the figures stay on stdout).
        let progress = { (what: String) in
            fputs("  \(n + 1) members: \(what) (\(M.fixed(ProcessRunner.now() - wallStart, 0)) s of wall time)\n", stderr)
        }
        progress("all admitted after \(M.fixed(room.joinSeconds, 1)) s virtual")
        net.run(for: settle)
        let truth = Double(n + 1)
        room.countError = ([host] + viewers).map { m in m.count.map { abs(Double($0) - truth) / truth } ?? 1 }.max()
        let before = viewers.map { $0.sim.core.stats.bytesIn }
        let hostBefore = (host.sim.core.stats.bytesIn, host.sim.core.stats.bytesOut)
        let cpuBefore = threadCPUSeconds()
        net.run(for: window)
        room.idleCPUPerMember = (threadCPUSeconds() - cpuBefore) / window.seconds / Double(n + 1)
        room.bytesPerSecond = zip(before, viewers).map { Double($1.sim.core.stats.bytesIn - $0) / window.seconds }
        room.hostIn = Double(host.sim.core.stats.bytesIn - hostBefore.0) / window.seconds
        room.hostOut = Double(host.sim.core.stats.bytesOut - hostBefore.1) / window.seconds
        progress("idle window measured")
        measureChat(&room, net: net, host: host, viewers: viewers, chat: chat)
        progress("chat measured")
        // A late joiner: its bytes in until its first census.
        let late = join(nodes[n + 1]), lateAt = net.clock.now()
        if net.run(until: { late.census != nil }, timeout: .seconds(20)) {
            room.joinerBytes = late.sim.core.stats.bytesIn
            room.joinerSeconds = (net.clock.now() - lateAt).seconds
        }
        progress("late joiner in")
        // A tenth of the viewers crash.
        let killed = max(1, n / 10)
        for v in viewers.suffix(killed) { v.crash() }
        let alive = [host, late] + viewers.dropLast(killed), expected = UInt32(n + 2 - killed)
        let crashed = net.clock.now()
        let near = { (m: Member) in m.count.map { abs(Double($0) - Double(expected)) <= 0.02 * Double(expected) } ?? false }
        // The counting tree's depths, and each second of the recount (stderr, beside the progress).
        let depths = Dictionary(grouping: alive, by: { $0.room.countPlace.hops }).mapValues(\.count).sorted { $0.key < $1.key }
        progress("a tenth crashed; members by hops from the host in the counting tree: "
                 + depths.map { "\($0.key >= 64 ? "none" : "\($0.key)"): \($0.value)" }.joined(separator: ", "))
        var second = 0
        let traced = { (done: Bool) in
            let at = Int((net.clock.now() - crashed).seconds)
            guard at > second || done else { return }
            second = at
            fputs("    +\(at) s: the host counts \(host.room.countPlace.subtree), its census says \(host.count ?? 0) (truth \(expected)); "
                  + "members within 2 %: \(alive.count(where: near)) of \(alive.count)\n", stderr)
        }
        if poll(net, timeout: .seconds(60), { let done = alive.allSatisfy(near); traced(done); return done }) {
            room.staleness = (net.clock.now() - crashed).seconds
        }
        if poll(net, timeout: .seconds(60), { alive.allSatisfy { $0.count == expected } }) {
            room.exactAfter = (net.clock.now() - crashed).seconds
        }
        room.wallSeconds = ProcessRunner.now() - wallStart
        return room
    }

    /// 20 s of chat at 90 % of the room's rate from 10 authors spread over
    /// the room, then 5 s for the last lines to arrive.
    private static func measureChat(_ room: inout Room, net: VirtualNetwork, host: Member, viewers: [Member], chat: ChatTally) {
        let rate = PresenceBench.chatRate * PresenceBench.chatShare
        let authors = (0..<PresenceBench.authors).map { viewers[$0 * viewers.count / PresenceBench.authors] }
        let before = viewers.map { $0.sim.core.stats.bytesIn }
        let lines = Int(rate * window.seconds)
        for i in 0..<lines {
            let text = "bench line \(i)"
            chat.sentAt[text] = net.clock.now()
            do { try authors[i % authors.count].room.chat(text) } catch { room.linesRefused += 1 }
            net.run(for: .seconds(1) / rate)
        }
        room.chatBytesPerSecond = zip(before, viewers).map { Double($1.sim.core.stats.bytesIn - $0) / window.seconds }
        net.run(for: .seconds(5))
        room.linesSent = lines
        // Every member but the author hears each line said.
        room.owed = (lines - room.linesRefused) * viewers.count
        room.reached = chat.reached
        room.latenciesMs = chat.latenciesMs
    }

    /// Runs `net` until `done` holds, checking it every `pollInterval` of
    /// virtual time (not after every event: with ten thousand members a
    /// check of every member after each of millions of events would cost
    /// more than the room), or for `timeout`. The time it reports is so
    /// rounded up to the next `pollInterval`.
    static let pollInterval: Duration = .milliseconds(100)
    static func poll(_ net: VirtualNetwork, timeout: Duration, _ done: () -> Bool) -> Bool {
        let end = net.clock.now() + timeout
        while net.clock.now() < end {
            if done() { return true }
            net.run(for: pollInterval)
        }
        return done()
    }

    static func printRoom(_ r: Room, reference: Room?) {
        let label = "\(r.members) members (virtual)"
        let mean = PresenceBench.mean(r.bytesPerSecond)
        let bytes = mean.map { M.fixed($0 / 1024, 2) + " KB/s" } ?? "?"
        if let reference, let ratio = PresenceBench.ratio(mean, PresenceBench.mean(reference.bytesPerSecond)) {
            M.row("\(label): bytes in per viewer, idle", bytes + ", " + M.fixed(ratio, 2) + "×", goal: "≤ 1.25×, ≤ 2 KB/s",
                  ok: ratio <= PresenceBench.goalRatio && (mean ?? .infinity) <= PresenceBench.goalBytesPerSecond)
        } else {
            M.row("\(label): bytes in per viewer, idle", bytes, goal: "≤ 2 KB/s", ok: (mean ?? .infinity) <= PresenceBench.goalBytesPerSecond,
                  note: "(reference for the ratio)")
        }
        let cpu = r.idleCPUPerMember.map { M.fixed($0 * 100, 3) + " % of a core" } ?? "?"
        let cpuRatio = PresenceBench.ratio(r.idleCPUPerMember, reference?.idleCPUPerMember)
        M.row("\(label): CPU per member, idle (simulated: the virtual network's work included)",
              cpu + (cpuRatio.map { ", " + M.fixed($0, 2) + "×" } ?? ""), goal: "≤ 0.5 %",
              ok: (r.idleCPUPerMember ?? .infinity) <= 0.005, note: reference == nil ? "(reference for the ratio)" : nil)
        let most = r.bytesPerSecond.max().map { M.fixed($0 / 1024, 2) + " KB/s" } ?? "?"
        M.say("    busiest viewer \(most); the host \(M.fixed(r.hostIn / 1024, 1)) KB/s in, \(M.fixed(r.hostOut / 1024, 1)) KB/s out; "
              + "joins took \(M.fixed(r.joinSeconds, 1)) s virtual; the run \(M.fixed(r.wallSeconds, 0)) s of wall time")
        M.row("\(label): count error, worst member", r.countError.map { M.fixed($0 * 100, 2) + " %" } ?? "?", goal: "≤ 2 %",
              ok: (r.countError ?? 1) <= 0.02)
        M.row("\(label): a tenth crashed, every member within 2 %", r.staleness.map { M.fixed($0, 1) + " s" } ?? "not within 60 s",
              goal: "≤ 10 s", ok: (r.staleness ?? .infinity) <= 10,
              note: "exact after " + (r.exactAfter.map { M.fixed($0, 1) + " s" } ?? "more than 60 s"))
        let chatMean = PresenceBench.mean(r.chatBytesPerSecond)
        M.row("\(label): bytes in per viewer, chatting", chatMean.map { M.fixed($0 / 1024, 2) + " KB/s" } ?? "?")
        PresenceBench.chatRows(label, sent: r.linesSent, refused: r.linesRefused, reached: r.reached, owed: r.owed, latenciesMs: r.latenciesMs)
        M.row("\(label): a late joiner's first complete view",
              (r.joinerBytes.map { M.fixed(Double($0) / 1024, 1) + " KB" } ?? "?") + " in " + (r.joinerSeconds.map { M.fixed($0, 2) + " s" } ?? "?"),
              goal: "≤ 64 KB", ok: (r.joinerBytes ?? .max) <= 64 * 1024)
    }
}
