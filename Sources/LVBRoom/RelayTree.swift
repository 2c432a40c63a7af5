import LVBCore
import LVBCrypto
import LVBGossip
import LVBMedia
import LVBTransport

/// This node's place in its room's media tree. The host is the root and
/// serves at most `slots` children; a viewer takes the host's stream from a
/// parent chosen by `TreePlacement` and relays it to at most `slots` children
/// of its own (before decoding; a node that decodes nothing relays too). It
/// keeps a backup parent warm (session up, passes shown) and moves to it,
/// with its subtree, when its parent has been silent for
/// `RoomConstants.parentSilence`; a parent that refuses (its slots taken),
/// or sends nothing within `attachTimeout` of our subscription, is left out
/// of placement for `RoomConstants.refusedFor`. A child that does clearly
/// worse than its siblings (`RoomConstants.slowChildLoss`) is told to move
/// down: it attaches as deep as it can and takes no children for
/// `RoomConstants.demotedFor`, so a slow link holds up no branch and, below
/// the host, no stream rate. Each change of place is gossiped as the node's
/// relay position (coalesced).
public final class RelayTree {
    /// Children this node takes (`--relay-slots`; 0: a leaf).
    public let slots: Int
    /// The node the stream comes from now (nil: none yet; the host itself for its direct children).
    public private(set) var parent: NodeID? {
        didSet { if parent != oldValue { onParentChanged?(parent) } }
    }
    /// This node's parent changed: attached (first, or again after a silence
    /// or a move down) or lost (nil). The node's owner reports it.
    public var onParentChanged: ((NodeID?) -> Void)?
    /// The parent to move to if this one goes silent.
    public private(set) var backup: NodeID?
    /// Times this node attached to a parent (the first included), and moved after a silence.
    public private(set) var attachments = 0
    public private(set) var failovers = 0
    /// Times this node was moved down by its parent, and moved a child down.
    public private(set) var demotions = 0
    public private(set) var childrenMovedDown = 0

    private let room: RoomNode
    private let media: NodeMedia
    private let core: TransportCore
    private let clock: Clock
    private let addresses: [PeerAddress]
    private let repairKbps: Int
    /// Asked, not yet heard from: who and since when.
    private var trying: (id: NodeID, since: Instant, sessionUp: Bool, asked: Instant)?
    /// When the backup (or the node asked) last answered anything: the
    /// backup is probed, so a dead one is passed over when it is needed.
    private var heardFrom: [NodeID: Instant] = [:]
    private var lastBackupProbe: Instant?
    /// Left out of placement until then: nodes that refused us, and nodes
    /// that went silent (these with everything below them).
    private var excluded: [NodeID: Exclusion] = [:]
    private var silenced: [NodeID: Instant] = [:]
    private var published: RelayPosition?
    private var lastPublished: Instant?
    private var refusalsSent: [NodeID: Instant] = [:]
    private var lastTick: Instant?
    /// Moved down by our parent: no children until then.
    private var demotedUntil: Instant?
    /// Each child's reported loss, smoothed.
    private var childLoss: [NodeID: Double] = [:]
    /// Children reporting heavy loss, since when.
    private var slowSince: [NodeID: Instant] = [:]

    /// - Parameters:
    ///   - addresses: where children dial this node (its own view of itself).
    ///   - repairKbps: what retransmissions to one child may use.
    public init(room: RoomNode, media: NodeMedia, slots: Int, addresses: [PeerAddress], repairKbps: Int, clock: Clock) {
        self.room = room
        self.media = media
        self.core = room.core
        self.clock = clock
        self.slots = max(0, min(slots, Int(RelayPosition.maxSlots)))
        self.addresses = Array(addresses.prefix(RelayPosition.maxAddresses))
        self.repairKbps = repairKbps
        room.onRelaySignal = { [unowned self] peer, signal in
            switch signal {
            case .full: refused(by: peer)
            case .moveDown: movedDown(by: peer)
            }
        }
        if room.isHost, let origin = media.publisher {
            origin.maxFullSubscribers = self.slots
            origin.onRefused = { [unowned self] peer in tellFull(peer) }
        }
    }

    /// Children this node has now (host: full subscribers of its stream).
    public var childCount: Int {
        room.isHost ? media.publisher?.fullSubscriberCount ?? 0 : media.relay?.childCount ?? 0
    }

