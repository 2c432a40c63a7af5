import LVBCore

/// The IPv6 half of a dual-stack `VirtualNetwork`: endpoints given a global
/// address (2001:db8::/32, RFC 3849) beside their IPv4 one, each home's
/// behind a stateful firewall as a home router's (nftables `ct state
/// established,related accept`, nothing else in): no translation, and a
/// datagram comes in only from a remote address and port the inside sent
/// to within `flowLifetime`. Two such homes open to each other with one
/// simultaneous send, as two port-preserving NATs do.
struct IPv6Routing {
    /// How long a flow stays open after its last datagram either way (Linux
    /// conntrack's UDP timeout for a stream that has seen replies: 120 s).
    static let flowLifetime = Duration.seconds(120)

    private struct Flow: Hashable {
        let inside: PeerAddress
        let remote: PeerAddress
    }

    /// Each dual-stack endpoint's IPv6 address, by its IPv4 address.
    private var addressOf: [PeerAddress: PeerAddress] = [:]
    /// The endpoint (by IPv4 address) an IPv6 address reaches.
    private var endpointAt: [PeerAddress: PeerAddress] = [:]
    /// IPv6 addresses behind a stateful firewall.
    private var firewalled: Set<PeerAddress> = []
    /// Open flows, last datagram either way.
    private var flows: [Flow: Instant] = [:]
    private var nextHome: UInt32 = 1

    /// A new global IPv6 address (2001:db8:HOME::1, same port) for the
    /// endpoint at `endpoint`.
    mutating func add(endpoint: PeerAddress, firewall: Bool) -> PeerAddress {
        if let known = addressOf[endpoint] { return known }
        let home = nextHome
        nextHome += 1
        var bytes = [UInt8](repeating: 0, count: 16)
        bytes[0] = 0x20; bytes[1] = 0x01; bytes[2] = 0x0D; bytes[3] = 0xB8
        bytes[4] = UInt8(truncatingIfNeeded: home >> 8); bytes[5] = UInt8(truncatingIfNeeded: home)
        bytes[15] = 1
        let address = PeerAddress(host: .v6(bytes), port: endpoint.port)
        addressOf[endpoint] = address
        endpointAt[address] = endpoint
        if firewall { firewalled.insert(address) }
        return address
    }

    /// The IPv6 address of the endpoint at `endpoint`, if it has one.
    func address(of endpoint: PeerAddress) -> PeerAddress? { addressOf[endpoint] }

    /// A datagram from endpoint `sender` to IPv6 `destination`, leaving its
    /// home (at send time): the source it carries, nil when the sender has
    /// no IPv6 (no route). Its firewall notes the flow.
    mutating func outbound(from sender: PeerAddress, to destination: PeerAddress, now: Instant) -> PeerAddress? {
        guard let source = addressOf[sender] else { return nil }
        if firewalled.contains(source) { flows[Flow(inside: source, remote: destination)] = now }
        return source
    }

    enum Inbound: Equatable {
        case deliver(to: PeerAddress)
        case filtered
        case unroutable
    }

    /// A datagram from `source` reaching IPv6 `destination` (at delivery
    /// time): the endpoint it reaches, or why not.
    mutating func inbound(to destination: PeerAddress, from source: PeerAddress, now: Instant) -> Inbound {
        guard let endpoint = endpointAt[destination] else { return .unroutable }
        guard firewalled.contains(destination) else { return .deliver(to: endpoint) }
        let flow = Flow(inside: destination, remote: source)
        guard let last = flows[flow], now - last <= Self.flowLifetime else {
            flows[flow] = nil
            return .filtered
        }
        flows[flow] = now
        return .deliver(to: endpoint)
    }

    /// Forgets the endpoint at `endpoint` (closed).
    mutating func remove(endpoint: PeerAddress) {
        guard let address = addressOf.removeValue(forKey: endpoint) else { return }
        endpointAt[address] = nil
        firewalled.remove(address)
    }
}
