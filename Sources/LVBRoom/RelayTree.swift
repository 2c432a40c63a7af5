import LVBCore
import LVBCrypto
import LVBGossip
import LVBMedia
import LVBTransport

/// This node's place in its room's media tree. The stream's origin (the
/// host) is the root and serves at most `slots` children; any other node
/// takes the stream from a parent (its `TreeAttachment`: placement, backup,
/// failover, moving down) and relays it to at most `slots` children of its
/// own, before decoding (a node that decodes nothing relays too). Either way
/// its children are the `Downstream` of the stream it serves, so this part
/// looks after them alike: a child that does clearly worse than its
/// siblings (`RoomConstants.slowChildLoss`) is told to move down (it
/// attaches as deep as it can and takes no children for
/// `RoomConstants.demotedFor`, so a slow link holds up no branch and, below
/// the host, no stream rate); a newcomer past the slots is told the node is
/// full. Each change of place is signed as the node's relay position (coalesced) and sent along the tree (`TreeView`).
public final class RelayTree: LiveRole {
    /// Children this node takes (`--relay-slots`; 0: a leaf).
    public let slots: Int
    /// This node's parent changed: attached (first, or again after a silence
    /// or a move down) or lost (nil). The node's owner reports it.
    public var onParentChanged: ((NodeID?) -> Void)?
    /// Times this node moved a child down.
    public private(set) var childrenMovedDown = 0
    /// A parent lied (sent media the host did not seal): left for good. The node's owner reports it.
    public var onLiar: ((NodeID, SealFailure) -> Void)?
    /// Parents left for lying; refusals of the host's media, and those excused.
    public private(set) var liars: [NodeID] = []
    public var mediaRefusals: Int { trust.refusals }
    public var refusalsExcused: Int { trust.excused }
    /// Times this node told its children its parent lied.
    public private(set) var upstreamNotices = 0

    let room: RoomNode
    let media: NodeMedia
    let core: TransportCore
    let clock: Clock
    let addresses: [PeerAddress]
    let repairKbps: Int
    /// How this node takes the stream; nil at the root, which makes it.
    private var attachment: TreeAttachment?
    /// How positions travel: ours up, the host's directory down.
    private lazy var view = TreeView(tree: self)
    private var published: RelayPosition?
    private var lastPublished: Instant?
    private var refusalsSent: [NodeID: Instant] = [:]
    private var lastTick: Instant?
    private var trust = MediaTrust()
    private var lastNotice: Instant?
    /// Each child's reported loss, smoothed.
    private var childLoss: [NodeID: Double] = [:]
    /// Children reporting heavy loss, since when.
    private var slowSince: [NodeID: Instant] = [:]

    /// The tree of the stream this node makes (the host's): the root.
    public static func root(room: RoomNode, media: NodeMedia, slots: Int, addresses: [PeerAddress], clock: Clock) -> RelayTree {
        let tree = RelayTree(room: room, media: media, slots: slots, addresses: addresses, repairKbps: 0, clock: clock)
        if let downstream = media.downstream(of: tree.core.nodeID) { tree.serve(downstream, slots: tree.slots) }
        return tree
    }

    /// The tree of a stream this node takes from a parent and relays.
    /// - Parameters:
    ///   - addresses: where children dial this node (its own view of itself).
    ///   - repairKbps: what retransmissions to one child may use.
    public static func member(room: RoomNode, media: NodeMedia, slots: Int, addresses: [PeerAddress], repairKbps: Int,
                              clock: Clock) -> RelayTree {
        let tree = RelayTree(room: room, media: media, slots: slots, addresses: addresses, repairKbps: repairKbps, clock: clock)
        tree.attachment = TreeAttachment(tree: tree)
        return tree
    }

    private init(room: RoomNode, media: NodeMedia, slots: Int, addresses: [PeerAddress], repairKbps: Int, clock: Clock) {
        self.room = room
        self.media = media
        self.core = room.core
        self.clock = clock
        self.slots = max(0, min(slots, Int(RelayPosition.maxSlots)))
        self.addresses = Array(addresses.prefix(RelayPosition.maxAddresses))
        self.repairKbps = repairKbps
    }