    /// The children themselves (previews that take only keyframes are not children).
    public var children: [NodeID] {
        guard let fanOut = room.isHost ? media.publisher?.fanOut : media.relay?.fanOut else { return [] }
        return fanOut.peers.filter { !fanOut.isKeyframesOnly($0) }
    }

    /// Bytes sent down the tree so far: a host's to its direct children, a
    /// viewer's relayed to its own, repairs and GOP bursts included (counted
    /// from the current room's relay).
    public var forwardedBytes: Int {
        (room.isHost ? media.publisher?.fanOut : media.relay?.fanOut)?.stats.bytesSent ?? 0
    }

    /// Hops from the host, as the room's positions show it (nil: not attached).
    public var depth: Int? {
        if room.isHost { return 0 }
        guard let parent, let state = room.state else { return nil }
        return Self.depth(below: parent, TreePlacement(host: room.host, tree: state.tree))
    }

    /// One below `parent` (a parent whose chain is not known yet counts as the host).
    private static func depth(below parent: NodeID, _ placement: TreePlacement) -> Int {
        min((placement.depth(of: parent) ?? 0) + 1, Int(RelayPosition.maxDepth))
    }

    /// A session came up: a parent (or backup) we dialled sees our pass first, then our subscription.
    public func handle(_ event: TransportEvent) {
        switch event {
        case .established(let info) where info.id == trying?.id:
            trying?.asked = clock.now()
            media.feed(room.host, from: info.id)
        case .rtt(let peer, _), .message(let peer, _, _):
            if peer == backup || peer == trying?.id { heardFrom[peer] = clock.now() }
        default:
            break
        }
    }

    /// Whether `peer` answered within a parent's silence.
    private func isAlive(_ peer: NodeID, now: Instant) -> Bool {
        heardFrom[peer].map { now - $0 < RoomConstants.parentSilence } ?? false
    }

    /// Timers; call with the node's tick (the work runs every `treeTickInterval`).
    public func tick() {
        guard room.isAdmitted, let state = room.state else { return }
        let now = clock.now()
        if let lastTick, now - lastTick < RoomConstants.treeTickInterval { return }
        lastTick = now
        for (id, var e) in excluded {
            excluded[id] = e.until > now && !e.hasRoomAgain(state.tree[id]) ? e : nil
        }
        silenced = silenced.filter { $0.value > now }
        moveDownSlowChildren(now: now)
        if room.isHost {
            publishIfChanged(RelayPosition(parent: nil, depth: 0, slots: UInt8(slots), children: UInt8(min(childCount, slots)),
                                           addresses: addresses), now: now)
            return
        }
        if state.isOnStage(core.nodeID) { return takeStageStream(now: now) }
        if let until = demotedUntil, now >= until { demotedUntil = nil }
        let slots = self.openSlots
        if slots > 0, media.relayedOrigin != room.host {
            media.startRelaying(room.host, slots: slots, repairKbps: repairKbps)
            media.relay?.onRefused = { [unowned self] peer in tellFull(peer) }
        }
        // A leaf that decodes nothing takes no stream at all.
        guard slots > 0 || media.receivers[room.host] != nil else { return leaveTree() }
        let placement = TreePlacement(host: room.host, tree: state.tree)
        let heard = media.lastHeard(from: room.host)
        if let t = trying {
            if let heard, heard > t.since {
                if parent != nil, parent != t.id { failovers += 1 }
                parent = t.id
                attachments += 1
                trying = nil
            } else if now - t.since >= (t.sessionUp ? RoomConstants.attachTimeoutLive : RoomConstants.attachTimeout) {
                silenced[t.id] = now + RoomConstants.refusedFor
                trying = nil
            } else if now - t.asked >= RoomConstants.attachResubscribe, core.isEstablished(with: t.id) {
                // Nothing yet: the subscription (or the parent's answer) may
                // have been lost; a subscription is one small datagram.
                trying?.asked = now
                media.feed(room.host, from: t.id)
            }
        }
        let silent = heard.map { now - $0 >= RoomConstants.parentSilence } ?? true
        let feeder = media.feeder(of: room.host)
        if trying == nil, parent == nil, !silent, excluded[feeder] == nil {
            // Already fed (the host took the subscription sent with our admission request).
            parent = feeder
            attachments += 1
        }
        if trying == nil, parent == nil || silent {
            if let parent { silenced[parent] = now + RoomConstants.refusedFor }
            let (excluding, silent) = (Set(excluded.keys), Set(silenced.keys))
            // Moved down: as deep as there is room. Else the backup if it still
            // answers; else, after a silence, the shallowest node we already
            // hold a session with (a dead one costs a short wait, not a dial).
            let ranked = placement.candidates(for: core.nodeID, excluding: excluding, silent: silent) { reachedDirectly($0, now: now) }
            let live = backup.flatMap { isAlive($0, now: now) && placement.isCandidate($0, for: core.nodeID, excluding: excluding, silent: silent) ? $0 : nil }
            // After a silence, one heard from within a parent's silence
            // first (relays die together, and each dead one that still
            // looks established costs `attachTimeoutLive`), shallower than
            // we were: orphans of different relays taking each other
            // would close a loop, but not when each takes a shallower one.
            let depth = placement.depth(of: core.nodeID) ?? Int.max
            let next = demotedUntil != nil ? ranked.last
                : live ?? (parent != nil ? ranked.first { heardLately($0, now: now) && (placement.depth(of: $0) ?? Int.max) < depth }
                    ?? ranked.first { core.isEstablished(with: $0) } : nil)
                ?? ranked.first
            if let next { attach(to: next, placement: placement, now: now) }
        }
        keepBackup(placement)
        if let b = backup, lastBackupProbe.map({ now - $0 >= RoomConstants.backupProbeInterval }) ?? true {
            lastBackupProbe = now
            core.probeRoundTrip(to: b)
        }
        if let parent, trying == nil {
            publishIfChanged(RelayPosition(parent: parent, depth: UInt8(Self.depth(below: parent, placement)), slots: UInt8(slots),
                                           children: UInt8(min(childCount, slots)), addresses: addresses), now: now)
        }
    }

