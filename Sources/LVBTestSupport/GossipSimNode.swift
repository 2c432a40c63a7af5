import LVBCore
import LVBCrypto
import LVBGossip
import LVBRoom
import LVBTransport

/// A node with gossip on the virtual network: transport + `GossipNode`,
/// ticked by the network clock. `accept` defaults to accepting every valid event.
public final class GossipSimNode {
    public let node: SimulatedNode
    public let gossip: GossipNode
    /// Ids of the events delivered here (authored elsewhere), with virtual arrival time.
    public private(set) var delivered: [EventID: Instant] = [:]
    private var ticker: TimerHandle?
    private let network: VirtualNetwork

    public init(network: VirtualNetwork, node: SimulatedNode, random: RandomSource) {
        self.node = node
        self.network = network
        node.recordsEvents = false
        gossip = GossipNode(id: node.id, transport: TransportGossipAdapter(core: node.core), kinds: RoomEvents.table, clock: network.clock, random: random)
        gossip.accept = { [unowned self] e, _ in
            delivered[e.id] = network.clock.now()
            return .accept
        }
        node.onTransportEvent = { [unowned self] e in
            switch e {
            case let .message(id, .gossip, payload): gossip.receive(payload, from: id)
            case let .gone(id, _): gossip.peerDown(id)
            default: break
            }
        }
        ticker = network.every(GossipConstants.tickInterval) { [unowned self] in gossip.tick() }
    }

    public var id: NodeID { node.id }
    public var record: PeerRecord { PeerRecord(id: node.id, address: node.address) }

    public func crash() {
        ticker?.cancel()
        node.crash()
    }
}

public extension VirtualNetwork {
    /// `count` gossip nodes with deterministic identities and randomness.
    func makeGossipNodes(_ count: Int, seed: UInt64) -> [GossipSimNode] {
        let random = SeededRandom(seed: seed ^ 0x5EED)
        return makeNodes(count, seed: seed).map { GossipSimNode(network: self, node: $0, random: SeededRandom(seed: random.uint64())) }
    }
}
