import LVBCore
import LVBCrypto
import LVBGossip
import LVBTransport

/// Where a member sits in the room's media tree: the node it takes the
/// host's stream from, how far from the host, how many children it takes and
/// has, and where children reach it. Latest wins per author.
///
///     body: flags(1) ‖ [parent(32)] ‖ depth(1) ‖ slots(1) ‖
///           children(1) ‖ count(1: 0...4) ‖ address × count
///           (flags: bit 0 a parent follows, bits 1-2 its NAT (`NATKind`:
///           0 unknown, 1 none, 2 endpoint-independent, 3 hard), no others;
///           an address: family(1: 4 or 6) ‖ 4 or 16 bytes ‖ port(2))
public struct RelayPosition: Equatable, Sendable {
    /// The node it receives the stream from; nil for the host (the root).
    public var parent: NodeID?
    /// Hops from the host: 0 for the host, its parent's depth + 1 otherwise.
    public var depth: UInt8
    /// Children it takes (its relay slots), and children it has.
    public var slots: UInt8
    public var children: UInt8
    /// Where a child dials it (its own view: local, advertised, reflexive).
    public var addresses: [PeerAddress]
    /// What its NAT does, as far as it knows (placement puts children where they can reach it).
    public var nat: NATKind

    public init(parent: NodeID?, depth: UInt8, slots: UInt8, children: UInt8, addresses: [PeerAddress], nat: NATKind = .unknown) {
        self.parent = parent
        self.depth = depth
        self.slots = slots
        self.children = children
        self.addresses = addresses
        self.nat = nat
    }

    /// Whether a node behind `nat` (with a global IPv6 address: `ipv6`)
    /// can reach this one directly: both over IPv6, or by an IPv4 punch.
    public func reachable(from nat: NATKind, ipv6: Bool) -> Bool {
        (ipv6 && addresses.contains(where: \.isGlobalIPv6)) || nat.meets(self.nat)
    }

    /// Whether that node reaches this one without waiting on birthday punching.
    public func reachableAtOnce(from nat: NATKind, ipv6: Bool) -> Bool {
        (ipv6 && addresses.contains(where: \.isGlobalIPv6)) || nat.meetsAtOnce(self.nat)
    }

    /// Slots not taken.
    public var free: Int { Int(slots) - Int(children) }

    /// What the wire allows at most: slots, depth (hops from the host) and addresses.
    public static let maxSlots: UInt8 = 16
    public static let maxDepth: UInt8 = 64
    public static let maxAddresses = 4
}

extension RelayPosition: EventContent {
    public static let kind = EventKind(12, "relay")
    public static let maxBodyLength = 1 + 32 + 3 + 1 + maxAddresses * (1 + 16 + 2)

    public func validate() throws(EventError) {
        guard (parent == nil) == (depth == 0) else { throw .badValue("relay depth \(depth) with\(parent == nil ? "out" : "") a parent") }
        guard depth <= Self.maxDepth else { throw .badValue("relay depth \(depth) is above \(Self.maxDepth)") }
        guard slots <= Self.maxSlots else { throw .badValue("relay slots \(slots) are above \(Self.maxSlots)") }
        guard children <= slots else { throw .badValue("relay children \(children) exceed its slots \(slots)") }
        guard addresses.count <= Self.maxAddresses else { throw .badValue("relay lists \(addresses.count) addresses (at most 4)") }
    }

    public func encode(into w: inout ByteWriter) {
        w.write(UInt8(parent == nil ? 0 : 1) | nat.rawValue << 1)
        if let parent { w.write(bytes: parent.publicKey) }
        w.write(depth)
        w.write(slots)
        w.write(children)
        w.write(UInt8(addresses.count))
        for a in addresses { w.write(address: a) }
    }

    public static func decode(_ r: inout RoomEventReader) throws(EventError) -> RelayPosition {
        let flags = try r.uint8()
        guard flags & ~0x07 == 0, let nat = NATKind(rawValue: flags >> 1) else { throw .badValue("relay flags \(flags)") }
        let parent = flags & 1 == 1 ? try r.nodeID() : nil
        let depth = try r.uint8(), slots = try r.uint8(), children = try r.uint8()
        let count = Int(try r.uint8())
        guard count <= maxAddresses else { throw .badValue("relay lists \(count) addresses (at most 4)") }
        var addresses: [PeerAddress] = []
        for _ in 0..<count { addresses.append(try r.address()) }
        return RelayPosition(parent: parent, depth: depth, slots: slots, children: children, addresses: addresses, nat: nat)
    }
}

extension EventKind {
    public static let relay = RelayPosition.kind
}

extension EventBody {
    public static func relay(_ position: RelayPosition) -> EventBody { EventBody(position) }
}

/// Only the host is the root and nobody is its own parent; latest wins, within the relay rate.
extension RelayPosition: RoomEventRule {
    /// Kept per author, but never in a snapshot: positions travel along the media tree (`TreeView`).
    static var retention: EventRetention { .latestPerAuthor }
    static func isNews(_ e: RoomEvent, in state: RoomState) -> Bool { false }

    func decide(_ e: RoomEvent, in state: RoomState, now: Instant, limited: Bool) -> RoomState.Verdict {
        guard (parent == nil) == (e.author == state.host), parent != e.author else { return .rejected(.badTreePosition) }
        if let order = RoomState.order(e, after: state.authorsLatest(e)) { return order }
        if state.presence.predatesLeave(e) { return .rejected(.stale) }
        if limited, !state.relayBuckets.allow(e.author, now: now) { return .rejected(.rateLimited) }
        state.keepByAuthor(e)
        state.relaysHeard[e.author] = now
        state.treeChanged()
        return .accepted([])
    }
}

extension RelayPosition {
    /// The tree's own: members read positions, people do not.
    static func notice(for change: RoomChange, names: RoomNames) -> RoomNotice? { nil }
}