    /// The children of the stream this node serves, and how many it takes.
    private var downstream: Downstream<NodeID>? { media.downstream(of: room.host) }

    /// Takes at most `slots` children into `downstream`; a newcomer past them is told the node is full.
    func serve(_ downstream: Downstream<NodeID>, slots: Int) {
        downstream.maxFullSubscribers = adopting ? slots : 0
        downstream.onRefused = { [unowned self] peer in tellFull(peer) }
        downstream.admits = { [unowned self] peer in !isUpstream(peer) }
    }

    /// Whether our stream comes through `peer`, as far as we know: the
    /// parent (or the node we are asking) and the chain above it that the
    /// room's positions show. Taken as a child it would close a loop: two
    /// nodes moving at once can each take the other's child (seen at 10 %
    /// loss: three viewers fed one another, the host's picture reaching none).
    func isUpstream(_ peer: NodeID) -> Bool {
        guard let attachment, peer != room.host else { return false }
        let tree = room.state?.tree ?? [:]
        for first in [attachment.parent, attachment.asking].compactMap({ $0 }) {
            var at = first
            for _ in 0..<Int(RelayPosition.maxDepth) {
                if at == peer { return true }
                guard at != room.host, let next = tree[at]?.parent else { break }
                at = next
            }
        }
        return false
    }

    /// Whether this node takes new children now. A member with no parent
    /// (refused or moved by it, looking for another) or whose own stream
    /// has stopped (its parent went silent) takes none until it has a parent
    /// and the stream flows again: a child taken then would wait on a
    /// stream that is not coming, and orphans taking each other would
    /// close a loop with no way to the host. The children it has stay and
    /// resume with it.
    private(set) var adopting = true

    func setAdopting(_ open: Bool) {
        guard open != adopting else { return }
        adopting = open
        downstream?.maxFullSubscribers = open ? slots : 0
    }

    /// Whether the tree needs the session with `peer`: the parent, the
    /// backup kept warm, the node asked (children: their stream, `NodeMedia`).
    public func needsSession(with peer: NodeID) -> Bool {
        guard let attachment else { return false }
        return peer == attachment.parent || peer == attachment.backup || peer == attachment.asking || attachment.refeed?.id == peer
    }

    /// This node makes the stream: the tree's root.
    public var isRoot: Bool { attachment == nil }
    /// The node the stream comes from now (nil: none yet, or the root; the host itself for its direct children).
    public var parent: NodeID? { attachment?.parent }
    /// The parent to move to if this one goes silent.
    public var backup: NodeID? { attachment?.backup }
    /// Times this node attached to a parent (the first included), and moved after a silence.
    public var attachments: Int { attachment?.attachments ?? 0 }
    public var failovers: Int { attachment?.failovers ?? 0 }
    /// Bytes of the relay positions this node signed.
    public var positionBytesPublished: Int { view.publishedBytes }
    /// The latest attachment steps (asked, fed by, refused, did not answer), newest last.
    public var attachmentLog: [(at: Instant, step: String)] { attachment?.log ?? [] }
    /// Times this node was moved down by its parent.
    public var demotions: Int { attachment?.demotions ?? 0 }

    /// Children this node has now (previews that take only keyframes are not children).
    public var childCount: Int { downstream?.fullCount ?? 0 }
    public var children: [NodeID] { downstream?.fullSubscribers ?? [] }

    /// Bytes sent down the tree so far: a host's to its direct children, a
    /// viewer's relayed to its own, repairs and GOP bursts included (counted
    /// from the current room's relay).
    public var forwardedBytes: Int { downstream?.fanOut.stats.bytesSent ?? 0 }
    /// Children that resumed where they stopped (their parent had died) rather than from the GOP cache.
    public var resumes: Int { downstream?.fanOut.stats.resumeBursts ?? 0 }

