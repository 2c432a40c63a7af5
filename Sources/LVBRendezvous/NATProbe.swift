import LVBCore

/// What one STUN server told a probe: the raw material `NATClassifier` judges.
public struct NATObservation: Sendable, Equatable {
    /// The server probed (its primary port).
    public var server: PeerAddress
    /// The reflexive address the primary port saw, and the round trip of that answer.
    public var mapped: PeerAddress?
    public var rtt: Duration?
    /// The server's other port (OTHER-ADDRESS; an unspecified IP there means the server's own).
    public var other: PeerAddress?
    /// The reflexive address the other port saw (nil: not asked, or no answer).
    public var mappedAtOther: PeerAddress?
    /// Whether the answer to a change-port request came in from the other
    /// port (nil: not tested: no other port, or the server refused).
    public var changedPortAnswered: Bool?

    public init(server: PeerAddress) { self.server = server }

    public var answered: Bool { mapped != nil }
}

/// Which of a probe's two sockets a request goes out from.
public enum NATProbeSocket: Sendable, Equatable {
    /// The mapping test's: the primary port, then the other port.
    case mapping
    /// The filtering test's: change-port requests to the primary port only.
    case filtering
}

/// Discovers a NAT's behaviour against one STUN server with an alternate
/// port (RFC 5780 §4.3 and §4.4, with one server IP), sans-IO: the owner
/// sends what `tick` returns from the socket it names, feeds every STUN
/// message that comes back (on either socket) to `consume`, and reads
/// `observation` once `isDone`.
///
/// - The mapping socket sends a plain Binding request to the primary port,
///   again every `probeRetry` until answered: the reflexive address, the
///   round trip and OTHER-ADDRESS; then one to the other port: a second
///   reflexive address, from a second destination.
/// - The filtering socket, from the start, sends Binding requests with
///   CHANGE-REQUEST (change port) to the primary port only, until the
///   answer comes in from the other port (the filter let it in) or
///   `filteringWait` after the mapping socket's first answer (it did not).
///
/// Two sockets, because on one the tests spoil each other: a request to
///   the other port first opens the filter to it, and a change-port answer
///   the NAT dropped first leaves a conntrack entry on a Linux router for
///   that port pair, so the mapping to the other port that follows gets a
///   new port and an ordinary NAT looks endpoint-dependent (seen in the
///   NAT lab). Every request is a new transaction (each answer times its
///   own round trip); only answers to our own transactions are taken.
public struct NATProbe: Sendable {
    /// A datagram to send, from which socket, and where.
    public struct Outgoing: Sendable, Equatable {
        public var bytes: [UInt8]
        public var socket: NATProbeSocket
        public var to: PeerAddress
    }

    private enum Kind: Sendable { case plain, changePort, atOther }

    public private(set) var observation: NATObservation
    private let deadline: Instant
    private var pending: [[UInt8]: (kind: Kind, sent: Instant)] = [:]
    private var lastSent: [Kind: Instant] = [:]
    /// The filtering test ends here (set by the first answer).
    private var filterUntil: Instant?
    /// The change-port request was answered (from either port), refused,
    /// or given up on: no more of them.
    private var changeSettled = false
    private var timedOut = false

    /// A probe of `server` that gives up at `deadline` (whatever it has by
    /// then). Without `testFiltering` it sends from the mapping socket only
    /// (a node probing from its own one socket) and leaves the filtering unknown.
    public init(server: PeerAddress, deadline: Instant, testFiltering: Bool = true) {
        observation = NATObservation(server: server)
        self.deadline = deadline
        changeSettled = !testFiltering
    }

    private var mappingDone: Bool { observation.mapped != nil && (otherTarget == nil || observation.mappedAtOther != nil) }

    public var isDone: Bool { timedOut || (mappingDone && changeSettled) }

    /// The other port's address as the client sends to it (an unspecified IP: the server's own).
    var otherTarget: PeerAddress? {
        guard let other = observation.other else { return nil }
        let unspecified = other.host == .v4(0) || other.isIPv6Unspecified
        guard !unspecified else { return PeerAddress(host: observation.server.host, port: other.port) }
        return other
    }

