import LVBCore
import LVBCrypto
import LVBGossip

/// The roster, a room feature: a joiner tells the host, not the room: its
/// join and profile go to the host alone (`RosterMessage`), sent until the
/// host acknowledges them, and the room hears of it through the host's
/// census, which passes on the events of the latest joiners it lists, at a
/// bounded rate.
final class Roster: RoomFeature {
    private unowned let node: RoomNode
    /// Our join and profile for the host, until it acknowledges them.
    private var pending: (events: [[UInt8]], seq: UInt64, lastSent: Instant?)?
    /// The host: the joiners waiting their turn to be listed, oldest first,
    /// and the rate it lists them at (`RoomState.listed`).
    private var unlisted: [(id: NodeID, at: Instant)] = []
    private var listing = RateLimiter<Int>(count: RoomConstants.censusNewJoiners, per: RoomConstants.censusInterval,
                                           burst: RoomConstants.censusNewJoiners)

    init(node: RoomNode) { self.node = node }

    static let messages: [any RoomMessageContent.Type] = [RosterMessage.self]

    /// Admitted: signs our join (and profile) for the host, applies them
    /// here, and sends them until the host acknowledges them.
    func admitted() {
        guard !node.isHost else { return }
        var events: [RoomEvent] = []
        if case .success(let e) = node.publish(.join(instance: node.instance, role: .viewer), broadcast: false) { events.append(e) }
        if node.profile != Profile(), case .success(let e) = node.publish(.profile(node.profile), broadcast: false) { events.append(e) }
        guard let last = events.last else { return }
        pending = (events.map(\.encoded), last.id.seq, nil)
        tick(now: node.clock.now())
    }

    func tick(now: Instant) {
        if node.isHost { listNewJoiners(now: now) }
        guard let r = pending, r.lastSent.map({ now - $0 >= RoomConstants.admissionRetry }) ?? true,
              node.core.isEstablished(with: node.host) else { return }
        pending?.lastSent = now
        node.send(.roster(.roster(r.events)), to: node.host)
    }

    /// The host: a member's own join and profile. Applied here, not passed
    /// on (the census lists the latest joiners and passes theirs on).
    func received(_ events: [[UInt8]], from peer: NodeID) {
        guard node.isHost, let state = node.state, node.verified.contains(peer) else { return }
        guard let parsed = node.ownEvents(events, from: peer),
              parsed.allSatisfy({ $0.body.kind == MemberJoin.kind || $0.body.kind == Profile.kind }) else {
            node.penalize(peer)
            return
        }
        for e in parsed {
            // A new member's join waits its turn to be listed.
            if e.body.kind == MemberJoin.kind, !state.isPresent(peer) { unlisted.append((peer, node.clock.now())) }
            node.applyHere(e, from: peer)
        }
        // Listed at once while the rate allows: a small room hears of a joiner as it comes.
        listNewJoiners(now: node.clock.now())
        if let seq = parsed.map(\.id.seq).max() { node.send(.roster(.ack(seq: seq)), to: peer) }
    }

    func acknowledged(_ seq: UInt64, by peer: NodeID) {
        guard peer == node.host, pending?.seq == seq else { return }
        pending = nil
    }

    /// The host lists the latest joiners and passes on their join and
    /// profile to the whole room, at most `censusNewJoiners` every
    /// `censusInterval` (a room joined by many at once costs everyone a
    /// bounded rate); those that joined while the rate was spent wait their
    /// turn, newest first, and are let go unlisted once `censusRefresh` old.
    private func listNewJoiners(now: Instant) {
        guard let state = node.state, !unlisted.isEmpty else { return }
        // Newest last; those past `censusRefresh` are let go unlisted.
        unlisted.removeAll { now - $0.at >= RoomConstants.censusRefresh || !state.isPresent($0.id) }
        while let newest = unlisted.last, listing.allow(0, now: now) {
            unlisted.removeLast()
            guard let entry = state.presence.entries[newest.id], !state.listed.contains(newest.id) else { continue }
            state.listed.insert(newest.id, at: 0)
            node.gossip.broadcast(entry.join)
            if let p = state.byAuthor[Profile.kind]?[newest.id] { node.gossip.broadcast(p) }
        }
        if state.listed.count > Census.maxJoiners * 2 {
            state.listed = Array(state.listed.filter(state.isPresent).prefix(Census.maxJoiners))
        }
    }
}

extension Roster {
    static let commands: [RoomCommand] = [
        RoomCommand(console: "/viewers", "who is in the room") { text in
            guard text.isEmpty else { return nil }
            return { r in if let notice = r.viewersNotice() { r.show(notice) } }
        },
        RoomCommand(page: "viewers") { _ throws(CommandFieldError) in { r in if let notice = r.viewersNotice() { r.show(notice) } } },
    ]
}

extension RoomNode {
    /// Members' names as this node shows them: the nickname, or the short id.
    public var names: RoomNames { RoomNames { [unowned self] in state?.profile(of: $0)?.nickname ?? $0.short } }

    /// The `viewers` event (who is listed, their roles, the count and the
    /// likes) and its readable form; nil before the room has a state.
    public func viewersNotice() -> RoomNotice? {
        guard let state else { return nil }
        let names = self.names
        let members = state.members.sorted { $0.joinedAt < $1.joinedAt }
        let list = "[" + members.map { m in
            var o = JSONLine()
            o.add("id", m.id.text)
            o.add("nick", names(m.id))
            o.add("role", m.role.name)
            o.add("cohost", m.onStage)
            o.add("muted", state.isMuted(m.id))
            return o.text
        }.joined(separator: ",") + "]"
        var l = JSONLine(event: "viewers")
        l.add("count", state.count)
        l.add("listed", members.count)
        l.add("likes", Int(state.likeTotal))
        l.addRaw("viewers", list)
        let shown = members.count < state.count ? " (\(members.count) listed)" : ""
        let human = "\(state.count) in the room\(shown): "
            + members.map { names($0.id) + ($0.role == .host ? " (host)" : $0.onStage ? " (co-host)" : "") }.joined(separator: ", ")
        return RoomNotice(l, human: human, tag: "viewers")
    }
}
