import LVBCore
import LVBCrypto
import LVBGossip

/// Counting the room without hearing from everyone, a room feature: members
/// report up a tree over the gossip neighbours (`PresenceCount`, carried in
/// `CountReport` messages), and the host publishes the total in its census
/// (`Census`).
final class RoomCount: RoomFeature {
    private unowned let node: RoomNode
    /// This node's part in the counting tree.
    var presenceCount: PresenceCount
    /// When it last reported to everyone, what it last told its upstream,
    /// whether that changed since, and when it last let quiet neighbours go.
    private var lastCountReport: Instant?
    private var lastUpstreamReport: (upstream: NodeID?, subtree: UInt32, at: Instant)
    private var countDirty = false
    private var lastCountExpiry: Instant
    /// The host's last census.
    private var lastCensus: (census: Census, at: Instant)?

    /// Its reports go out within `countReportSoonest` (250 ms) of a change: checked every 50 ms.
    static var tickInterval: Duration? { .milliseconds(50) }

    init(node: RoomNode) {
        self.node = node
        presenceCount = PresenceCount(me: node.core.nodeID, isHost: node.isHost)
        lastUpstreamReport = (nil, 0, node.clock.now())
        lastCountExpiry = node.clock.now()
    }

    static let kinds: [any RoomEventRule.Type] = [Census.self]
    static let messages: [any RoomMessageContent.Type] = [CountReport.self]

    /// A neighbour's count report.
    func reported(_ report: PresenceCount.Report, from peer: NodeID) {
        guard node.isAdmitted, node.hears(peer) else { return }
        let now = node.clock.now()
        let before = presenceCount.subtree
        presenceCount.received(report, from: peer, now: now)
        if let changes = node.state?.noteActivity(from: peer) { changes.forEach(node.report(_:)) }
        // The host's own report carries the room's count: a member that
        // hears the host shows it at once, whatever its gossip neighbours.
        if peer == node.host, report.hops == 0, report.subtree > 0, let changes = node.state?.hostCounted(report.subtree) {
            changes.forEach(node.report(_:))
        }
        if presenceCount.subtree != before { reportCountSoon(now: now) }
    }

    /// A neighbour went (session ended, left, or no longer in the active view).
    func peerGone(_ peer: NodeID) {
        let before = presenceCount.subtree
        presenceCount.forget(peer, now: node.clock.now())
        if presenceCount.subtree != before { reportCountSoon(now: node.clock.now()) }
        if peer == node.host { node.state?.hostCountLost().forEach(node.report(_:)) }
    }

    /// Count reports and, on the host, the census; each tick.
    func tick(now: Instant) {
        let (core, gossip, host, state) = (node.core, node.gossip, node.host, node.state)
        // A neighbour gone quiet stops counting soon after, not at the next report.
        if now - lastCountExpiry >= RoomConstants.countReportSoonest {
            lastCountExpiry = now
            let before = presenceCount.subtree
            // A gossip neighbour quiet for three report intervals is gone as
            // far as the overlay is concerned: replace it now rather than
            // when its session times out (15 s), so the members that counted
            // through it find another way to the host.
            for peer in presenceCount.expire(now: now) {
                if gossip.active.contains(peer) { gossip.peerDown(peer) }
                if peer == host { state?.hostCountLost().forEach(node.report(_:)) }
            }
            if presenceCount.subtree != before { reportCountSoon(now: now) }
        }
        if lastCountReport.map({ now - $0 >= RoomConstants.countReportInterval }) ?? true {
            lastCountReport = now
            // A joiner the census lists reports to the host too: the host watches it.
            let listed = state?.census?.joiners.contains(core.nodeID) == true ? [host] : []
            // The host's report carries the room's count (what its census would say).
            let roomCount = node.isHost ? countedNow() : nil
            for peer in Set(gossip.active).union(presenceCount.heard.keys).union(listed) where core.isEstablished(with: peer) {
                var r = presenceCount.report(for: peer)
                if let roomCount { r.subtree = roomCount }
                node.send(.countReport(r), to: peer)
            }
            lastUpstreamReport = (presenceCount.upstream, presenceCount.subtree, now)
        } else if countDirty, now - lastUpstreamReport.at >= RoomConstants.countReportSoonest {
            countDirty = false
            if let up = presenceCount.upstream, core.isEstablished(with: up) {
                node.send(.countReport(presenceCount.report(for: up)), to: up)
            }
            lastUpstreamReport = (presenceCount.upstream, presenceCount.subtree, now)
        }
        if node.isHost { publishCensusIfDue(now: now) }
    }

    /// What this member speaks for changed: tell the upstream soon.
    private func reportCountSoon(now: Instant) {
        guard !node.isHost else { return }
        countDirty = lastUpstreamReport.upstream != presenceCount.upstream || lastUpstreamReport.subtree != presenceCount.subtree
    }

    /// The census the host would send now: the joiners it listed (passed
    /// on) that are still here, newest first. Count reports travel hop by
    /// hop, authenticated but unsigned, so a member could claim a subtree
    /// it does not have: the count is never more than the members whose
    /// signed joins the host holds (its roster, less those that left or
    /// were kicked).
    func currentCensus() -> Census? {
        guard let state = node.state else { return nil }
        let joiners = state.listed.filter(state.isPresent).prefix(Census.maxJoiners)
        return Census(count: countedNow() ?? 0, likes: state.likeTotal, joiners: Array(joiners))
    }

    /// The host's count: its counting tree's, never more than its roster.
    func countedNow() -> UInt32? {
        node.state.map { min(presenceCount.subtree, UInt32(clamping: $0.presence.presentCount)) }
    }

    private func publishCensusIfDue(now: Instant) {
        let since = lastCensus.map { now - $0.at }
        if let since, since < RoomConstants.censusSoonest { return }
        guard let census = currentCensus() else { return }
        if let since, since < RoomConstants.censusInterval, let last = lastCensus?.census,
           !Self.countMoved(from: last.count, to: census.count) { return }
        if let since, since < RoomConstants.censusRefresh, lastCensus?.census == census { return }
        guard case .success = node.publish(.census(census)) else { return }
        lastCensus = (census, now)
    }

    /// Whether the count moved enough for a census before `censusInterval`:
    /// by `censusMove` of the room and at least two members (one member
    /// coming or going is the next regular census's news).
    static func countMoved(from old: UInt32, to new: UInt32) -> Bool {
        let moved = old > new ? old - new : new - old
        return moved >= 2 && Double(moved) >= RoomConstants.censusMove * Double(max(old, new))
    }
}

extension RoomNode {
    /// This member's place in the counting tree: hops from the host (64:
    /// no route), the members it speaks for, and the neighbours it heard.
    public var countPlace: (hops: UInt8, subtree: UInt32, heard: Int) {
        let count = presenceCount
        return (count.hops, count.subtree, count.heard.count)
    }

    /// This node's part in the counting tree.
    var presenceCount: PresenceCount { feature(RoomCount.self)?.presenceCount ?? PresenceCount(me: core.nodeID, isHost: isHost) }

    /// Whether the count moved enough for a census before `censusInterval` (`RoomCount.countMoved`).
    static func countMoved(from old: UInt32, to new: UInt32) -> Bool { RoomCount.countMoved(from: old, to: new) }
}
