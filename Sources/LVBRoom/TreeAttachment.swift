import LVBCore
import LVBCrypto
import LVBGossip
import LVBMedia
import LVBTransport

/// How a node below the root takes the stream in its room's media tree: a
/// parent chosen by `TreePlacement`, a backup parent kept warm (session up,
/// passes shown), and a move to the backup, with the node's subtree, when
/// the parent has been silent for `RoomConstants.parentSilence`. A parent
/// that refuses (its slots taken), or sends nothing within `attachTimeout`
/// of our subscription, is left out of placement for
/// `RoomConstants.refusedFor`. Moved down by its parent, the node attaches
/// as deep as there is room and takes no children for a while. On stage it
/// takes the host's mix straight from the host and relays nothing. Part of
/// its `RelayTree`, which looks after the children.
final class TreeAttachment {
    /// The node the stream comes from now (nil: none yet; the host itself for its direct children).
    private(set) var parent: NodeID? {
        didSet { if parent != oldValue { tree.onParentChanged?(parent) } }
    }
    /// The parent to move to if this one goes silent.
    private(set) var backup: NodeID?
    private(set) var attachments = 0
    private(set) var failovers = 0
    private(set) var demotions = 0
    /// The latest attachment steps, newest last (at most `logLength`): what a
    /// test prints of a node that found no parent in time.
    private(set) var log: [(at: Instant, step: String)] = []
    private static let logLength = 12

    private unowned let tree: RelayTree
    var room: RoomNode { tree.room }
    var media: NodeMedia { tree.media }
    var core: TransportCore { tree.core }
    var clock: Clock { tree.clock }
    /// The node asked for the stream, not yet heard from.
    var asking: NodeID? { trying?.id }
    /// Asked, not yet heard from: who and since when.
    var trying: (id: NodeID, since: Instant, sessionUp: Bool, asked: Instant, orphaned: Bool)?
    /// When the backup (or the node asked) last answered anything: the
    /// backup is probed, so a dead one is passed over when it is needed.
    private var heardFrom: [NodeID: Instant] = [:]
    private var lastBackupProbe: Instant?
    /// When the candidates we hold a session with were last pinged (our stream had gone quiet).
    private var lastCandidateProbe: Instant?
    /// Left out of placement until then: nodes that refused us, and nodes
    /// that went silent (these with everything below them).
    var excluded: [NodeID: Exclusion] = [:]
    var silenced: [NodeID: Instant] = [:]
    /// Moved down by our parent: no children until then.
    private var demotedUntil: Instant?
    /// Children full nodes named when they refused us, until then (`RelaySignal.redirect`).
    var redirects: [NodeID: Instant] = [:]
    /// When we last asked the host for lack of anyone else (`askHost`).
    var hostAsked: Instant?
    /// Nodes silenced because they did not answer a subscription in time, and when.
    var unanswered: [NodeID: Instant] = [:]
    /// This node's NAT and whether it has a global IPv6 address: placement
    /// ranks first the parents it can reach without a relay.
    var asker: (nat: NATKind, ipv6: Bool) { (core.config.nat, tree.addresses.contains(where: \.isGlobalIPv6)) }
    /// When this node's outside address last changed (`TransportEvent.moved`).
    var movedAt: Instant?
    /// A parent punched again after a move: subscribed to again once heard
    /// from after then (a subscription sent before goes to the old address,
    /// and the parent may have let us go meanwhile).
    var refeed: (id: NodeID, at: Instant, sent: Instant?)?
    /// Since when the parent link has run through a relay, and when we last moved off one (`tickRelink`).
    var relayedSince: Instant?
    var lastRelink: Instant?
    var relinkReachSince: Instant?

    init(tree: RelayTree) { self.tree = tree }

