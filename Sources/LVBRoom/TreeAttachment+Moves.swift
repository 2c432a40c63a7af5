import LVBCore
import LVBCrypto
import LVBMedia
import LVBTransport

/// Moves that are not deaths (issue 48): this node's or its parent's
/// outside address changed (`TransportEvent.moved`, `.peerMoved`), and a
/// parent link stuck on a relay while placement offers a parent this node
/// can reach directly.
extension TreeAttachment {
    func handleMove(_ event: TransportEvent) {
        switch event {
        case .moved:
            // Our own address changed: the silences were ours, and every
            // session is being punched again; the parent gets a moment more.
            silenced.removeAll()
            unanswered.removeAll()
            movedAt = clock.now()
            if let parent { refeed = (parent, clock.now(), nil) }
        case .peerMoved(let id):
            // Its silence was its move, not its death: a parent keeps its
            // place (as after our own move) and hears our subscription again.
            silenced[id] = nil
            unanswered[id] = nil
            guard id == parent else { return }
            movedAt = clock.now()
            if let t = trying, t.id != id { trying = nil }
            refeed = (id, clock.now(), nil)
        default:
            return
        }
    }

    /// After a move, the parent is subscribed to again once heard from
    /// (a subscription sent before went to the old address, and the parent
    /// may have let us go meanwhile), until its stream is back: the first
    /// may reach it while it has no stream itself and takes no children.
    func tickRefeed(now: Instant) {
        guard let r = refeed else { return }
        if r.id != parent || media.lastHeard(from: room.host).map({ $0 > r.at }) ?? false || now - r.at >= RoomConstants.refusedFor {
            refeed = nil
        } else if let heard = core.lastHeard(from: r.id), heard > r.at,
                  r.sent.map({ now - $0 >= RoomConstants.attachResubscribe }) ?? true {
            refeed?.sent = now
            media.feed(room.host, from: r.id)
        }
    }

    /// A parent link through a relay (a rendezvous's bytes, or a member's
    /// upload) while placement offers a parent this node can reach without
    /// one, no more than a level deeper: move there, as planned as a move
    /// to a backup (the old parent feeds us until the new one does). Not
    /// before `relinkAfter` on the relay, unless the two NATs cannot meet
    /// (the direct probes get their chance), and at most every `relinkInterval`;
    /// only once the node knows its NAT (`NATWatch`).
    func tickRelink(_ placement: TreePlacement, silent: Bool, now: Instant) {
        // (Only a node that knows its NAT: not knowing, every candidate looks
        // reachable, and moving among them would only cost pictures.)
        guard asker.nat != .unknown, trying == nil, !silent, let parent, core.isRelayed(parent) else {
            relayedSince = nil
            return
        }
        let since = relayedSince ?? now
        relayedSince = since
        let me = asker
        let hopeless = placement.tree[parent].map { !$0.reachable(from: me.nat, ipv6: me.ipv6) } ?? false
        guard hopeless || now - since >= RoomConstants.relinkAfter else { return }
        if let last = lastRelink, now - last < RoomConstants.relinkInterval { return }
        let depth = placement.depth(of: parent) ?? Int.max - 1
        let options = placement.candidates(for: core.nodeID, excluding: Set(excluded.keys).union([parent]), silent: Set(silenced.keys), asker: me)
        guard let next = options.first(where: { c in
            (placement.tree[c]?.reachable(from: me.nat, ipv6: me.ipv6) ?? true) && !core.isRelayed(c) && (placement.depth(of: c) ?? Int.max) <= depth + 1
        }) else { return }
        // Only over a session already up and direct: the stream keeps
        // coming from the old parent until then (a punch first, through
        // the host's introduction; the move waits for the next tick).
        guard core.isEstablished(with: next) else {
            if !core.isReaching(next) { core.reach(next, at: placement.tree[next]?.addresses ?? [], via: [room.host]) }
            if relinkReachSince == nil { relinkReachSince = now }
            if let since = relinkReachSince, now - since >= RoomConstants.relinkAfter {
                lastRelink = now  // (it never came up: not again for a while)
                relinkReachSince = nil
            }
            return
        }
        relinkReachSince = nil
        lastRelink = now
        note("\(parent.short) only through a relay; \(next.short) reachable", now: now)
        attach(to: next, placement: placement, now: now)
    }
}