    /// Hops from the host, as the room's positions show it (nil: not attached).
    public var depth: Int? {
        guard let attachment else { return 0 }
        guard let parent = attachment.parent, let state = room.state else { return nil }
        return Self.depth(below: parent, TreePlacement(host: room.host, tree: state.tree))
    }

    /// One below `parent` (a parent whose chain is not known yet counts as the host).
    static func depth(below parent: NodeID, _ placement: TreePlacement) -> Int {
        min((placement.depth(of: parent) ?? 0) + 1, Int(RelayPosition.maxDepth))
    }

    /// Sessions coming up and peers heard from; a member's relay signal to
    /// this node (the node we asked is full, or our parent moves us down).
    public func handle(_ event: NodeEvent) {
        switch event {
        case .transport(let event): attachment?.handle(event)
        case .relaySignal(let peer, .full): attachment?.refused(by: peer)
        case .relaySignal(let peer, .redirect(let children)): attachment?.refused(by: peer, redirectedTo: children)
        case .relaySignal(let peer, .moveDown): attachment?.movedDown(by: peer)
        case .relaySignal(let peer, .upstreamRefused): trust.notice(from: peer, now: clock.now())
        case let .mediaRefused(origin, feeder, failure) where origin == room.host: refused(from: feeder, failure)
        case .positions(let peer, let events): view.received(events, from: peer, parent: attachment?.parent ?? attachment?.asking, now: clock.now())
        default: break
        }
    }

    /// The host's media from `feeder` failed its seals: our children, who
    /// got the same, hear that it was not ours (at most every
    /// `upstreamNoticeInterval`); the feeder is suspected (`MediaTrust`),
    /// unless it is the host, which is never blamed.
    private func refused(from feeder: NodeID, _ failure: SealFailure) {
        let now = clock.now()
        noticeChildren(now: now)
        guard feeder != room.host, attachment != nil else { return }
        trust.refused(from: feeder, failure, now: now)
    }

    /// Tells our children that our parent lied (at most every `upstreamNoticeInterval`).
    private func noticeChildren(now: Instant) {
        guard !children.isEmpty, lastNotice.map({ now - $0 >= RoomConstants.upstreamNoticeInterval }) ?? true else { return }
        lastNotice = now
        upstreamNotices += 1
        for child in children { room.send(.relay(.upstreamRefused), to: child) }
    }

    /// Parents whose lie no notice excused: left now.
    private func blameLiars(now: Instant) {
        for (peer, failure) in trust.blamed(now: now) where !liars.contains(peer) {
            liars.append(peer)
            attachment?.distrust(peer)
            onLiar?(peer, failure)
            lastTick = nil
        }
    }

    /// Timers; call with the node's tick (the work runs every `treeTickInterval`).
    public func tick() {
        guard room.isAdmitted, let state = room.state else { return }
        let now = clock.now()
        blameLiars(now: now)
        // A test aid (`--lie-excuses`): a liar that says, as often as it may, that its parent lied.
        if let lie = media.lie, lie.excuses, lie.lies > 0 { noticeChildren(now: now) }
        if let lastTick, now - lastTick < RoomConstants.treeTickInterval { return }
        lastTick = now
        moveDownSlowChildren(now: now)
        if let attachment {
            attachment.tick(state, now: now)
        } else {
            publishIfChanged(RelayPosition(parent: nil, depth: 0, slots: UInt8(slots), children: UInt8(min(childCount, slots)),
                                           addresses: addresses), now: now)
        }
        view.tick(state, children: children, now: now)
    }

    /// Runs the tree's work on the node's next tick rather than the tree's next one.
    func tickSoon() { lastTick = nil }

    /// This node leaves the room: its children go elsewhere now rather than
    /// after a second of silence (the root's room ends with it).
    public func leave() {
        guard attachment != nil else { return }
        tellChildrenToGo()
    }

    /// Every child is told this node is full: they move elsewhere at once.
    func tellChildrenToGo() {
        for child in children { room.send(.relay(.full), to: child) }
    }

