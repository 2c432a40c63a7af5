import LVBCore

/// The NATs of one `VirtualNetwork` and how a datagram crosses them: source
/// translation when it leaves a private network, destination translation
/// and filtering when it reaches a NAT's public IP.
struct NATRouting {
    private(set) var nats: [VirtualNAT] = []
    private var byPublicIP: [PeerAddress.Host: VirtualNAT] = [:]

    var isEmpty: Bool { nats.isEmpty }

    /// The subnet number (192.168.n.0/24) and default public IP (203.0.113.n,
    /// RFC 5737 TEST-NET-3) of the next NAT.
    var nextSubnet: UInt8 {
        precondition(nats.count < 254, "VirtualNetwork: at most 254 NATs")
        return UInt8(nats.count + 1)
    }

    mutating func add(_ nat: VirtualNAT) {
        precondition(byPublicIP[nat.publicIP] == nil, "VirtualNetwork: two NATs share the public IP \(nat.publicIP)")
        if case let .v4(a) = nat.publicIP {
            precondition(a >> 16 != 0xC0A8, "VirtualNetwork: a NAT's public IP must be outside 192.168.0.0/16")
        }
        nats.append(nat)
        byPublicIP[nat.publicIP] = nat
    }

    /// The NAT whose private network holds `address`, if any.
    func nat(of address: PeerAddress) -> VirtualNAT? {
        // Subnet n belongs to nats[n - 1], so no search is needed.
        guard case let .v4(a) = address.host, a >> 16 == 0xC0A8 else { return nil }
        let index = Int((a >> 8) & 0xFF) - 1
        return nats.indices.contains(index) ? nats[index] : nil
    }

    enum Outbound: Equatable {
        /// Send it, carrying this source address.
        case send(source: PeerAddress)
        /// To its own NAT's public IP, and the NAT does not hairpin.
        case hairpinRefused
    }

    /// What happens as a datagram from endpoint `sender` to `destination`
    /// leaves the sender's network (at send time).
    func outbound(from sender: PeerAddress, to destination: PeerAddress) -> Outbound {
        guard let nat = nat(of: sender), !nat.contains(destination) else { return .send(source: sender) }
        if destination.host == nat.publicIP && !nat.behavior.hairpinning { return .hairpinRefused }
        return .send(source: nat.translateOutbound(from: sender, to: destination))
    }

    enum Inbound: Equatable {
        /// Hand it to the endpoint at this address.
        case deliver(to: PeerAddress)
        /// To a NAT's public IP on a port with no live mapping.
        case noMapping
        /// The mapping exists but its filter refuses the source.
        case filtered
        /// To a private address from outside that private network.
        case unroutable
    }

    /// Where a datagram named to `destination`, sent by endpoint `sender`
    /// with source `source`, ends up (at delivery time, so filters opened
    /// while it was in flight count).
    func inbound(to destination: PeerAddress, sender: PeerAddress, source: PeerAddress) -> Inbound {
        if let nat = byPublicIP[destination.host] {
            return switch nat.translateInbound(toPort: destination.port, from: source) {
            case let .deliver(to): .deliver(to: to)
            case .noMapping: .noMapping
            case .filtered: .filtered
            }
        }
        if let nat = nat(of: destination), nat !== self.nat(of: sender) { return .unroutable }
        return .deliver(to: destination)
    }
}