    /// A session came up: a parent (or backup) we dialled sees our pass first, then our subscription.
    func handle(_ event: TransportEvent) {
        switch event {
        case .established(let info) where info.id == trying?.id:
            trying?.asked = clock.now()
            media.feed(room.host, from: info.id)
        case .established(let info) where unanswered[info.id] != nil:
            // Passed over while its session was coming up: it is alive after all.
            unanswered[info.id] = nil
            silenced[info.id] = nil
        case .moved, .peerMoved:
            handleMove(event)
        case .rtt(let peer, _), .message(let peer, _, _):
            if peer == backup || peer == trying?.id { heardFrom[peer] = clock.now() }
        default:
            break
        }
    }

    /// Whether `peer` answered within half a parent's silence: at our
    /// parent's silence, a node that died with it (relays die together) was
    /// last heard a whole silence ago, and one alive answered the probes
    /// sent at half the silence.
    private func isAlive(_ peer: NodeID, now: Instant) -> Bool {
        heardFrom[peer].map { now - $0 < RoomConstants.parentSilence / 2 } ?? false
    }

    /// The tree's tick, for the stream's side (every `treeTickInterval`).
    func tick(_ state: RoomState, now: Instant) {
        for (id, var e) in excluded {
            excluded[id] = e.until > now && !e.hasRoomAgain(state.tree[id]) ? e : nil
        }
        silenced = silenced.filter { $0.value > now }
        unanswered = unanswered.filter { silenced[$0.key] != nil }
        if state.isOnStage(core.nodeID) { return takeStageStream(now: now) }
        if let until = demotedUntil, now >= until { demotedUntil = nil }
        let slots = openSlots
        if slots > 0, media.downstream(of: room.host) == nil {
            media.startRelaying(room.host, slots: slots, repairKbps: tree.repairKbps)
            if let downstream = media.downstream(of: room.host) { tree.serve(downstream, slots: slots) }
        }
        // A leaf that decodes nothing takes no stream at all.
        guard slots > 0 || media.receivers[room.host] != nil else { return leaveTree() }
        let placement = TreePlacement(host: room.host, tree: state.tree)
        tickRefeed(now: now)
        let heard = media.lastHeard(from: room.host)
        // No new children without a parent, or while our own stream has
        // stopped for half a silence (unless we just moved: our children
        // subscribe again from our new address, and the stream comes back).
        let moving = movedAt.map { now - $0 < RoomConstants.parentSilence * 2 } ?? false
        tree.setAdopting(parent != nil && (moving || heard.map { now - $0 < RoomConstants.parentSilence / 2 } ?? false))
        if let t = trying {
            if let heard, heard > t.since {
                note("fed by \(t.id.short)", now: now)
                if parent != nil, parent != t.id { failovers += 1 }
                parent = t.id
                attachments += 1
                trying = nil
            } else if now - t.since >= (t.sessionUp ? RoomConstants.attachTimeoutLive : RoomConstants.attachTimeout)
                        || t.orphaned && !t.sessionUp && !core.isEstablished(with: t.id) && now - t.since >= RoomConstants.orphanSessionWait {
                // (An orphan does not wait long for a session: the node may
                // have died with its parent, and one that merely needs a
                // relay to be reached is too slow to heal within a second.
                // The dialling goes on; once up, the node is asked again.)
                silenced[t.id] = now + RoomConstants.refusedFor
                unanswered[t.id] = now
                note("\(t.id.short) did not answer (session \(t.sessionUp ? "up" : "new"))", now: now)
                trying = nil
            } else if now - t.asked >= RoomConstants.attachResubscribe, core.isEstablished(with: t.id) {
                // Nothing yet: the subscription (or the parent's answer) may
                // have been lost; a subscription is one small datagram.
                trying?.asked = now
                media.feed(room.host, from: t.id)
            }
        }
        // (Just moved: the parent is being punched again, and it is as
        // likely to come back first as any other.)
        let silent = !moving && (heard.map { now - $0 >= RoomConstants.parentSilence } ?? true)
        if trying == nil, let heard, now - heard >= RoomConstants.parentSilence / 2 {
            // Maybe it is not the parent but us: a new outside address.
            core.checkOwnAddress()
        }
        if trying == nil, let heard, now - heard >= RoomConstants.parentSilence / 2,
           lastCandidateProbe.map({ now - $0 >= RoomConstants.backupProbeInterval }) ?? true {
            // Quiet for half a silence: ping the candidates we hold a
            // session with but have not heard from lately (a session
            // outlives its peer by many seconds), so that at the silence
            // the live ones count as heard lately and the dead ones do not.
            lastCandidateProbe = now
            let quiet = Set(silenced.keys).union(parent.map { [$0] } ?? [])
            let candidates = placement.candidates(for: core.nodeID, excluding: Set(excluded.keys), silent: quiet, asker: asker)
            for id in candidates where id != room.host && core.isEstablished(with: id) && !heardLately(id, now: now) {
                core.probeRoundTrip(to: id)
            }
            // And dial the first ones we hold no session with: behind NATs
            // a session takes both sides punching, which should not start
            // only at the silence; and at the silence the ones whose session
            // came up are known alive (relays die together: of the few
            // places our view offers, several may have died with our parent).
            for id in candidates.lazy.filter({ $0 != self.room.host && !self.core.isEstablished(with: $0) }).prefix(RoomConstants.orphanDials)
            where !core.isReaching(id) {
                core.reach(id, at: placement.tree[id]?.addresses ?? [], via: [room.host])
            }
        }
        let feeder = media.feeder(of: room.host)
        // (Not one that just failed to answer us: our subscription to it
        // stays until we ask another, and what it sent before is no sign
        // it is alive.)
        if trying == nil, parent == nil, !silent, excluded[feeder] == nil, silenced[feeder] == nil {
            // Already fed (the host took the subscription sent with our admission request).
            parent = feeder
            attachments += 1
        }
        if trying == nil, parent == nil || silent {
            if let parent {
                silenced[parent] = now + RoomConstants.refusedFor
                note("\(parent.short) silent", now: now)
            }
            let (excluding, silent) = (Set(excluded.keys), Set(silenced.keys))
            // Moved down: as deep as there is room. Else the backup if it still
            // answers; else placement's first (among the shallowest, those
            // heard from lately first). Not a node we merely hold a session
            // with: relays die together, a dead one still looks established
            // and costs `attachTimeoutLive` each, and the sessions an orphan
            // holds are mostly with relays it once tried, killed with its parent.
            let ranked = placement.candidates(for: core.nodeID, excluding: excluding, silent: silent, asker: asker) { reachedDirectly($0, now: now) }
            let live = backup.flatMap { isAlive($0, now: now) && placement.isCandidate($0, for: core.nodeID, excluding: excluding, silent: silent) ? $0 : nil }
            // After a silence, one heard from within a parent's silence
            // first (relays die together, and each dead one that still
            // looks established costs `attachTimeoutLive`), shallower than
            // we were: orphans of different relays taking each other
            // would close a loop, but not when each takes a shallower one.
            let depth = placement.depth(of: core.nodeID) ?? Int.max
            // Then a child a full node named, if the view gives it a free
            // slot: orphans of relays killed together all race for the few
            // free slots the view shows highest up, and the view is a few
            // seconds old, so one refused there is likelier to find room a
            // hop down (a branch's lower levels have the most free slots).
            // (One our NAT can meet: a full node names its children blind to it.)
            let me = asker
            let redirected = ranked.first { id in
                (redirects[id].map { $0 > now } ?? false) && (placement.tree[id]?.reachable(from: me.nat, ipv6: me.ipv6) ?? true)
            }
            // Then one surely alive, however deep, before one that may have
            // died with our parent (a dead one with no session costs
            // `orphanSessionWait`, with one `attachTimeoutLive`).
            let alive = parent != nil ? ranked.first { heardLately($0, now: now) } : nil
            // (Moved down: the deepest heard from lately, if any: a relay
            // that died keeps its place in our view for a while.)
            let next = demotedUntil != nil ? ranked.last { heardLately($0, now: now) } ?? ranked.last
                : live ?? (parent != nil ? ranked.first { heardLately($0, now: now) && (placement.depth(of: $0) ?? Int.max) < depth } : nil)
                ?? redirected ?? alive ?? ranked.first ?? redirect(placement, now: now) ?? askAgain(placement, excluding: excluding, now: now)
                ?? askHost(now: now)
            if let next { attach(to: next, placement: placement, now: now) }
        }
        tickRelink(placement, silent: silent, now: now)
        keepBackup(placement)
        if let b = backup, lastBackupProbe.map({ now - $0 >= RoomConstants.backupProbeInterval }) ?? true {
            lastBackupProbe = now
            core.probeRoundTrip(to: b)
        }
        if let parent, trying == nil {
            tree.publishIfChanged(RelayPosition(parent: parent, depth: UInt8(RelayTree.depth(below: parent, placement)),
                                                slots: UInt8(tree.slots), children: UInt8(min(tree.childCount, tree.slots)),
                                                addresses: tree.addresses), now: now)
        }
    }

