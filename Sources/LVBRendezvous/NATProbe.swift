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

/// Discovers a NAT's behaviour against one STUN server with an alternate
/// port (RFC 5780 §4.3 and §4.4, with one server IP), sans-IO: the owner
/// sends what `tick` returns from one socket, feeds every STUN message
/// that comes back to `consume`, and reads `observation` once `isDone`.
///
/// 1. A plain Binding request and one with CHANGE-REQUEST (change port)
///    go to the primary port at once, again every `probeRetry` until the
///    plain one is answered. Its answer gives the reflexive address, the
///    round trip and OTHER-ADDRESS.
/// 2. The change-port answer, from the other port, is awaited up to
///    `filteringWait` after that: it passes only a NAT or firewall that
///    does not filter by port. Nothing may go to the other port before
///    this ends, or the socket's own packets would open the filter.
/// 3. Then a plain Binding request goes to the other port: a second
///    reflexive address, from a second destination, for the mapping.
///
/// Every request is a new transaction (each answer times its own round
/// trip); only answers to our own transactions, from where they were
/// sent or (change-port) from the other port, are taken.
public struct NATProbe: Sendable {
    /// A datagram to send, and where.
    public struct Outgoing: Sendable, Equatable {
        public var bytes: [UInt8]
        public var to: PeerAddress
    }

    private enum Kind: Sendable { case plain, changePort, atOther }
    private enum Phase: Sendable { case binding, filtering(until: Instant), mapping, done }

    public private(set) var observation: NATObservation
    private var phase = Phase.binding
    private let deadline: Instant
    private var pending: [[UInt8]: (kind: Kind, sent: Instant)] = [:]
    private var lastSent: [Kind: Instant] = [:]
    /// The change-port request was answered (from either port) or refused: no more of them.
    private var changeSettled = false

    /// A probe of `server` that gives up at `deadline` (whatever it has by then).
    public init(server: PeerAddress, deadline: Instant) {
        observation = NATObservation(server: server)
        self.deadline = deadline
    }

    public var isDone: Bool { if case .done = phase { true } else { false } }

    /// The other port's address as the client sends to it (an unspecified IP: the server's own).
    var otherTarget: PeerAddress? {
        guard let other = observation.other else { return nil }
        let unspecified = other.host == .v4(0) || other.isIPv6Unspecified
        guard !unspecified else { return PeerAddress(host: observation.server.host, port: other.port) }
        return other
    }

    /// What to send now; call on start and then every few tens of milliseconds.
    public mutating func tick(now: Instant, random: RandomSource) -> [Outgoing] {
        if now >= deadline, !isDone { finish() }
        switch phase {
        case .done:
            return []
        case .binding:
            return [send(.plain, now: now, random: random), send(.changePort, now: now, random: random)].compactMap { $0 }
        case .filtering(let until):
            guard now < until, !changeSettled else {
                if !changeSettled { observation.changedPortAnswered = false }
                // A late change-port answer could come through the hole the next request opens.
                pending = pending.filter { $0.value.kind != .changePort }
                changeSettled = true
                phase = .mapping
                return tick(now: now, random: random)
            }
            return [send(.changePort, now: now, random: random)].compactMap { $0 }
        case .mapping:
            return [send(.atOther, now: now, random: random)].compactMap { $0 }
        }
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
            phase = otherTarget == nil ? .done : .filtering(until: min(deadline, now + RendezvousConstants.filteringWait))
        case .changePort:
            pending = pending.filter { $0.value.kind != .changePort }
            changeSettled = true
            // From the other port: the filter let it in. A 420 (no other
            // port, or change-port refused) or an answer from the primary
            // (a server that ignored the flag) is no filtering test: nil.
            if success, source.host == observation.server.host, source.port != observation.server.port {
                observation.changedPortAnswered = true
            }
        case .atOther:
            guard let target = otherTarget, source == target else { return false }
            pending = pending.filter { $0.value.kind != .atOther }
            guard success, let mapped else { return true }
            observation.mappedAtOther = mapped
            phase = .done
        }
        return true
    }

    private mutating func finish() {
        if case .filtering = phase, !changeSettled { observation.changedPortAnswered = false }
        phase = .done
        pending.removeAll()
    }

    /// A new transaction of `kind`, unless one went out within `probeRetry`.
    private mutating func send(_ kind: Kind, now: Instant, random: RandomSource) -> Outgoing? {
        if let last = lastSent[kind], now < last + RendezvousConstants.probeRetry { return nil }
        let target: PeerAddress
        var attributes: [STUNAttribute] = []
        switch kind {
        case .plain: target = observation.server
        case .changePort:
            guard !changeSettled else { return nil }
            target = observation.server
            attributes.append(STUNAttribute(type: RendezvousConstants.Attribute.changeRequest,
                                            value: [0, 0, 0, RendezvousConstants.changePortFlag]))
        case .atOther:
            guard let other = otherTarget else { return nil }
            target = other
        }
        let id = random.bytes(RendezvousConstants.transactionIDSize)
        pending[id] = (kind, now)
        lastSent[kind] = now
        let request = STUNMessage(type: RendezvousConstants.MessageType.bindingRequest, transactionID: id, attributes: attributes)
        return Outgoing(bytes: request.encoded(fingerprint: true), to: target)
    }
}
