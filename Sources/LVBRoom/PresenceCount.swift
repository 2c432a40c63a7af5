import LVBCore
import LVBCrypto

/// How many are in the room, counted up a tree without anyone hearing from
/// everyone: each member reports to its gossip neighbours how far it is from
/// the host (hops, as a distance vector) and, to the one neighbour it chose
/// as upstream (fewest hops), how many members it speaks for (itself and
/// those that chose it). The host's own count is then the room's.
///
/// Rounds keep it fresh and loop-free (as sequence numbers do in DSDV and
/// Babel): the host starts a round every `countReportInterval`, and a
/// member passes it on to all its neighbours as soon as its upstream's
/// report brings it. A report carries the round of the sender's route, so
/// a route that no longer reaches the host (its upstream died, or it runs
/// in a loop left by stale reports) falls behind the rounds the other
/// neighbours bring and is dropped within two rounds and `roundGrace`
/// (one report lost costs nothing), rather than counting its hops up to
/// `unreachable`. A child counts while its route is as fresh as ours (one
/// that died is out as soon), and
/// only when it sits further from the host than we do, so a loop counts
/// nobody twice. Liveness is local: a neighbour silent for `staleAfter`
/// counts for nothing. Sans-IO: the room node sends the reports and feeds
/// in what arrives.
struct PresenceCount {
    struct Report: Equatable, Sendable {
        /// Hops from the host (0: the host; `unreachable`: no route known).
        var hops: UInt8
        /// The sender counts itself below the receiver (the receiver is its upstream).
        var upstream: Bool
        /// Members the sender speaks for: itself and those below it.
        var subtree: UInt32
        /// The host's round the sender's route comes from (wrapping).
        var round: UInt16
    }

    /// Hops meaning "no route to the host"; also the most a route may take.
    static let unreachable: UInt8 = 64
    /// A neighbour not heard from this long counts for nothing (three report intervals).
    static let staleAfter = RoomConstants.countReportInterval * 3
    /// A route (or a child) two rounds behind the newest still counts this
    /// long after the newest came: a round reaches neighbours a few
    /// milliseconds apart, and the upstream's copy may be the later one.
    static let roundGrace = RoomConstants.countReportInterval / 3

    let me: NodeID
    let isHost: Bool
    private(set) var heard: [NodeID: (report: Report, at: Instant)] = [:]
    /// The neighbour this member counts itself below (nil for the host, or with no route).
    private(set) var upstream: NodeID?

    /// The newest round any route brought (the host: the one it started), and when.
    private(set) var newest: UInt16 = 0
    private var newestAt: Instant?
    /// The round of our own route when it last changed, and when (our
    /// children catch up within a round trip).
    private var lastRound: UInt16 = 0
    private var routeAt: Instant?

    /// `firstRound`: where a host's rounds start; from the wall clock, so a
    /// host started again goes on with rounds newer than its last.
    init(me: NodeID, isHost: Bool, firstRound: UInt16 = 0) {
        self.me = me
        self.isHost = isHost
        newest = firstRound
        lastRound = firstRound
    }

    /// Whether round `a` comes after `b` (wrapping, as RTP sequence numbers).
    static func isNewer(_ a: UInt16, than b: UInt16) -> Bool { Int16(bitPattern: a &- b) > 0 }

    /// The host starts a round (every `countReportInterval`).
    mutating func startRound(now: Instant) {
        guard isHost else { return }
        newest &+= 1
        newestAt = now
        lastRound = newest
        routeAt = now
    }

    /// A neighbour's report.
    mutating func received(_ report: Report, from peer: NodeID, now: Instant) {
        guard peer != me else { return }
        heard[peer] = (report, now)
        // (Another round than ours, even an older one, is taken once nothing
        // newer came for `staleAfter`: the host's clock went back. Not ours
        // again: a loop cut off from the host goes on reporting that.)
        if !isHost, isRoute(report), newestAt.map({
            Self.isNewer(report.round, than: newest) || now - $0 >= Self.staleAfter && report.round != newest
        }) ?? true {
            newest = report.round
            newestAt = now
        }
        chooseUpstream(now: now)
    }