    /// What to send now; call on start and then every few tens of milliseconds.
    public mutating func tick(now: Instant, random: RandomSource) -> [Outgoing] {
        guard !isDone else { return [] }
        guard now < deadline else {
            // Answered with an other port, and no change-port answer came: the filter held it.
            if !changeSettled, observation.mapped != nil, otherTarget != nil { observation.changedPortAnswered = false }
            timedOut = true
            pending.removeAll()
            return []
        }
        if let until = filterUntil, now >= until, !changeSettled {
            if otherTarget != nil { observation.changedPortAnswered = false }
            settleChange()
        }
        var out: [Outgoing] = []
        if observation.mapped == nil {
            out += [send(.plain, now: now, random: random)].compactMap { $0 }
        } else if !mappingDone {
            out += [send(.atOther, now: now, random: random)].compactMap { $0 }
        }
        if !changeSettled { out += [send(.changePort, now: now, random: random)].compactMap { $0 } }
        return out
    }

    /// Takes one STUN message from `source` if it answers one of this
    /// probe's transactions; false when it is not this probe's.
    @discardableResult
    public mutating func consume(_ message: STUNMessage, from source: PeerAddress, now: Instant) -> Bool {
        guard let asked = pending[message.transactionID] else { return false }
        let success = message.type == RendezvousConstants.MessageType.bindingSuccess
        let mapped = message.attribute(RendezvousConstants.Attribute.xorMappedAddress)
            .flatMap { try? STUNAddress.decodeXOR($0.value, transactionID: message.transactionID) }
        switch asked.kind {
        case .plain:
            guard source == observation.server else { return false }
            pending = pending.filter { $0.value.kind != .plain }
            guard success, let mapped, observation.mapped == nil else { return true }
            observation.mapped = mapped
            observation.rtt = now - asked.sent
            observation.other = message.attribute(RendezvousConstants.Attribute.otherAddress).flatMap { try? STUNAddress.decode($0.value) }
            filterUntil = min(deadline, now + RendezvousConstants.filteringWait)
            // No other port: no filtering test (its change-port requests get a 420).
            if otherTarget == nil { settleChange() }
        case .changePort:
            // From the other port: the filter let it in. A 420 (no other
            // port, or change-port refused) or an answer from the primary
            // (a server that ignored the flag) is no filtering test: nil.
            if success, source.host == observation.server.host, source.port != observation.server.port {
                observation.changedPortAnswered = true
            }
            settleChange()
        case .atOther:
            guard let target = otherTarget, source == target else { return false }
            pending = pending.filter { $0.value.kind != .atOther }
            guard success, let mapped else { return true }
            observation.mappedAtOther = mapped
        }
        return true
    }

    private mutating func settleChange() {
        changeSettled = true
        pending = pending.filter { $0.value.kind != .changePort }
    }

    /// A new transaction of `kind`, unless one went out within `probeRetry`.
    private mutating func send(_ kind: Kind, now: Instant, random: RandomSource) -> Outgoing? {
        if let last = lastSent[kind], now < last + RendezvousConstants.probeRetry { return nil }
        let target: PeerAddress
        var attributes: [STUNAttribute] = []
        switch kind {
        case .plain, .changePort: target = observation.server
        case .atOther:
            guard let other = otherTarget else { return nil }
            target = other
        }
        if kind == .changePort {
            attributes.append(STUNAttribute(type: RendezvousConstants.Attribute.changeRequest,
                                            value: [0, 0, 0, RendezvousConstants.changePortFlag]))
        }
        let id = random.bytes(RendezvousConstants.transactionIDSize)
        pending[id] = (kind, now)
        lastSent[kind] = now
        let request = STUNMessage(type: RendezvousConstants.MessageType.bindingRequest, transactionID: id, attributes: attributes)
        return Outgoing(bytes: request.encoded(fingerprint: true), socket: kind == .changePort ? .filtering : .mapping, to: target)
    }
}
