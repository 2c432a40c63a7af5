/// How a `VirtualNAT` maps, filters and times out UDP, in the terms of RFC 4787.
public struct NATBehavior: Sendable, Equatable {
    /// Which outbound datagrams of one internal endpoint share an external
    /// address:port (RFC 4787 §4.1).
    public enum Mapping: Sendable, Equatable {
        /// One external port per internal endpoint, whatever the destination (EIM).
        case endpointIndependent
        /// One external port per internal endpoint and destination IP (ADM).
        case addressDependent
        /// One external port per internal endpoint and destination IP:port (APDM).
        case addressAndPortDependent
    }

    /// Which sources may send in through a mapping (RFC 4787 §5).
    public enum Filtering: Sendable, Equatable {
        /// Anyone who knows the external address:port (EIF).
        case endpointIndependent
        /// Only IPs the internal endpoint has sent to through this mapping (ADF).
        case addressDependent
        /// Only IP:ports the internal endpoint has sent to through this mapping (APDF).
        case addressAndPortDependent
    }

    /// How a new mapping's external port is chosen, from `startPort` up to 65535.
    public enum PortAllocation: Sendable, Equatable {
        /// The next free port after the last one given (wrapping to `startPort`).
        case sequential(startPort: UInt16)
        /// A free port drawn from a generator seeded with `seed`.
        case random(startPort: UInt16, seed: UInt64)

        var startPort: UInt16 {
            switch self {
            case let .sequential(p), let .random(p, _): p
            }
        }
    }

    /// RFC 4787 REQ-5: a UDP mapping must not expire in less than 2 minutes.
    public static let rfcMinimumLifetime: Duration = .seconds(120)
    /// Where external ports start unless told otherwise: the dynamic range (RFC 6335 §6).
    public static let defaultStartPort: UInt16 = 49152

    public var mapping: Mapping
    public var filtering: Filtering
    /// Whether an inside endpoint reaches another inside one through the NAT's
    /// external address (RFC 4787 §6, REQ-9); off means such datagrams are dropped.
    /// A hairpinned datagram carries the sender's external address (REQ-9a)
    /// and passes the receiver's filter as one from outside would.
    public var hairpinning: Bool
    /// A mapping not refreshed for this long is gone; a later datagram gets a
    /// new external port. Outbound datagrams refresh (RFC 4787 REQ-6).
    public var mappingLifetime: Duration
    /// Whether inbound datagrams let through also refresh the mapping. Off by
    /// default: REQ-6 only requires outbound refresh, so a protocol that wants
    /// to stay reachable must send its keepalives outbound.
    public var inboundRefresh: Bool
    public var portAllocation: PortAllocation
    /// Give a new mapping the internal endpoint's own port when it is free
    /// (RFC 4787 §4.2.1); then an expired mapping may come back on the same port.
    public var portPreservation: Bool

    public init(mapping: Mapping, filtering: Filtering, hairpinning: Bool = true,
                mappingLifetime: Duration = NATBehavior.rfcMinimumLifetime, inboundRefresh: Bool = false,
                portAllocation: PortAllocation = .sequential(startPort: NATBehavior.defaultStartPort),
                portPreservation: Bool = false) {
        self.mapping = mapping
        self.filtering = filtering
        self.hairpinning = hairpinning
        self.mappingLifetime = mappingLifetime
        self.inboundRefresh = inboundRefresh
        self.portAllocation = portAllocation
        self.portPreservation = portPreservation
    }

    // The classic RFC 3489 names, as RFC 4787 §3 relates them to mapping and filtering.

    /// EIM + EIF: once mapped, anyone can send in.
    public static let fullCone = NATBehavior(mapping: .endpointIndependent, filtering: .endpointIndependent)
    /// EIM + ADF: replies from any port of an IP the inside has sent to.
    public static let restrictedCone = NATBehavior(mapping: .endpointIndependent, filtering: .addressDependent)
    /// EIM + APDF: replies only from IP:ports the inside has sent to.
    public static let portRestrictedCone = NATBehavior(mapping: .endpointIndependent, filtering: .addressAndPortDependent)
    /// APDM + APDF: a new external port per destination; hole punching with a
    /// port learned from a third party fails.
    public static let symmetric = NATBehavior(mapping: .addressAndPortDependent, filtering: .addressAndPortDependent)
    /// ADM + ADF: a new external port per destination IP.
    public static let addressDependent = NATBehavior(mapping: .addressDependent, filtering: .addressDependent)

    /// This behaviour with other settings changed, e.g. `.symmetric.with { $0.hairpinning = false }`.
    public func with(_ change: (inout NATBehavior) -> Void) -> NATBehavior {
        var copy = self
        change(&copy)
        return copy
    }
}
