import LVBCore

/// One live NAT binding, as a test inspects it.
public struct NATMapping: Equatable, Sendable {
    /// The private endpoint behind the NAT.
    public let internalAddress: PeerAddress
    /// Where the outside sees it: the NAT's public IP and the mapped port.
    public let externalAddress: PeerAddress
    /// The last time a datagram refreshed it; it expires `mappingLifetime` after.
    public let refreshed: Instant
}

/// A NAT on a `VirtualNetwork`: endpoints in a private /24 behind one public
/// IP, mapped and filtered per its `NATBehavior` (RFC 4787). Make it with
/// `VirtualNetwork.makeNAT` and put endpoints behind it with `makeEndpoint`.
public final class VirtualNAT {
    public let publicIP: PeerAddress.Host
    public let behavior: NATBehavior
    /// The private network, 192.168.n.0/24, as its top 24 bits.
    let privatePrefix: UInt32

    private weak var network: VirtualNetwork?
    private let clock: ManualClock
    private let random: SeededRandom?
    private var nextPrivateHost: UInt32 = 2  // .1 is the NAT's own inside address
    private var nextPort: Int

    /// What decides whether two outbound datagrams share a mapping: the
    /// internal endpoint plus as much of the destination as the mapping
    /// behaviour looks at.
    private struct Key: Hashable {
        let internalAddress: PeerAddress
        let remoteIP: PeerAddress.Host?
        let remotePort: UInt16?
    }

    private struct Binding {
        let key: Key
        /// Destinations sent to through this binding; the filter admits sources from them.
        var permittedIPs: Set<PeerAddress.Host> = []
        var permittedEndpoints: Set<PeerAddress> = []
        var refreshed: Instant
    }

    private var byKey: [Key: UInt16] = [:]
    private var byPort: [UInt16: Binding] = [:]
    /// No binding expires before this; lets most datagrams skip the sweep.
    private var earliestExpiry: Instant?

    init(publicIP: PeerAddress.Host, subnet: UInt8, behavior: NATBehavior, network: VirtualNetwork) {
        self.publicIP = publicIP
        self.privatePrefix = 0xC0A8_0000 | UInt32(subnet) << 8
        self.behavior = behavior
        self.network = network
        self.clock = network.clock
        self.nextPort = Int(behavior.portAllocation.startPort)
        if case let .random(_, seed) = behavior.portAllocation { random = SeededRandom(seed: seed) } else { random = nil }
    }

    // MARK: Inside

    /// Whether `address` is on this NAT's private network.
    public func contains(_ address: PeerAddress) -> Bool {
        if case let .v4(a) = address.host { return a & 0xFFFF_FF00 == privatePrefix }
        return false
    }

    /// The next unused private address (192.168.n.2, .3, …) at `port`; for
    /// nodes that make their own endpoint, e.g. `SimulatedNode(…, address:)`.
    public func nextPrivateAddress(port: UInt16 = 7400) -> PeerAddress {
        precondition(nextPrivateHost < 255, "VirtualNAT: at most 253 private hosts")
        defer { nextPrivateHost += 1 }
        return PeerAddress(host: .v4(privatePrefix | nextPrivateHost), port: port)
    }

    /// A new endpoint behind this NAT at the next private address.
    public func makeEndpoint(port: UInt16 = 7400) -> VirtualEndpoint {
        guard let network else { preconditionFailure("VirtualNAT outlived its network") }
        return network.makeEndpoint(address: nextPrivateAddress(port: port))
    }

    // MARK: Inspection

    /// Bindings alive now (expired ones are gone), by external port.
    public var mappings: [NATMapping] {
        sweep(now: clock.now())
        return byPort.keys.sorted().map { port in
            let b = byPort[port]!  // invariant: the key was just read from byPort
            return NATMapping(internalAddress: b.key.internalAddress, externalAddress: external(port), refreshed: b.refreshed)
        }
    }

    /// Where datagrams from `internalAddress` to `remote` appear to come from
    /// now, or nil when no live mapping would carry them (the next one makes it).
    public func externalAddress(of internalAddress: PeerAddress, to remote: PeerAddress) -> PeerAddress? {
        sweep(now: clock.now())
        return byKey[key(internalAddress, remote)].map(external)
    }