    /// Tells each child that does clearly worse than its siblings for
    /// `slowChildFor` to move down, and lets it go. The loss is its own
    /// link's when a sibling fed the same packets gets them nearly all.
    private func moveDownSlowChildren(now: Instant) {
        let kids = children
        // Reports are noisy (a second's worth of packets each): each child's
        // loss is smoothed over about a second of ticks.
        var smoothed: [NodeID: Double] = [:]
        for kid in kids { smoothed[kid] = (childLoss[kid] ?? 0) * 0.9 + (downstream?.loss(of: kid) ?? 0) * 0.1 }
        childLoss = smoothed
        let losses = kids.map { ($0, smoothed[$0] ?? 0) }
        // Only a sibling that reports says its link is fine: one that went
        // elsewhere (its goodbye lost) reports nothing and looked lossless
        // (seen at 10 % loss on every link: the host moved a child down).
        let reporting = Set(kids.filter { kid in downstream?.reportedAt(kid).map { now - $0 < RoomConstants.slowChildFor / 2 } ?? false })
        var slow: [NodeID: Instant] = [:]
        for (child, loss) in losses where loss >= RoomConstants.slowChildLoss
            && losses.contains(where: { $0.0 != child && $0.1 < RoomConstants.fineChildLoss && reporting.contains($0.0) }) {
            let since = slowSince[child] ?? now
            guard now - since >= RoomConstants.slowChildFor else {
                slow[child] = since
                continue
            }
            room.send(.relay(.moveDown), to: child)
            downstream?.unsubscribe(child)
            childrenMovedDown += 1
        }
        slowSince = slow
    }

    /// Tells `peer` our slots are taken (at most once every `refusalInterval` each), and
    /// which of our children to try instead: those whose positions show a
    /// free slot first, then those whose positions are not known yet, then
    /// the full ones (they send it further down). A joiner so finds a slot
    /// a hop or two down at once, before gossip tells it where slots are.
    private func tellFull(_ peer: NodeID) {
        let now = clock.now()
        if let last = refusalsSent[peer], now - last < RoomConstants.refusalInterval { return }
        refusalsSent[peer] = now
        if refusalsSent.count > 4 * Int(RelayPosition.maxSlots) { refusalsSent = refusalsSent.filter { now - $0.value < RoomConstants.refusalInterval } }
        let tree = room.state?.tree ?? [:]
        let ranked = children.filter { $0 != peer }.sorted { a, b in
            let (fa, fb) = (tree[a].map { $0.free > 0 ? 0 : 2 } ?? 1, tree[b].map { $0.free > 0 ? 0 : 2 } ?? 1)
            return fa != fb ? fa < fb : a.text < b.text
        }
        // An orphan's children are orphans too, and ours are below one that
        // feeds us: no use sending either there.
        let suggested = adopting && !isUpstream(peer) ? Array(ranked.prefix(RoomMessage.maxRedirects)) : []
        // Where they are first (and, from the host, where slots are free): the redirect alone names nodes the asker may not know.
        if let state = room.state, adopting { room.sendPositions(view.forRefused(state, children: suggested, now: now), to: peer) }
        room.send(.relay(suggested.isEmpty ? .full : .redirect(suggested)), to: peer)
    }

    /// The relay position we last published, if any.
    var publishedPosition: RelayPosition? { published }

    func publishIfChanged(_ position: RelayPosition, now: Instant) {
        // (With what this node's NAT does, once it knows.)
        var position = position
        position.nat = core.config.nat
        // Unchanged, the position goes again every `positionRefresh`: it
        // is how the room knows the relay is still there.
        let due = lastPublished.map { now - $0 >= RoomConstants.positionRefresh } ?? true
        guard position != published || due else { return }
        // (Not coalesced when the NAT was just measured: placement reads
        // it, and a position saying "unknown" offered a hard NAT's slots
        // to every joiner.)
        if let lastPublished, now - lastPublished < RoomConstants.relayPublishInterval, position.nat == published?.nat { return }
        if view.publish(position, parent: attachment?.parent) {
            published = position
            lastPublished = now
        }
    }
}