    /// On stage: a co-host gets its own mix back from the host (without
    /// itself), straight from the host, so it has nothing to pass on. Its
    /// children go elsewhere now; the room sees a leaf below the host, and
    /// after the stage it attaches wherever there is room, like a joiner.
    private func takeStageStream(now: Instant) {
        if media.downstream(of: room.host) != nil {
            tree.tellChildrenToGo()
            media.stopRelaying()
        }
        if media.feeder(of: room.host) != room.host { media.feed(room.host, from: nil) }
        parent = nil
        backup = nil
        trying = nil
        tree.publishIfChanged(RelayPosition(parent: room.host, depth: 1, slots: 0, children: 0, addresses: tree.addresses), now: now)
    }

    /// Children this node offers now: none while moved down.
    private var openSlots: Int { demotedUntil == nil ? tree.slots : 0 }

    /// Takes no stream any more (a leaf that decodes nothing, moved down):
    /// the parent hears our goodbye, the room sees a leaf with no children.
    private func leaveTree() {
        media.stopRelaying()
        guard let last = parent else { return }
        media.feed(room.host, from: nil)
        parent = nil
        backup = nil
        trying = nil
        if let published = tree.publishedPosition, published.slots > 0 {
            tree.publishIfChanged(RelayPosition(parent: last, depth: published.depth, slots: 0, children: 0, addresses: tree.addresses),
                                  now: clock.now())
        }
    }