    /// Drops every binding, as a NAT that reboots or rebinds does: the next
    /// datagram out gets a new external port, and nothing comes in through
    /// the old ones.
    public func forgetMappings() {
        byKey = [:]
        byPort = [:]
        earliestExpiry = nil
    }

    // MARK: Translation (called by the network)

    /// Maps an outbound datagram (creating or refreshing the binding, and
    /// opening the filter to `remote`); returns the source it leaves with.
    func translateOutbound(from internalAddress: PeerAddress, to remote: PeerAddress) -> PeerAddress {
        let now = clock.now()
        sweep(now: now)
        let key = key(internalAddress, remote)
        let port: UInt16
        if let existing = byKey[key] {
            port = existing
        } else {
            port = allocatePort(for: internalAddress)
            byKey[key] = port
            byPort[port] = Binding(key: key, refreshed: now)
            earliestExpiry = min(earliestExpiry ?? now + behavior.mappingLifetime, now + behavior.mappingLifetime)
        }
        byPort[port]!.permittedIPs.insert(remote.host)  // invariant: bound just above or before
        byPort[port]!.permittedEndpoints.insert(remote)
        byPort[port]!.refreshed = now
        return external(port)
    }

    enum InboundVerdict: Equatable {
        case deliver(to: PeerAddress)
        case noMapping
        case filtered
    }

    /// Where an inbound datagram to external `port` from `source` goes, if the
    /// filter lets it in.
    func translateInbound(toPort port: UInt16, from source: PeerAddress) -> InboundVerdict {
        let now = clock.now()
        sweep(now: now)
        guard let binding = byPort[port] else { return .noMapping }
        let allowed = switch behavior.filtering {
        case .endpointIndependent: true
        case .addressDependent: binding.permittedIPs.contains(source.host)
        case .addressAndPortDependent: binding.permittedEndpoints.contains(source)
        }
        guard allowed else { return .filtered }
        if behavior.inboundRefresh { byPort[port]!.refreshed = now }  // invariant: found above
        return .deliver(to: binding.key.internalAddress)
    }

    // MARK: Internals

    private func key(_ internalAddress: PeerAddress, _ remote: PeerAddress) -> Key {
        switch behavior.mapping {
        case .endpointIndependent: Key(internalAddress: internalAddress, remoteIP: nil, remotePort: nil)
        case .addressDependent: Key(internalAddress: internalAddress, remoteIP: remote.host, remotePort: nil)
        case .addressAndPortDependent: Key(internalAddress: internalAddress, remoteIP: remote.host, remotePort: remote.port)
        }
    }

    private func external(_ port: UInt16) -> PeerAddress { PeerAddress(host: publicIP, port: port) }

    /// Forgets bindings unrefreshed for `mappingLifetime`, freeing their ports.
    private func sweep(now: Instant) {
        guard let due = earliestExpiry, now >= due else { return }
        let lifetime = behavior.mappingLifetime
        earliestExpiry = nil
        for (port, binding) in byPort {
            let expiry = binding.refreshed + lifetime
            if now >= expiry {
                byPort[port] = nil
                byKey[binding.key] = nil
            } else {
                earliestExpiry = min(earliestExpiry ?? expiry, expiry)
            }
        }
    }

    private func allocatePort(for internalAddress: PeerAddress) -> UInt16 {
        if behavior.portPreservation, byPort[internalAddress.port] == nil { return internalAddress.port }
        let start = Int(behavior.portAllocation.startPort)
        let count = 65536 - start
        var candidate = random.map { start + Int($0.next() % UInt64(count)) } ?? nextPort
        for _ in 0..<count {
            if byPort[UInt16(candidate)] == nil {
                // Sequential NATs move on, so an expired mapping's port is not reused at once.
                nextPort = candidate + 1 > 65535 ? start : candidate + 1
                return UInt16(candidate)
            }
            candidate = candidate + 1 > 65535 ? start : candidate + 1
        }
        preconditionFailure("VirtualNAT \(external(0).hostString): all \(count) external ports are mapped")
    }
}
