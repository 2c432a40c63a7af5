import LVBCore
import LVBCrypto

/// How many are in the room, counted up a tree without anyone hearing from
/// everyone: each member reports to its gossip neighbours how far it is from
/// the host (hops, as a distance vector) and, to the one neighbour it chose
/// as upstream (fewest hops), how many members it speaks for (itself and
/// those that chose it). The host's own count is then the room's. A member
/// counts only the neighbours that chose it and sit further from the host
/// than it does, so a loop left by stale reports counts nobody twice.
/// Liveness is local: a neighbour silent for `staleAfter` counts for nothing.
/// Sans-IO: the room node sends the reports and feeds in what arrives.
struct PresenceCount {
    struct Report: Equatable, Sendable {
        /// Hops from the host (0: the host; `unreachable`: no route known).
        var hops: UInt8
        /// The sender counts itself below the receiver (the receiver is its upstream).
        var upstream: Bool
        /// Members the sender speaks for: itself and those below it.
        var subtree: UInt32
    }

    /// Hops meaning "no route to the host"; also the most a route may take.
    static let unreachable: UInt8 = 64
    /// A report older than this counts for nothing (three report intervals).
    static let staleAfter = RoomConstants.countReportInterval * 3

    let me: NodeID
    let isHost: Bool
    private(set) var heard: [NodeID: (report: Report, at: Instant)] = [:]
    /// The neighbour this member counts itself below (nil for the host, or with no route).
    private(set) var upstream: NodeID?

    init(me: NodeID, isHost: Bool) {
        self.me = me
        self.isHost = isHost
    }

    /// A neighbour's report.
    mutating func received(_ report: Report, from peer: NodeID, now: Instant) {
        guard peer != me else { return }
        heard[peer] = (report, now)
        chooseUpstream(now: now)
    }

    /// A neighbour is gone (left, session ended, no longer a neighbour).
    mutating func forget(_ peer: NodeID, now: Instant) {
        guard heard.removeValue(forKey: peer) != nil else { return }
        chooseUpstream(now: now)
    }

    /// Drops reports that went stale (call before reading, about once a
    /// report interval); returns the neighbours they came from (gone quiet).
    @discardableResult
    mutating func expire(now: Instant) -> [NodeID] {
        let quiet = heard.filter { now - $0.value.at >= Self.staleAfter }.map(\.key)
        for id in quiet { heard[id] = nil }
        if !quiet.isEmpty || upstream.map({ heard[$0] == nil }) == true { chooseUpstream(now: now) }
        return quiet
    }

    /// This member's hops from the host.
    var hops: UInt8 {
        if isHost { return 0 }
        guard let upstream, let r = heard[upstream]?.report, r.hops < Self.unreachable - 1 else { return Self.unreachable }
        return r.hops + 1
    }

    /// The members this one speaks for: itself and the fresh reports of the
    /// neighbours that chose it and are further from the host.
    var subtree: UInt32 {
        let mine = hops
        var sum: UInt64 = 1
        for (_, h) in heard where h.report.upstream && h.report.hops > mine {
            sum += UInt64(h.report.subtree)
        }
        return UInt32(clamping: sum)
    }

    /// The report for neighbour `peer`.
    func report(for peer: NodeID) -> Report {
        let h = hops
        let reachable = h < Self.unreachable
        return Report(hops: h, upstream: reachable && peer == upstream, subtree: reachable && peer == upstream ? subtree : 0)
    }

    /// Fewest hops wins; the current upstream keeps its place on a tie, so
    /// the tree does not flap between equals. A neighbour that counts itself
    /// below us is no route (its hops came through us: split horizon).
    private mutating func chooseUpstream(now: Instant) {
        guard !isHost else { upstream = nil; return }
        let routes = heard.filter {
            !$0.value.report.upstream && $0.value.report.hops < Self.unreachable - 1 && now - $0.value.at < Self.staleAfter
        }
        guard let fewest = routes.values.map(\.report.hops).min() else { upstream = nil; return }
        if let upstream, routes[upstream]?.report.hops == fewest { return }
        let best = routes.filter { $0.value.report.hops == fewest }.keys.min { $0.publicKey.lexicographicallyPrecedes($1.publicKey) }
        upstream = best
    }
}