    func note(_ step: String, now: Instant) {
        log.append((now, step))
        if log.count > Self.logLength { log.removeFirst(log.count - Self.logLength) }
    }

    /// Our parent says we cannot keep up: our children go elsewhere at once,
    /// and we attach as deep as there is room, taking none for a while.
    func movedDown(by peer: NodeID) {
        guard parent == peer || trying?.id == peer else { return }
        let now = clock.now()
        note("moved down by \(peer.short)", now: now)
        demotions += 1
        demotedUntil = now + RoomConstants.demotedFor
        tree.tellChildrenToGo()
        media.stopRelaying()
        excluded[peer] = Exclusion(until: now + RoomConstants.refusedFor, sticky: true)
        if parent == peer { parent = nil }
        trying = nil
    }

    /// `peer` sent media the host did not seal, and did not say its own
    /// parent lied (`MediaTrust`): left at once, with this node's children,
    /// and never chosen again while the node is in the room. The host is never blamed.
    func distrust(_ peer: NodeID) {
        guard peer != room.host else { return }
        let now = clock.now()
        note("\(peer.short) lied: left for good", now: now)
        excluded[peer] = Exclusion(until: now + RoomConstants.liarExcludedFor, sticky: true)
        silenced[peer] = nil
        if backup == peer { backup = nil }
        if trying?.id == peer { trying = nil }
        if parent == peer { parent = nil }
    }