    /// This node leaves the room: its children go elsewhere now rather than
    /// after a second of silence.
    public func leave() {
        guard !room.isHost else { return }  // the room ends with its host
        for child in children { room.send(.relay(.full), to: child) }
    }

    /// On stage: a co-host gets its own mix back from the host (without
    /// itself), straight from the host, so it has nothing to pass on. Its
    /// children go elsewhere now; the room sees a leaf below the host, and
    /// after the stage it attaches wherever there is room, like a joiner.
    private func takeStageStream(now: Instant) {
        if media.relay != nil {
            for child in children { room.send(.relay(.full), to: child) }
            media.stopRelaying()
        }
        if media.feeder(of: room.host) != room.host { media.feed(room.host, from: nil) }
        parent = nil
        backup = nil
        trying = nil
        publishIfChanged(RelayPosition(parent: room.host, depth: 1, slots: 0, children: 0, addresses: addresses), now: now)
    }

    /// A node left out of placement for a while.
    private struct Exclusion {
        var until: Instant
        /// Kept for the whole time whatever it publishes (it moved us down).
        var sticky = false
        /// Its position said it was full since it refused us.
        var sawFull = false

        /// Whether a node that refused us has since said it was full, then
        /// that it has a free slot again (a child of its left): worth asking
        /// again before the time is up, or a node whose every candidate once
        /// refused waits out `refusedFor` without a stream. (A refusal often
        /// meets a position that said "free" before the slot was taken.)
        mutating func hasRoomAgain(_ position: RelayPosition?) -> Bool {
            guard !sticky, let position else { return false }
            if position.free <= 0 { sawFull = true }
            return sawFull && position.free > 0
        }
    }

    /// Children this node offers now: none while moved down.
    private var openSlots: Int { demotedUntil == nil ? slots : 0 }

    /// Takes no stream any more (a leaf that decodes nothing, moved down):
    /// the parent hears our goodbye, the room sees a leaf with no children.
    private func leaveTree() {
        media.stopRelaying()
        guard let last = parent else { return }
        media.feed(room.host, from: nil)
        parent = nil
        backup = nil
        trying = nil
        if let published, published.slots > 0 {
            publishIfChanged(RelayPosition(parent: last, depth: published.depth, slots: 0, children: 0, addresses: addresses), now: clock.now())
        }
    }

