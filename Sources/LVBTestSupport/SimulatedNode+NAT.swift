import LVBCore
import LVBCrypto
import LVBTransport

public extension VirtualNetwork {
    /// As `makeNodes(_:seed:config:)`, with node i behind `nats[i]` (nil: on the
    /// public network). The same seed gives the same identities as `makeNodes`.
    func makeNodes(behind nats: [VirtualNAT?], seed: UInt64, config: TransportConfig = TransportConfig()) -> [SimulatedNode] {
        let random = SeededRandom(seed: seed)
        return nats.map { nat in
            let identity = try! Identity(seed: random.bytes(32))  // invariant: any 32 bytes are a valid Ed25519 seed
            return SimulatedNode(network: self, identity: identity, random: SeededRandom(seed: random.uint64()),
                                 config: config, address: nat?.nextPrivateAddress())
        }
    }
}