    /// Subscribes with `next` (dialling it first unless it is the host or a session is up).
    func attach(to next: NodeID, placement: TreePlacement, now: Instant) {
        let how = next == backup ? "backup" : core.isEstablished(with: next) ? heardLately(next, now: now) ? "heard" : "session" : "new"
        note("asks \(next.short) (\(how), depth \(placement.depth(of: next).map(String.init) ?? "?"))", now: now)
        trying = (next, now, core.isEstablished(with: next), now, parent != nil)
        heardFrom = heardFrom.filter { $0.key == backup }
        if next == backup { backup = nil }
        if next != room.host, !core.isEstablished(with: next) {
            // Introduced by the host (and any rendezvous): behind NATs a relay
            // is reached only by both dialling at once.
            core.reach(next, at: placement.tree[next]?.addresses ?? [], via: [room.host])
        }
        // Sent now if the session is up; otherwise again when it comes up (`handle`).
        media.feed(room.host, from: next)
    }

    /// A session with `id` is up, runs straight to it (no relay) and carried
    /// something within a parent's silence (a node that just died still
    /// looks established): the candidates placement prefers among equally
    /// deep ones.
    private func reachedDirectly(_ id: NodeID, now: Instant) -> Bool {
        !core.isRelayed(id) && heardLately(id, now: now)
    }

    /// A session with `id` is up and carried something within half a
    /// parent's silence (see `isAlive`: at the silence, nodes that died with
    /// the parent are a whole silence quiet; live ones answered the probes).
    private func heardLately(_ id: NodeID, now: Instant) -> Bool {
        guard core.isEstablished(with: id), let heard = core.lastHeard(from: id) else { return false }
        return now - heard < RoomConstants.parentSilence / 2
    }

    /// Keeps a backup parent outside our parent's branch, its session up.
    private func keepBackup(_ placement: TreePlacement) {
        let excluding = Set(excluded.keys), silent = Set(silenced.keys)
        if let b = backup, placement.isCandidate(b, for: core.nodeID, excluding: excluding.union(parent.map { [$0] } ?? []), silent: silent) {
            return
        }
        backup = placement.backup(for: core.nodeID, parent: parent, excluding: excluding, silent: silent, asker: asker)
        if let b = backup, b != room.host, !core.isEstablished(with: b), !core.isReaching(b) {
            core.reach(b, at: placement.tree[b]?.addresses ?? [], via: [room.host])
        }
    }

    /// The node we asked has no slot for us: try another at once. The
    /// children it named are kept for when the room's positions offer no
    /// candidate (a joiner before gossip said where slots are free). A
    /// refusal naming none comes from a node with no stream to give now
    /// (its own parent went silent; a full node has children to name): it
    /// is left out for `noStreamRefusedFor`, as it may have one again soon.
    func refused(by peer: NodeID, redirectedTo children: [NodeID] = []) {
        let now = clock.now()
        // Noted even when we are not asking it now: the host answers the
        // subscription sent with our admission request before we try anyone.
        excluded[peer] = Exclusion(until: now + (children.isEmpty ? RoomConstants.noStreamRefusedFor : RoomConstants.refusedFor))
        if trying?.id == peer || parent == peer { note("\(peer.short) refused\(children.isEmpty ? "" : ", naming \(children.count)")", now: now) }
        for child in children where child != core.nodeID && child != room.host { redirects[child] = now + RoomConstants.redirectFor }
        guard trying?.id == peer || parent == peer else { return }
        if parent == peer {
            parent = nil
            // No new children before the next tick: we are looking for a parent.
            tree.setAdopting(false)
        }
        trying = nil
        // Asked again with the node's next tick, not the tree's next one.
        tree.tickSoon()
    }
}
