import LVBCore

/// NATs as a crowd of home users has them, for scenarios of many nodes: in
/// each 20 nodes, 12 behind port-restricted cones that keep ports (Linux
/// masquerade), 3 behind address-dependent NATs, 3 behind symmetric ones
/// with random ports, and 2 public (no NAT). Each node gets a NAT of its
/// own; past `maxNATs` (the virtual network's limit is 254) a node joins
/// an earlier home of its kind, as a second device there.
public final class NATMix {
    /// Where a node goes: behind `nat` (nil: public), and what kind that is.
    public struct Placement {
        public let nat: VirtualNAT?
        public let kind: String
    }

    public static let cycle: [(kind: String, behavior: NATBehavior?)] =
        Array(repeating: ("port-restricted", linuxMasquerade), count: 12)
        + Array(repeating: ("address-dependent", .addressDependent), count: 3)
        + Array(repeating: ("symmetric", symmetricRandom), count: 3)
        + Array(repeating: ("public", nil), count: 2)

    /// A Linux router's `masquerade`: one mapping per inside endpoint kept
    /// on its own port where free, replies only from where it sent.
    public static let linuxMasquerade = NATBehavior.portRestrictedCone.with { $0.portPreservation = true }
    /// `masquerade random,fully-random`: a new random port per destination.
    public static let symmetricRandom = NATBehavior.symmetric.with {
        $0.portAllocation = .random(startPort: 1024, seed: 0x5EED)
    }

    public let maxNATs: Int
    /// The host's own NAT (a Linux masquerade, as most homes have).
    public let hostNAT: VirtualNAT
    private let network: VirtualNetwork
    private var placed = 0
    private var homes: [String: [VirtualNAT]] = [:]

    public init(network: VirtualNetwork, maxNATs: Int = 240) {
        self.network = network
        self.maxNATs = maxNATs
        hostNAT = network.makeNAT(behavior: Self.linuxMasquerade)
    }

    /// The next node's place, in the mix's order.
    public func next() -> Placement {
        let (kind, behavior) = Self.cycle[placed % Self.cycle.count]
        placed += 1
        guard let behavior else { return Placement(nat: nil, kind: kind) }
        let made = homes.values.reduce(1) { $0 + $1.count }
        if made >= maxNATs, let earlier = homes[kind], !earlier.isEmpty {
            return Placement(nat: earlier[placed % earlier.count], kind: kind)
        }
        let nat = network.makeNAT(behavior: behavior)
        homes[kind, default: []].append(nat)
        return Placement(nat: nat, kind: kind)
    }
}
