import LVBCore
import LVBCrypto
import LVBGossip

/// How relay positions reach the members that place themselves by them,
/// without going to the whole room: a member's own position goes to the
/// host and to its parent; the host keeps them all and passes down the tree
/// its directory (`TreePlacement.directory`: the best free slots and the
/// chains above them, a bounded set whatever the room's size); each relay
/// passes on to its children what its parent sent, with its own position,
/// so every member holds the directory and its own chain. A child is sent a
/// position when it changes, and again every `positionRefresh` while it is
/// offered (what keeps it in the child's view, `positionLifetime`). A full
/// node turning someone away sends its children's positions (the host: its
/// directory), so the one turned away has somewhere to go next. Part of its
/// `RelayTree`.
final class TreeView {
    private unowned let tree: RelayTree
    private var room: RoomNode { tree.room }
    /// Our latest position, signed.
    private(set) var own: RoomEvent?
    /// Bytes of the positions we signed (what each member would receive if they were gossiped to the room).
    private(set) var publishedBytes = 0
    /// Whose positions our parent passed us to pass on, and when (we pass
    /// on the latest we hold of each).
    private var fromParent: [NodeID: Instant] = [:]
    /// What each child was sent, by author: the event and when.
    private var sent: [NodeID: [NodeID: (id: EventID, at: Instant)]] = [:]
    /// The host's directory, rebuilt every `directoryInterval`, and when.
    private var directory: [RoomEvent] = []
    private var directoryBuilt: Instant?
    /// The host: when each position was last in the directory (a spot that
    /// fills goes down once more, full, then leaves it).
    private var offered: [NodeID: Instant] = [:]

    /// Places to attach the host offers.
    static let directorySpots = 32
    static let directoryInterval: Duration = .seconds(1)
    /// The directory a refusal carries is at most this old.
    static let refusalDirectoryAge: Duration = .milliseconds(200)

    init(tree: RelayTree) { self.tree = tree }

    /// Our position changed or is due again: signed, applied here, and sent
    /// to the host and to our parent (our children get it with the rest).
    func publish(_ position: RelayPosition, parent: NodeID?) -> Bool {
        guard case .success(let event) = room.publish(.relay(position), broadcast: false) else { return false }
        own = event
        publishedBytes += event.encoded.count
        if !tree.isRoot {
            room.sendPositions([event], to: room.host)
            if let parent, parent != room.host { room.sendPositions([event], to: parent) }
        }
        return true
    }

    /// Positions `peer` sent, already applied: kept to pass on when `peer`
    /// is the parent we take the stream from (or are asking).
    func received(_ events: [RoomEvent], from peer: NodeID, parent: NodeID?, now: Instant) {
        guard peer == parent, !tree.isRoot else { return }
        for e in events where e.author != tree.core.nodeID { fromParent[e.author] = now }
    }

    /// Passes what is due to each child (call with the tree's tick).
    func tick(_ state: RoomState, children: [NodeID], now: Instant) {
        fromParent = fromParent.filter { now - $0.value < RoomConstants.positionLifetime && state.relays[$0.key] != nil }
        sent = sent.filter { children.contains($0.key) }
        guard !children.isEmpty else { return }
        let offer = offered(state, now: now)
        for child in children {
            var log = sent[child] ?? [:]
            var due: [RoomEvent] = []
            for e in offer where e.author != child {
                if let last = log[e.author], last.id == e.id, now - last.at < RoomConstants.positionRefresh { continue }
                log[e.author] = (e.id, now)
                due.append(e)
            }
            sent[child] = log
            if !due.isEmpty { room.sendPositions(due, to: child) }
        }
    }

    /// What a full node sends one it turns away: its children's positions
    /// (the redirect names them), and the host its directory.
    func forRefused(_ state: RoomState, children: [NodeID], now: Instant) -> [RoomEvent] {
        let kids = children.compactMap { state.relays[$0] }
        guard tree.isRoot else { return kids }
        // Fresher than the one passed down: the one turned away has just seen its view fail.
        if let built = directoryBuilt, now - built >= Self.refusalDirectoryAge { directoryBuilt = nil }
        return kids + offered(state, now: now).filter { !children.contains($0.author) }
    }

    /// Ours first, then the host's directory or what our parent passed us, nearest the host first.
    private func offered(_ state: RoomState, now: Instant) -> [RoomEvent] {
        let passed: [RoomEvent]
        if tree.isRoot {
            rebuildDirectory(state, now: now)
            passed = directory
        } else {
            // Each chain followed once, not at every comparison (this runs every tree tick).
            let placement = TreePlacement(host: room.host, tree: state.tree)
            passed = fromParent.keys.compactMap { id in state.relays[id].map { (event: $0, depth: placement.depth(of: id) ?? .max) } }
                .sorted { $0.depth < $1.depth }.map(\.event)
        }
        return (own.map { [$0] } ?? []) + passed
    }

    private func rebuildDirectory(_ state: RoomState, now: Instant) {
        if let built = directoryBuilt, now - built < Self.directoryInterval { return }
        directoryBuilt = now
        let ids = TreePlacement(host: room.host, tree: state.tree).directory(spots: Self.directorySpots)
        for id in ids { offered[id] = now }
        offered = offered.filter { now - $0.value < RoomConstants.positionRefresh && state.relays[$0.key] != nil }
        let current = Set(ids)
        // A spot that just left the directory (filled up) goes down once more, as it is now.
        directory = (ids + offered.keys.filter { !current.contains($0) }).compactMap { state.relays[$0] }
    }
}
