import LVBCore
import LVBCrypto
import LVBTransport

/// Runs gossip over a `TransportCore` session layer (the gossip channel).
public final class TransportGossipAdapter: GossipTransport {
    public let core: TransportCore

    /// Who may introduce this node to a neighbour it holds no session with
    /// (the room's host); every rendezvous is asked too.
    public var coordinators: () -> [NodeID] = { [] }

    public init(core: TransportCore) { self.core = core }

    public func sendGossip(_ payload: [UInt8], to id: NodeID) {
        // Unknown peers and oversize payloads cannot happen for gossip's own
        // messages (it connects first; events fit a datagram); drop if they do.
        try? core.send(payload, channel: .gossip, to: id)
    }

    public func connect(to peer: PeerRecord) {
        guard peer.id != core.nodeID, !core.isEstablished(with: peer.id) else { return }
        core.reach(peer.id, at: [peer.address], via: coordinators())
    }

    public func address(of id: NodeID) -> PeerAddress? { core.endpoint(of: id) }

    public func isConnected(_ id: NodeID) -> Bool { core.isEstablished(with: id) }
}
