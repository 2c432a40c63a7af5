import LVBCore
import LVBCrypto
import LVBTransport

/// A transport node on the virtual network: an endpoint, a `TransportCore`
/// ticked by the network's clock, and a log of everything it reported.
public final class SimulatedNode {
    public let core: TransportCore
    public let endpoint: VirtualEndpoint
    public private(set) var events: [TransportEvent] = []
    /// Payloads received per channel, in arrival order.
    public private(set) var received: [(NodeID, DataChannel, [UInt8])] = []
    private var ticker: TimerHandle?
    /// Sees every inbound datagram first; return false to drop it (a test's
    /// on-path attacker or capture point).
    public var inboundFilter: ((_ datagram: [UInt8], _ from: PeerAddress) -> Bool)?
    /// Layers above the transport (gossip, room) hook in here.
    public var onTransportEvent: ((TransportEvent) -> Void)?
    /// Keep every event and payload in `events`/`received` (off for big scenarios).
    public var recordsEvents = true

    public init(network: VirtualNetwork, identity: Identity, random: RandomSource,
                config: TransportConfig = TransportConfig(), address: PeerAddress? = nil) {
        endpoint = network.makeEndpoint(address: address)
        core = TransportCore(identity: identity, clock: network.clock, random: random, sink: endpoint, config: config)
        core.onEvent = { [unowned self] e in
            if recordsEvents {
                events.append(e)
                if case let .message(id, channel, payload) = e { received.append((id, channel, Array(payload))) }
            }
            onTransportEvent?(e)
        }
        endpoint.onReceive = { [unowned self] datagram, from in
            if let filter = inboundFilter, !filter(datagram, from) { return }
            core.receive(datagram, from: from)
        }
        ticker = network.every(TransportConstants.tickInterval) { [unowned self] in core.tick() }
    }

    public var id: NodeID { core.nodeID }
    public var address: PeerAddress { endpoint.address }

    /// Stops the node as if its process died: no bye, no more packets or ticks.
    public func crash() {
        ticker?.cancel()
        endpoint.close()
    }

    public func established(with other: SimulatedNode) -> Bool { core.isEstablished(with: other.id) }

    public var goneEvents: [(NodeID, GoneReason)] {
        events.compactMap { if case let .gone(id, r) = $0 { (id, r) } else { nil } }
    }

    public var establishedCount: Int {
        events.reduce(0) { if case .established = $1 { $0 + 1 } else { $0 } }
    }
}

public extension VirtualNetwork {
    /// `count` nodes with deterministic identities and randomness from `seed`.
    func makeNodes(_ count: Int, seed: UInt64, config: TransportConfig = TransportConfig()) -> [SimulatedNode] {
        let random = SeededRandom(seed: seed)
        return (0..<count).map { _ in
            let identity = try! Identity(seed: random.bytes(32))  // invariant: any 32 bytes are a valid Ed25519 seed
            return SimulatedNode(network: self, identity: identity, random: SeededRandom(seed: random.uint64()), config: config)
        }
    }
}