    /// Tells each child that does clearly worse than its siblings for
    /// `slowChildFor` to move down, and lets it go. The loss is its own
    /// link's when a sibling fed the same packets gets them nearly all.
    private func moveDownSlowChildren(now: Instant) {
        let kids = children
        // Reports are noisy (a second's worth of packets each): each child's
        // loss is smoothed over about a second of ticks.
        var smoothed: [NodeID: Double] = [:]
        for kid in kids { smoothed[kid] = (childLoss[kid] ?? 0) * 0.9 + (loss(of: kid) ?? 0) * 0.1 }
        childLoss = smoothed
        let losses = kids.map { ($0, smoothed[$0] ?? 0) }
        var slow: [NodeID: Instant] = [:]
        for (child, loss) in losses where loss >= RoomConstants.slowChildLoss
            && losses.contains(where: { $0.0 != child && $0.1 < RoomConstants.fineChildLoss }) {
            let since = slowSince[child] ?? now
            guard now - since >= RoomConstants.slowChildFor else {
                slow[child] = since
                continue
            }
            room.send(.relay(.moveDown), to: child)
            if room.isHost { media.publisher?.unsubscribe(child) } else { media.relay?.unsubscribe(child) }
            childrenMovedDown += 1
        }
        slowSince = slow
    }

    private func loss(of child: NodeID) -> Double? {
        room.isHost ? media.publisher?.loss(of: child) : media.relay?.loss(of: child)
    }

    /// Our parent says we cannot keep up: our children go elsewhere at once,
    /// and we attach as deep as there is room, taking none for a while.
    private func movedDown(by peer: NodeID) {
        guard parent == peer || trying?.id == peer, !room.isHost else { return }
        let now = clock.now()
        demotions += 1
        demotedUntil = now + RoomConstants.demotedFor
        for child in media.relay?.children ?? [] { room.send(.relay(.full), to: child) }
        media.stopRelaying()
        excluded[peer] = Exclusion(until: now + RoomConstants.refusedFor, sticky: true)
        if parent == peer { parent = nil }
        trying = nil
    }

    /// Subscribes with `next` (dialling it first unless it is the host or a session is up).
    private func attach(to next: NodeID, placement: TreePlacement, now: Instant) {
        trying = (next, now, core.isEstablished(with: next), now)
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

    /// A session with `id` is up and carried something within a parent's silence.
    private func heardLately(_ id: NodeID, now: Instant) -> Bool {
        guard core.isEstablished(with: id), let heard = core.lastHeard(from: id) else { return false }
        return now - heard < RoomConstants.parentSilence
    }

    /// Keeps a backup parent outside our parent's branch, its session up.
    private func keepBackup(_ placement: TreePlacement) {
        let excluding = Set(excluded.keys), silent = Set(silenced.keys)
        if let b = backup, placement.isCandidate(b, for: core.nodeID, excluding: excluding.union(parent.map { [$0] } ?? []), silent: silent) {
            return
        }
        backup = placement.backup(for: core.nodeID, parent: parent, excluding: excluding, silent: silent)
        if let b = backup, b != room.host, !core.isEstablished(with: b), !core.isReaching(b) {
            core.reach(b, at: placement.tree[b]?.addresses ?? [], via: [room.host])
        }
    }

    /// The node we asked has no slot for us: try another at once.
    private func refused(by peer: NodeID) {
        // Noted even when we are not asking it now: the host answers the
        // subscription sent with our admission request before we try anyone.
        excluded[peer] = Exclusion(until: clock.now() + RoomConstants.refusedFor)
        guard trying?.id == peer || parent == peer else { return }
        if parent == peer { parent = nil }
        trying = nil
    }

    /// Tells `peer` our slots are taken (at most once a second each).
    private func tellFull(_ peer: NodeID) {
        let now = clock.now()
        if let last = refusalsSent[peer], now - last < .seconds(1) { return }
        refusalsSent[peer] = now
        if refusalsSent.count > 4 * Int(RelayPosition.maxSlots) { refusalsSent = refusalsSent.filter { now - $0.value < .seconds(1) } }
        room.send(.relay(.full), to: peer)
    }

    private func publishIfChanged(_ position: RelayPosition, now: Instant) {
        guard position != published else { return }
        if let lastPublished, now - lastPublished < RoomConstants.relayPublishInterval { return }
        if case .success = room.publish(.relay(position)) {
            published = position
            lastPublished = now
        }
    }
}
