import LVBCore
import LVBCrypto
import Logging

/// What the gossip layer needs from the session layer.
public protocol GossipTransport: AnyObject {
    /// Sends a gossip payload to `id` (queued by the transport while a session comes up).
    func sendGossip(_ payload: [UInt8], to id: NodeID)
    /// Starts (or keeps) a session with `peer`.
    func connect(to peer: PeerRecord)
    /// Where `id` is reached now (the address its authenticated packets come from).
    func address(of id: NodeID) -> PeerAddress?
    /// Whether a session with `id` is up (periodic messages are not queued).
    func isConnected(_ id: NodeID) -> Bool
}

/// The room layer's judgement of an event gossip received.
public enum EventVerdict: Sendable {
    /// New and valid: applied; forward it.
    case accept
    /// Already known; not forwarded.
    case duplicate
    /// Invalid for this room (rights, rate, muted…): not forwarded; the sender loses standing.
    case reject
}

/// Counters of the broadcast, for tests and benchmarks.
public struct GossipStats: Sendable, Equatable {
    /// Events accepted from the network (not our own).
    public var delivered = 0
    /// EVENT payloads received (first copies and duplicates).
    public var eventCopiesReceived = 0
    public var duplicates = 0
    public var invalid = 0
    public var malformed = 0
    public var grafts = 0
    public var ihavesSent = 0
    public var digestsSent = 0
    public var repairsSent = 0
    /// Digests sent in answer to a neighbour's digest that showed it holds what we lack.
    public var pullsSent = 0
    /// Payload copies per delivered event (1.0 is the ideal of a tree).
    public var copiesPerDelivery: Double { delivered == 0 ? 0 : Double(eventCopiesReceived) / Double(delivered) }
}

/// One node's gossip: HyParView-style membership (active and passive views),
/// Plumtree broadcast (eager push on a tree, lazy IHAVE, GRAFT/PRUNE repair)
/// and periodic digests as a backstop. Sans-IO and single-threaded: its owner
/// feeds it messages (`receive`), peer losses (`peerDown`) and `tick()`.
public final class GossipNode {
    public let id: NodeID
    let transport: GossipTransport
    let clock: Clock
    let random: RandomSource
    /// The kinds of events this node reads and forwards.
    let kinds: EventKindTable
    let log = Log.logger("gossip")

    /// Judges and applies an event (the room state); called once per new event.
    public var accept: ((RoomEvent, _ from: NodeID?) -> EventVerdict)?
    /// The events a new member should get at once (room history).
    public var history: (() -> [RoomEvent])?
    /// A peer sent something invalid (standing is the room layer's business).
    public var onInvalid: ((NodeID) -> Void)?
    /// Whether `id` may become a neighbour (private rooms admit first).
    public var mayNeighbor: ((NodeID) -> Bool)?
    /// Whether this node reaches `id` without a relay (true), only through
    /// one (false), or not known (nil): the session's path when it is up,
    /// else what the two NATs allow (issue 48). Neighbours it reaches
    /// directly are preferred, and a relayed one gives way to one of those.
    public var reachesDirectly: ((NodeID) -> Bool?)?
    /// Authors whose progress every digest lists, whatever its range (the
    /// room's host: its census, room info and moderation matter to all).
    public var pinnedAuthors: () -> [NodeID] = { [] }

    public internal(set) var stats = GossipStats()
    public internal(set) var active: [NodeID] = []
    var passive: [PeerRecord] = []
    /// When a relayed neighbour last gave way to a direct one, and the swap under way.
    var lastSwap: Instant?
    /// Low-priority promotions (a view that is short but has its minimum)
    /// wait this long after a refusal, doubling up to `promotionBackoffMax`:
    /// in a room whose views are full every ask is refused, and each costs
    /// a session (through a relay, behind NATs). Reset when a neighbour goes.
    var promotionGap: Duration = .zero
    var nextPromotion: Instant?
    var swapping: (relayed: NodeID, direct: NodeID)?
    var eager: Set<NodeID> = []
    var lazy: Set<NodeID> = []
    var store = EventStore(capacity: GossipConstants.storeCapacity)
    var missing: [EventID: MissingEvent] = [:]
    var lazyQueue: [(EventID, except: NodeID?)] = []
    var pendingNeighbor: [NodeID: Instant] = [:]
    var strayNotified: [NodeID: Instant] = [:]
    var contact: PeerRecord?
    var lastLazyFlush: Instant
    var lastDigest: Instant
    var lastMaintenance: Instant
    var lastShuffle: Instant
    var digestCursor = 0
    /// When we last answered each neighbour's digest with ours.
    var lastPull: [NodeID: Instant] = [:]
    /// When an event last came in or went out (digests slow down when none did lately).
    var lastEventAt: Instant?

    public init(id: NodeID, transport: GossipTransport, kinds: EventKindTable, clock: Clock, random: RandomSource) {
        self.id = id
        self.kinds = kinds
        self.transport = transport
        self.clock = clock
        self.random = random
        let now = clock.now()
        lastLazyFlush = now
        lastDigest = now
        lastMaintenance = now
        lastShuffle = now
    }

    /// Joins the overlay through `contact` (the host, or any member).
    public func join(via contact: PeerRecord) {
        self.contact = contact
        transport.connect(to: contact)
        addActive(contact.id)
        send(.join, to: contact.id)
    }

    /// Broadcasts an event this node authored (already applied locally).
    public func broadcast(_ event: RoomEvent) {
        store.insert(event)
        lastEventAt = clock.now()
        push(event, except: nil)
    }

    public var knownEventCount: Int { store.authors.count }

    /// Whether the overlay needs a session with `peer`: a neighbour, one
    /// asked to be, or the contact it joined through. The passive view is
    /// addresses only (HyParView): it needs no session.
    public func needsSession(with peer: NodeID) -> Bool {
        active.contains(peer) || pendingNeighbor[peer] != nil || contact?.id == peer
    }

    /// The transport lost `peer`: repair the views. `idle`: the session
    /// ended only because neither side needed it (the peer is still there:
    /// it stays in the passive view).
    public func peerDown(_ peer: NodeID, idle: Bool = false) {
        guard active.contains(peer) || passive.contains(where: { $0.id == peer }) else { return }
        removeActive(peer)
        if !idle { passive.removeAll { $0.id == peer } }
        promoteIfNeeded(force: active.isEmpty)
    }

    func send(_ m: GossipMessage, to peer: NodeID) {
        transport.sendGossip(m.bytes, to: peer)
    }

    func pick<T>(_ items: [T]) -> T? {
        items.isEmpty ? nil : items[Int(random.uint64() % UInt64(items.count))]
    }
}

/// An event announced by IHAVE that we lack: who announced it and when to graft.
struct MissingEvent {
    var announcers: [NodeID]
    var deadline: Instant
}