    /// A neighbour is gone (left, session ended, no longer a neighbour).
    mutating func forget(_ peer: NodeID, now: Instant) {
        guard heard.removeValue(forKey: peer) != nil else { return }
        chooseUpstream(now: now)
    }

    /// Drops reports that went stale and routes that fell behind the rounds
    /// (call about every `countReportSoonest`); returns the neighbours not
    /// heard from for `staleAfter` (gone quiet).
    @discardableResult
    mutating func expire(now: Instant) -> [NodeID] {
        let quiet = heard.filter { now - $0.value.at >= Self.staleAfter }.map(\.key)
        for id in quiet { heard[id] = nil }
        chooseUpstream(now: now)
        return quiet
    }

    /// This member's hops from the host.
    var hops: UInt8 {
        if isHost { return 0 }
        guard let upstream, let r = heard[upstream]?.report, r.hops < Self.unreachable - 1 else { return Self.unreachable }
        return r.hops + 1
    }

    /// The round our route comes from: the host's latest, or our upstream's.
    var round: UInt16 {
        if isHost { return newest }
        return upstream.flatMap { heard[$0]?.report.round } ?? newest
    }

    /// The members this one speaks for: itself and the children (neighbours
    /// that chose it, further from the host) whose route is as fresh as ours.
    func subtree(now: Instant) -> UInt32 {
        guard hops < Self.unreachable else { return 1 }
        var sum: UInt64 = 1
        for (id, h) in heard where counts(id, now: now) { sum += UInt64(h.report.subtree) }
        return UInt32(clamping: sum)
    }

    /// Whether neighbour `id` counts as our child now: it chose us, sits
    /// further from the host, and its route keeps up with ours. (A child
    /// ahead of us counts: our own round can step back when we take a
    /// nearer upstream whose report of the newest is yet to come.)
    func counts(_ id: NodeID, now: Instant) -> Bool {
        guard let h = heard[id]?.report, h.upstream, hops < Self.unreachable, h.hops > hops else { return false }
        return Self.isNewer(h.round, than: round) || Self.isCurrent(h.round, newest: round, since: routeAt, now: now)
    }

    /// The report for neighbour `peer`.
    func report(for peer: NodeID, now: Instant) -> Report {
        let h = hops
        let reachable = h < Self.unreachable
        let up = reachable && peer == upstream
        return Report(hops: h, upstream: up, subtree: up ? subtree(now: now) : 0, round: round)
    }

    /// A report that offers a way to the host (not through us).
    private func isRoute(_ report: Report) -> Bool {
        !report.upstream && report.hops < Self.unreachable - 1
    }

    /// `round` is the newest or the one before (a report lost now and then
    /// costs nothing), or the one before that while the newest is younger
    /// than `roundGrace`.
    private static func isCurrent(_ round: UInt16, newest: UInt16, since: Instant?, now: Instant) -> Bool {
        round == newest || round == newest &- 1 || round == newest &- 2 && since.map { now - $0 < roundGrace } ?? true
    }

    /// Among the fresh routes of the current round (one came within
    /// `staleAfter`), fewest hops wins; the
    /// current upstream keeps its place on a tie, so the tree does not flap
    /// between equals. A neighbour that counts itself below us is no route
    /// (its hops came through us: split horizon).
    private mutating func chooseUpstream(now: Instant) {
        guard !isHost else { upstream = nil; return }
        defer {
            if round != lastRound || routeAt == nil {
                lastRound = round
                routeAt = now
            }
        }
        // No new round for `staleAfter`: nothing we hear reaches the host
        // (a loop cut off from it keeps reporting to itself).
        guard let newestAt, now - newestAt < Self.staleAfter else { upstream = nil; return }
        let routes = heard.filter {
            isRoute($0.value.report) && now - $0.value.at < Self.staleAfter
                && Self.isCurrent($0.value.report.round, newest: newest, since: newestAt, now: now)
        }
        guard let fewest = routes.values.map(\.report.hops).min() else { upstream = nil; return }
        if let upstream, routes[upstream]?.report.hops == fewest { return }
        upstream = routes.filter { $0.value.report.hops == fewest }.keys.min { $0.publicKey.lexicographicallyPrecedes($1.publicKey) }
    }
}
