import LVBCore
import LVBCrypto
import LVBGossip

// Counting the room without hearing from everyone: members report up a tree
// over the gossip neighbours (`PresenceCount`), and the host publishes the
// total in its census.

/// What a member last sent of its count, and when.
struct CountReporting {
    /// The route it last told every neighbour of.
    var toAll: (upstream: NodeID?, hops: UInt8, round: UInt16, at: Instant)?
    /// What it last told its upstream.
    var toUpstream: (upstream: NodeID?, subtree: UInt32, at: Instant)?
    /// The neighbours it reports to (a new one hears from it at once).
    var neighbours: Set<NodeID> = []
    /// The host: when it started its latest round.
    var roundStarted: Instant?
    /// The host: the count it tells (its subtree once it held for
    /// `countSettle`, or at least every `countSettleMost`) and when it took
    /// it, and the latest subtree and since when.
    var settled: UInt32?
    var settledAt: Instant?
    var latest: (count: UInt32, since: Instant)?
}

extension RoomNode {
    /// A neighbour's count report.
    func countReported(_ report: PresenceCount.Report, from peer: NodeID) {
        guard isAdmitted, hears(peer) else { return }
        let now = clock.now()
        presenceCount.received(report, from: peer, now: now)
        if let changes = state?.noteActivity(from: peer) { changes.forEach(report(_:)) }
        // A new round goes on at once: it is how the room finds a dead route.
        sendCountReports(now: now)
    }

    /// A neighbour went (session ended, left, or no longer in the active view).
    func countForget(_ peer: NodeID) {
        presenceCount.forget(peer, now: clock.now())
    }

    /// Count reports and, on the host, the rounds and the census; call each tick.
    func tickCount(now: Instant) {
        if isHost, countReporting.roundStarted.map({ now - $0 >= RoomConstants.countReportInterval }) ?? true {
            countReporting.roundStarted = now
            presenceCount.startRound(now: now)
        }
        // A gossip neighbour quiet for three report intervals is gone as
        // far as the overlay is concerned: replace it now rather than when
        // its session times out (15 s), so the members that counted through
        // it find another way to the host. (Routes that fell behind the
        // rounds go sooner, in `expire`.)
        for peer in presenceCount.expire(now: now) where gossip.active.contains(peer) { gossip.peerDown(peer) }
        sendCountReports(now: now)
        if isHost {
            settleCount(now: now)
            featureNewJoiners(now: now)
            publishCensusIfDue(now: now)
        }
    }

    /// Tells every neighbour when our route changed (a new round at once,
    /// another change at most every `countReportSoonest`) and, with no
    /// round coming, every `countReportInterval` and `roundGrace` (rounds
    /// come every `countReportInterval`, a little early or late: a fallback
    /// as often would double the reports); a new neighbour at once; our
    /// upstream, soon, when what we speak for changed.
    private func sendCountReports(now: Instant) {
        let count = presenceCount
        let route = (upstream: count.upstream, hops: count.hops, round: count.round)
        // A joiner the census lists reports to the host too: the host watches it.
        let listed = state?.census?.joiners.contains(core.nodeID) == true ? [host] : []
        let neighbours = Set(gossip.active).union(count.heard.keys).union(listed).filter { core.isEstablished(with: $0) }
        var to: Set<NodeID> = neighbours.subtracting(countReporting.neighbours)
        countReporting.neighbours = neighbours
        if let last = countReporting.toAll {
            let since = now - last.at
            let changed = last.upstream != route.upstream || last.hops != route.hops
            if last.round != route.round || changed && since >= RoomConstants.countReportSoonest
                || since >= RoomConstants.countReportInterval + PresenceCount.roundGrace {
                to = neighbours
            }
        } else {
            to = neighbours
        }
        if to == neighbours { countReporting.toAll = (route.upstream, route.hops, route.round, now) }
        let subtree = count.subtree(now: now)
        if let up = route.upstream, !to.contains(up), neighbours.contains(up), countReporting.toUpstream.map({
            ($0.upstream != up || $0.subtree != subtree) && now - $0.at >= RoomConstants.countReportSoonest
        }) ?? true {
            to.insert(up)
        }
        guard !to.isEmpty else { return }
        for peer in to { send(.countReport(count.report(for: peer, now: now)), to: peer) }
        if let up = route.upstream, to.contains(up) { countReporting.toUpstream = (up, subtree, now) }
    }

    /// A member moving in the tree is uncounted for a round trip (its
    /// report of the new hops or round is on its way): the host tells a
    /// count once it held for `countSettle`, so a census seldom catches
    /// such a dip (each one costs every member a signed event); and the
    /// count it tells is at most `countSettleMost` old, or a room whose
    /// count keeps moving (a crowd leaving, orphans finding new routes)
    /// would be told nothing new.
    private func settleCount(now: Instant) {
        let count = presenceCount.subtree(now: now)
        if countReporting.latest?.count != count { countReporting.latest = (count, now) }
        guard let latest = countReporting.latest else { return }
        if countReporting.settledAt.map({ now - latest.since >= RoomConstants.countSettle || now - $0 >= RoomConstants.countSettleMost }) ?? true {
            countReporting.settled = latest.count
            countReporting.settledAt = now
        }
    }

    /// The census the host would send now: the joiners it listed (passed
    /// on) that are still here, newest first. Count reports travel hop by
    /// hop, authenticated but unsigned, so a member could claim a subtree
    /// it does not have: the count is never more than the members whose
    /// signed joins the host holds (its roster, less those that left or
    /// were kicked).
    func currentCensus() -> Census? {
        guard let state else { return nil }
        let joiners = state.listed.filter(state.isPresent).prefix(Census.maxJoiners)
        let counted = countReporting.settled ?? presenceCount.subtree(now: clock.now())
        let count = min(counted, UInt32(clamping: state.presence.presentCount))
        return Census(count: count, likes: state.likeTotal, joiners: Array(joiners))
    }

    /// A census goes when the count, the likes or the joiners changed, at
    /// most every `censusInterval`; sooner (after `censusSoonest`) when the
    /// count moved by 1 % or more, so a crowd leaving at once is not told
    /// late because one left just before; and every `censusRefresh`.
    private func publishCensusIfDue(now: Instant) {
        let since = lastCensus.map { now - $0.at }
        if let since, since < RoomConstants.censusSoonest { return }
        if let since, since < RoomConstants.censusInterval, let last = lastCensus?.census,
           abs(Int64(countReporting.settled ?? 0) - Int64(last.count)) * 100 < Int64(last.count) {
            return
        }
        guard let census = currentCensus() else { return }
        if let since, since < RoomConstants.censusRefresh, lastCensus?.census == census { return }
        guard case .success = publish(.census(census)) else { return }
        lastCensus = (census, now)
    }
}
