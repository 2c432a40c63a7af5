import LVBCore
import LVBCrypto
import LVBRoom
import LVBTransport

/// A node's side of the rendezvous relay: gives each (rendezvous, peer) pair
/// a relay path address (`RelayPath`), sends what the transport sends there
/// to the rendezvous as `relay` messages, and feeds the `relayed` datagrams
/// it gets back into the transport as if they came from that address. The
/// session with the peer stays end to end: the rendezvous sees only sealed
/// datagrams. One per node, shared by its announcer and introducer.
public final class RelayClient: LiveRole {
    private let core: TransportCore
    private var paths: [UInt32: (server: NodeID, peer: NodeID)] = [:]
    private var byPair: [Pair: UInt32] = [:]
    private var servers: Set<NodeID> = []
    private var next: UInt32 = 1
    private var nextID: UInt16 = 0
    /// First pieces waiting for their second, per path (the latest only: pieces of one datagram travel together).
    private var halves: [UInt32: RelayPiece] = [:]
    /// Datagrams through relays, each way.
    public private(set) var sent = 0
    public private(set) var received = 0

    private struct Pair: Hashable {
        let server: NodeID, peer: NodeID
    }

    public init(core: TransportCore) {
        self.core = core
        core.relaySend = { [unowned self] address, datagram in
            guard let i = RelayPath.index(of: address), let path = paths[i],
                  let pieces = RelayPiece.split(datagram, id: nextID, maxPayload: core.maxPayload) else { return }
            nextID &+= 1
            for piece in pieces {
                try? core.send(RendezvousMessage.relay(peer: path.peer, piece: piece).encoded, channel: .rendezvous, to: path.server)
            }
            sent += 1
        }
        core.relayOwner = { [unowned self] address in RelayPath.index(of: address).flatMap { paths[$0]?.server } }
    }

    /// The relay path to `peer` through rendezvous `server`.
    public func path(to peer: NodeID, via server: NodeID) -> PeerAddress {
        let pair = Pair(server: server, peer: peer)
        if let i = byPair[pair] { return RelayPath.address(i) }
        let i = next
        next &+= 1
        paths[i] = (server, peer)
        byPair[pair] = i
        return RelayPath.address(i)
    }

    /// Whether `address` is a relay path (for tests and stats).
    public func isRelayed(_ address: PeerAddress?) -> Bool { address.map(RelayPath.isRelay) ?? false }

    public func handle(_ event: NodeEvent) {
        guard case .transport(let event) = event else { return }
        switch event {
        case let .hello(id, hello) where hello.role == .rendezvous:
            servers.insert(id)
        case let .gone(id, _):
            servers.remove(id)
        case let .message(server, .rendezvous, payload) where servers.contains(server):
            guard case let .relayed(peer, piece)? = try? RendezvousMessage.parse(payload) else { return }
            let address = path(to: peer, via: server)
            guard let i = RelayPath.index(of: address) else { return }
            var datagram = piece.bytes
            if piece.count == 2 {
                // Two pieces: keep the first until the second of the same datagram comes.
                if piece.index == 0 {
                    halves[i] = piece
                    return
                }
                guard let first = halves.removeValue(forKey: i), first.id == piece.id else { return }
                datagram = first.bytes + piece.bytes
            }
            received += 1
            core.receive(datagram, from: address)
        default:
            break
        }
    }

    public func tick() {}
    public func leave() {}
    public func stop() {}
}
