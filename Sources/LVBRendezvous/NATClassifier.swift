import LVBCore

/// How a NAT picks the outside address and port of a socket's datagrams (RFC 4787 §4.1).
public enum NATMapping: String, Sendable, Equatable {
    /// No NAT: the reflexive address is one of the node's own.
    case none = "no NAT"
    /// One mapping whatever the destination: punching meets.
    case endpointIndependent = "endpoint-independent"
    /// A new mapping per destination (a "hard" NAT): a punch needs port prediction or a relay.
    case endpointDependent = "endpoint-dependent"
    /// Fewer than two answers to compare.
    case unknown
}

/// Which inbound datagrams a NAT or firewall lets through to a mapping (RFC 4787 §5).
public enum NATFiltering: String, Sendable, Equatable {
    /// A datagram from another port of an address the socket sent to came
    /// through: endpoint-independent or address-dependent filtering (one
    /// server IP cannot tell them apart).
    case notPortDependent = "not port-dependent"
    /// Only the address and port the socket sent to may answer.
    case addressAndPortDependent = "address-and-port-dependent"
    /// Not tested (no alternate port, or no answer at all).
    case unknown
}

/// What a node learns of its NAT for one address family.
public struct NATReport: Sendable, Equatable {
    /// Some server answered over UDP.
    public var reachable: Bool
    /// The reflexive addresses seen, first seen first.
    public var reflexive: [PeerAddress]
    public var mapping: NATMapping
    /// Every reflexive port is the socket's own (nil: no answer).
    public var portPreserving: Bool?
    public var filtering: NATFiltering
    /// The shortest round trip to each server that answered.
    public var rtt: [PeerAddress: Duration]

    /// A hard NAT maps per destination: peers behind one meet directly only
    /// with port prediction, over IPv6, or through a relay.
    public var isHard: Bool { mapping == .endpointDependent }
}

/// Judges a NAT from probes' observations (sans-IO; RFC 5780 §4.3–4.4 with
/// one server IP): the mapping by comparing the reflexive addresses from
/// every destination asked (the primary and alternate port of each server:
/// all equal, endpoint-independent; any two differ, endpoint-dependent;
/// one of the node's own addresses, no NAT), port preservation by
/// comparing their ports with the socket's, and the filtering by whether
/// any change-port answer came in from the other port.
public enum NATClassifier {
    /// - Parameters:
    ///   - observations: one per server, of one address family.
    ///   - localPort: the probing socket's port.
    ///   - localHosts: the node's own interface addresses.
    public static func classify(_ observations: [NATObservation], localPort: UInt16, localHosts: Set<PeerAddress.Host>) -> NATReport {
        var reflexive: [PeerAddress] = []
        var rtt: [PeerAddress: Duration] = [:]
        for o in observations where o.answered {
            for m in [o.mapped, o.mappedAtOther].compactMap({ $0 }) where !reflexive.contains(m) { reflexive.append(m) }
            if let r = o.rtt { rtt[o.server] = min(r, rtt[o.server] ?? r) }
        }
        let seen = observations.reduce(0) { $0 + ($1.mapped == nil ? 0 : 1) + ($1.mappedAtOther == nil ? 0 : 1) }
        let mapping: NATMapping
        if reflexive.contains(where: { $0.port == localPort && localHosts.contains($0.host) }) {
            mapping = .none
        } else if reflexive.count > 1 {
            mapping = .endpointDependent
        } else if seen > 1 {
            mapping = .endpointIndependent
        } else {
            mapping = .unknown
        }
        let tested = observations.filter(\.answered).compactMap(\.changedPortAnswered)
        let filtering: NATFiltering = tested.contains(true) ? .notPortDependent : tested.isEmpty ? .unknown : .addressAndPortDependent
        return NATReport(reachable: !reflexive.isEmpty, reflexive: reflexive, mapping: mapping,
                         portPreserving: reflexive.isEmpty ? nil : reflexive.allSatisfy { $0.port == localPort },
                         filtering: filtering, rtt: rtt)
    }
}
