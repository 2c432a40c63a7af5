import LVBCore
import LVBCrypto
import LVBGossip
import LVBTransport

/// Where a node attaches in the room's media tree, read from the relay
/// positions a member holds (`RoomState.tree`: on the host, everyone's; on a member, what `TreeView` passed it). Pure: the same view gives
/// the same answer. Depth is counted along the parent chain, not taken from
/// what a node says of itself, and a chain that does not reach the host (a
/// parent nobody has heard of, a loop, more than `maxDepth` hops) disqualifies
/// the node: only nodes that can be shown to receive from the host are
/// offered, and never one below the node asking, so no attachment closes a
/// loop in the view it was chosen from.
public struct TreePlacement: Sendable {
    public let host: NodeID
    public let tree: [NodeID: RelayPosition]
    /// Longest chain followed: the deepest a relay position may say.
    public static let maxDepth = Int(RelayPosition.maxDepth)

    public init(host: NodeID, tree: [NodeID: RelayPosition]) {
        self.host = host
        self.tree = tree
    }

    /// The nodes from `id`'s parent up to the host (the host last), or nil
    /// when the chain does not reach the host. The host's own is empty.
    public func ancestors(of id: NodeID) -> [NodeID]? {
        var chain: [NodeID] = []
        var at = id
        while at != host {
            guard chain.count < Self.maxDepth, let parent = tree[at]?.parent, parent != id, !chain.contains(parent) else { return nil }
            chain.append(parent)
            at = parent
        }
        return chain
    }

    /// Hops from the host along the chain (nil: not connected to it).
    public func depth(of id: NodeID) -> Int? { ancestors(of: id)?.count }

    /// Whether `id` receives through `node` (`node` is one of its ancestors).
    public func isBelow(_ id: NodeID, _ node: NodeID) -> Bool {
        ancestors(of: id)?.contains(node) ?? false
    }

    /// The free slots `id` says it has; the host before its first position
    /// is taken to have one (asking it costs a refusal at worst).
    func free(_ id: NodeID) -> Int {
        if let p = tree[id] { return p.free }
        return id == host ? 1 : 0
    }

    /// Parents `me` may attach to, best first: nodes with a free slot whose
    /// chain reaches the host without passing through `me`; those `me` can
    /// reach without a relay first (`asker`: its NAT and whether it has a
    /// global IPv6 address, against each one's position: `RelayPosition.reachable`,
    /// so a node behind a hard NAT is a leaf to other hard ones but
    /// IPv6 ones); among those, the ones met at once before the ones met
    /// by birthday punching (`RelayPosition.reachableAtOnce`: its first
    /// second or so runs over a relay); then least depth, then those `me`
    /// already reaches directly (`direct`: a session up, not through a
    /// relay: no punch to wait for, no relay to spend), then most free slots; equals in an order of their own for each
    /// asker (a hash of both keys), so joiners arriving together spread out.
    /// `excluding`: nodes that refused lately; `silent`: nodes that went
    /// silent, left out with everything below them (fed by them, as far as
    /// the view knows) except the host's: everyone is below the host, and a
    /// host gone quiet towards us says nothing of its other children (one
    /// lost answer to a joiner's subscription left it no parent for 10 s).
    public func candidates(for me: NodeID, excluding: Set<NodeID> = [], silent: Set<NodeID> = [],
                           asker: (nat: NATKind, ipv6: Bool)? = nil, direct: (NodeID) -> Bool = { _ in false }) -> [NodeID] {
        var ranked: [(id: NodeID, reachable: Bool, depth: Int, direct: Bool, atOnce: Bool, free: Int, tie: UInt64)] = []
        for id in Set(tree.keys).union([host]) {
            guard let chain = chain(ifCandidate: id, for: me, excluding: excluding, silent: silent) else { continue }
            let reachable = asker.map { a in tree[id]?.reachable(from: a.nat, ipv6: a.ipv6) ?? true } ?? true
            let atOnce = asker.map { a in tree[id]?.reachableAtOnce(from: a.nat, ipv6: a.ipv6) ?? true } ?? true
            ranked.append((id, reachable, chain.count, direct(id), atOnce, free(id), Self.tie(me, id)))
        }
        ranked.sort { a, b in
            if a.reachable != b.reachable { return a.reachable }
            if a.atOnce != b.atOnce { return a.atOnce }
            if a.depth != b.depth { return a.depth < b.depth }
            if a.direct != b.direct { return a.direct }
            if a.free != b.free { return a.free > b.free }
            return a.tie < b.tie
        }
        return ranked.map(\.id)
    }

