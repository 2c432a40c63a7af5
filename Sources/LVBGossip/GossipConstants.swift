/// Gossip values ("specification": part of the protocol; "tuning": local choices).
public enum GossipConstants {
    // MARK: Specification
    /// Gossip message format version (first byte of every gossip payload).
    public static let version: UInt8 = 1
    /// Most event ids in one IHAVE or GRAFT.
    public static let maxIdsPerMessage = 24
    /// Most digest entries in one DIGEST.
    public static let maxDigestEntries = 20
    /// Pinned authors a digest lists beside its range, at most (`GossipNode.pinnedAuthors`).
    public static let maxPinnedAuthors = 2
    /// Below this many neighbours a node asks for more with high priority.
    public static let minimumNeighbours = 2
    /// Largest gossip payload (fits one transport datagram with room to spare).
    public static let maxPayload = 1100
    /// Missing sequence numbers listed per digest entry.
    public static let maxMissingPerEntry = 4
    /// Most peers in a SHUFFLE or SHUFFLE_REPLY.
    public static let maxShuffleEntries = 12

    // MARK: Tuning
    /// HyParView active view (neighbours that carry broadcasts).
    public static let activeViewSize = 5
    /// HyParView passive view (backups to promote when a neighbour fails).
    public static let passiveViewSize = 30
    /// Random-walk length of a FORWARD_JOIN (active / passive insertion point).
    public static let activeRandomWalk: UInt8 = 4
    public static let passiveRandomWalk: UInt8 = 2
    /// How long after an IHAVE a missing event is grafted from its announcer.
    public static let graftTimeout: Duration = .milliseconds(120)
    /// How often lazy announcements (IHAVE) are flushed.
    public static let lazyFlushInterval: Duration = .milliseconds(40)
    /// How often a digest goes to one random neighbour (anti-entropy)
    /// while events flow (one came in within `digestBusyWindow`), and how
    /// often when none did: an idle room of thousands gossips few digests.
    public static let digestInterval: Duration = .milliseconds(700)
    public static let idleDigestInterval: Duration = .milliseconds(1400)
    public static let digestBusyWindow: Duration = .seconds(3)
    /// How often the owner calls `GossipNode.tick()`.
    public static let tickInterval: Duration = .milliseconds(20)
    /// How often the views are maintained (promotions) and shuffled.
    public static let maintenanceInterval: Duration = .seconds(1)
    /// A relayed neighbour gives way to a directly reached one at most this often.
    public static let relayedSwapInterval: Duration = .seconds(5)
    /// The longest a short view waits to ask again after refusals (`promoteIfNeeded`).
    public static let promotionBackoffMax: Duration = .seconds(30)
    /// A NEIGHBOR request unanswered this long is forgotten, so it (or one to
    /// another peer) can go again; a node with no neighbour at all looks this
    /// often rather than every `maintenanceInterval`. Both request and reply
    /// are single datagrams: at 10 % loss one in five is lost, and 3 s of
    /// waiting left a joiner out of the room that long.
    public static let neighborRequestTimeout: Duration = .milliseconds(500)
    public static let shuffleInterval: Duration = .seconds(5)
    /// Events kept for repair (GRAFT and digests).
    public static let storeCapacity = 8192
    /// Most events sent in answer to one digest.
    public static let maxRepairPerDigest = 48
    /// A node answers a neighbour's digest with its own digest of the same
    /// range (when the neighbour holds what it lacks) at most this often.
    public static let pullInterval: Duration = .milliseconds(300)
    /// A sequence gap wider than this is a new epoch of the author, not loss.
    public static let maxTrackedGap: UInt64 = 1024
}