    /// Whether `id` is among `candidates(for: me, …)` (without ranking them all).
    public func isCandidate(_ id: NodeID, for me: NodeID, excluding: Set<NodeID> = [], silent: Set<NodeID> = []) -> Bool {
        chain(ifCandidate: id, for: me, excluding: excluding, silent: silent) != nil
    }

    /// `id`'s chain to the host if `id` may take `me` as a child, else nil.
    private func chain(ifCandidate id: NodeID, for me: NodeID, excluding: Set<NodeID>, silent: Set<NodeID>) -> [NodeID]? {
        guard id != me, !excluding.contains(id), !silent.contains(id), free(id) > 0,
              let chain = ancestors(of: id), !chain.contains(me), silent.subtracting([host]).isDisjoint(with: chain) else { return nil }
        return chain
    }

    /// A backup parent for `me` while it hangs below `parent`: the best
    /// candidate outside `parent`'s branch (neither `parent` nor below it,
    /// and under another child of the host when there is one), so the
    /// failure that silences the parent is unlikely to silence the backup;
    /// else the best other candidate.
    public func backup(for me: NodeID, parent: NodeID?, excluding: Set<NodeID> = [], silent: Set<NodeID> = [],
                       asker: (nat: NATKind, ipv6: Bool)? = nil, direct: (NodeID) -> Bool = { _ in false }) -> NodeID? {
        let options = candidates(for: me, excluding: excluding.union(parent.map { [$0] } ?? []), silent: silent, asker: asker, direct: direct)
        guard let parent else { return options.first }
        let branch = self.branch(of: parent)
        return options.first { id in !isBelow(id, parent) && (branch == nil || self.branch(of: id) != branch) }
            ?? options.first { !isBelow($0, parent) }
            ?? options.first
    }

    /// What the host passes down the tree for placement (`TreeView`): the
    /// `spots` best places to attach — nodes with a free slot whose chain
    /// reaches the host, least depth first, then most free slots, equals
    /// in an order fixed by their keys — and every node on their chains,
    /// each once, nearest the host first (the host itself left out). With
    /// the chains a member can tell which spots lie below itself.
    public func directory(spots: Int) -> [NodeID] {
        var open: [(id: NodeID, chain: [NodeID], free: Int, tie: UInt64)] = []
        for (id, position) in tree where id != host && position.free > 0 {
            guard let chain = ancestors(of: id) else { continue }
            open.append((id, chain, position.free, Self.tie(host, id)))
        }
        open.sort { a, b in
            if a.chain.count != b.chain.count { return a.chain.count < b.chain.count }
            if a.free != b.free { return a.free > b.free }
            return a.tie < b.tie
        }
        var depth: [NodeID: Int] = [:]
        for spot in open.prefix(spots) {
            depth[spot.id] = spot.chain.count
            for (i, above) in spot.chain.dropLast().enumerated() { depth[above] = spot.chain.count - 1 - i }
        }
        return depth.sorted { $0.value != $1.value ? $0.value < $1.value : $0.key.publicKey.lexicographicallyPrecedes($1.key.publicKey) }.map(\.key)
    }

    /// The host's child that `id` hangs below (nil for the host itself or an unconnected node).
    func branch(of id: NodeID) -> NodeID? {
        guard id != host, let chain = ancestors(of: id) else { return nil }
        return chain.count >= 2 ? chain[chain.count - 2] : id
    }

    private static func tie(_ a: NodeID, _ b: NodeID) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in a.publicKey.prefix(8) + b.publicKey.prefix(8) {
            h = (h ^ UInt64(byte)) &* 0x0100_0000_01b3
        }
        return h
    }
}
