import LVBCore
import LVBTransport

/// A deterministic in-process datagram network on a manual clock, for scenario
/// tests of many nodes with loss, delay, jitter, reordering, duplication,
/// partitions and NATs. Same seed and same calls ⇒ same deliveries at the same times.
public final class VirtualNetwork {
    public let clock: ManualClock
    /// Impairment of every direction without its own `setImpairment`.
    public var defaultImpairment: Impairment
    public private(set) var stats = NetworkStats()

    /// One direction of a link.
    private struct Link: Hashable {
        let from: PeerAddress
        let to: PeerAddress
    }

    private let random: SeededRandom
    private var queue = EventQueue()
    private var endpoints: [PeerAddress: VirtualEndpoint] = [:]
    private var impairments: [Link: Impairment] = [:]
    private var cuts: Set<Link> = []
    private var isolated: Set<PeerAddress> = []
    private var nextAutoAddress = 0
    private var routing = NATRouting()
    private var ipv6 = IPv6Routing()

    public init(seed: UInt64, defaultImpairment: Impairment = .none, clock: ManualClock = ManualClock()) {
        self.random = SeededRandom(seed: seed)
        self.defaultImpairment = defaultImpairment
        self.clock = clock
    }

    /// Events (deliveries and timer firings) not yet run.
    public var pendingEvents: Int { queue.count }

    // MARK: Endpoints

    /// A new endpoint at `address`, or at the next free 10.0.x.y:7400 when nil.
    /// An open endpoint already at `address` is closed and replaced (a restart).
    public func makeEndpoint(address: PeerAddress? = nil) -> VirtualEndpoint {
        let chosen = address ?? nextFreeAddress()
        endpoints[chosen]?.close()
        let endpoint = VirtualEndpoint(address: chosen, network: self)
        endpoints[chosen] = endpoint
        return endpoint
    }

    /// Whether an open endpoint is at `address`.
    func hasEndpoint(at address: PeerAddress) -> Bool { endpoints[address].map { !$0.isClosed } ?? false }

    private func nextFreeAddress() -> PeerAddress {
        while true {
            let i = nextAutoAddress
            nextAutoAddress += 1
            let address = PeerAddress.ipv4(
                10, UInt8(truncatingIfNeeded: i / (254 * 256)), UInt8(truncatingIfNeeded: i / 254),
                UInt8(truncatingIfNeeded: i % 254 + 1), port: 7400)
            if endpoints[address] == nil { return address }
        }
    }

    // MARK: NATs

    /// A NAT with public IP `publicIP` (203.0.113.n when nil) in front of a
    /// new private network 192.168.n.0/24. Impairments of a datagram are
    /// those from its sending endpoint to the address it was sent to; cuts
    /// and isolation also hold between the sending and receiving endpoints.
    public func makeNAT(publicIP: PeerAddress.Host? = nil, behavior: NATBehavior) -> VirtualNAT {
        let subnet = routing.nextSubnet
        let nat = VirtualNAT(publicIP: publicIP ?? .v4(0xCB00_7100 | UInt32(subnet)), subnet: subnet,
                             behavior: behavior, network: self)
        routing.add(nat)
        return nat
    }

    /// A new endpoint behind `nat`, at its next private address.
    public func makeEndpoint(behind nat: VirtualNAT, port: UInt16 = 7400) -> VirtualEndpoint {
        nat.makeEndpoint(port: port)
    }

    func remove(_ endpoint: VirtualEndpoint) {
        guard endpoints[endpoint.address] === endpoint else { return }
        endpoints[endpoint.address] = nil
        ipv6.remove(endpoint: endpoint.address)
    }

    // MARK: IPv6

    /// Makes `endpoint` dual-stack: a global IPv6 address of its own
    /// (2001:db8:n::1, its port) beside its IPv4 one, behind a home router's
    /// stateful firewall (`firewall`: in only from where it sent) or open.
    /// It sends to IPv6 peers from that address; one without IPv6 cannot.
    @discardableResult
    public func addIPv6(to endpoint: VirtualEndpoint, firewall: Bool = true) -> PeerAddress {
        ipv6.add(endpoint: endpoint.address, firewall: firewall)
    }

    /// The IPv6 address `addIPv6` gave the endpoint at `address`, if any.
    public func ipv6Address(of address: PeerAddress) -> PeerAddress? { ipv6.address(of: address) }

    // MARK: Links

    /// Impairs datagrams sent from `from` to `to` (one direction).
    public func setImpairment(_ impairment: Impairment, from: PeerAddress, to: PeerAddress) {
        impairments[Link(from: from, to: to)] = impairment
    }

    /// Impairs both directions between `a` and `b`.
    public func setImpairment(_ impairment: Impairment, between a: PeerAddress, and b: PeerAddress) {
        setImpairment(impairment, from: a, to: b)
        setImpairment(impairment, from: b, to: a)
    }

    /// The impairment datagrams from `from` to `to` get.
    public func impairment(from: PeerAddress, to: PeerAddress) -> Impairment {
        impairments[Link(from: from, to: to)] ?? defaultImpairment
    }

    /// Takes the link between `a` and `b` down both ways; in-flight datagrams are lost.
    public func cut(_ a: PeerAddress, _ b: PeerAddress) {
        cuts.insert(Link(from: a, to: b))
        cuts.insert(Link(from: b, to: a))
    }

    /// Brings the link between `a` and `b` back up.
    public func heal(_ a: PeerAddress, _ b: PeerAddress) {
        cuts.remove(Link(from: a, to: b))
        cuts.remove(Link(from: b, to: a))
    }

    /// Takes every link of `a` down; in-flight datagrams to or from it are lost.
    public func isolate(_ a: PeerAddress) { isolated.insert(a) }

    /// Undoes `isolate`; links cut one by one stay cut.
    public func rejoin(_ a: PeerAddress) { isolated.remove(a) }

    private func isUp(from: PeerAddress, to: PeerAddress) -> Bool {
        !isolated.contains(from) && !isolated.contains(to) && !cuts.contains(Link(from: from, to: to))
    }

    // MARK: Datagrams

    func transmit(_ datagram: [UInt8], from: PeerAddress, to: PeerAddress, diesAfterOwnNAT: Bool = false) {
        stats.sent += 1
        stats.bytesSent += datagram.count
        guard isUp(from: from, to: to) else {
            stats.droppedCut += 1
            return
        }
        let source: PeerAddress
        if to.isIPv4 {
            // Leaving a private network, the datagram takes its NAT's external address.
            guard case let .send(translated) = routing.outbound(from: from, to: to) else {
                stats.droppedNATHairpin += 1
                return
            }
            source = translated
        } else {
            // IPv6 leaves from the sender's own global address; its firewall notes the flow.
            guard let own = ipv6.outbound(from: from, to: to, now: clock.now()) else {
                stats.droppedNoEndpoint += 1
                return
            }
            source = own
        }
        guard !diesAfterOwnNAT else {
            stats.droppedHopLimit += 1
            return
        }
        let delays = impairment(from: from, to: to).plan(random: random)
        guard !delays.isEmpty else {
            stats.dropped += 1
            return
        }
        stats.duplicated += delays.count - 1
        let now = clock.now()
        for delay in delays {
            queue.push(at: now + delay) { [weak self] in
                self?.deliver(datagram, from: from, source: source, to: to)
            }
        }
    }

    /// `from` is the sending endpoint, `source` the address the datagram
    /// carries (different when it left through a NAT), `to` where it was sent.
    private func deliver(_ datagram: [UInt8], from: PeerAddress, source: PeerAddress, to: PeerAddress) {
        guard isUp(from: from, to: to) else {
            stats.droppedCut += 1
            return
        }
        // Reaching a NAT's public IP, the filter decides and the mapping names the inside endpoint.
        let recipient: PeerAddress
        if to.isIPv4 {
            switch routing.inbound(to: to, sender: from, source: source) {
            case let .deliver(address): recipient = address
            case .noMapping: stats.droppedNATNoMapping += 1; return
            case .filtered: stats.droppedNATFiltered += 1; return
            case .unroutable: stats.droppedNoEndpoint += 1; return
            }
        } else {
            // Reaching a dual-stack home, its firewall lets in only flows the inside opened.
            switch ipv6.inbound(to: to, from: source, now: clock.now()) {
            case let .deliver(address): recipient = address
            case .filtered: stats.droppedNATFiltered += 1; return
            case .unroutable: stats.droppedNoEndpoint += 1; return
            }
        }
        // Cuts and isolation name endpoints, so they hold across a NAT too.
        guard recipient == to || isUp(from: from, to: recipient) else {
            stats.droppedCut += 1
            return
        }
        guard let endpoint = endpoints[recipient], !endpoint.isClosed else {
            stats.droppedNoEndpoint += 1
            return
        }
        stats.delivered += 1
        stats.bytesDelivered += datagram.count
        endpoint.deliver(datagram, from: source)
    }

    // MARK: Timers

    /// Runs `action` once, `delay` from now (virtual time).
    @discardableResult
    public func schedule(after delay: Duration, _ action: @escaping () -> Void) -> TimerHandle {
        let handle = TimerHandle()
        queue.push(at: clock.now() + delay) {
            if !handle.isCancelled { action() }
        }
        return handle
    }

    /// Runs `action` every `interval` (first after one interval) until cancelled.
    @discardableResult
    public func every(_ interval: Duration, _ action: @escaping () -> Void) -> TimerHandle {
        precondition(interval > .zero, "every(_:) needs a positive interval")
        let handle = TimerHandle()
        arm(handle, at: clock.now() + interval, interval: interval, action)
        return handle
    }

    private func arm(_ handle: TimerHandle, at due: Instant, interval: Duration, _ action: @escaping () -> Void) {
        queue.push(at: due) { [weak self] in
            guard !handle.isCancelled else { return }
            action()
            guard !handle.isCancelled else { return }
            self?.arm(handle, at: due + interval, interval: interval, action)
        }
    }

    // MARK: Running

    /// Runs every event due within `duration` in time order (FIFO at equal
    /// times), then leaves the clock at the end of the span.
    public func run(for duration: Duration) {
        let end = clock.now() + duration
        while let event = queue.pop(notAfter: end) {
            clock.advance(to: event.due)
            event.action()
        }
        clock.advance(to: end)
    }

    /// Runs events until `condition` holds (checked first and after each event)
    /// or `timeout` of virtual time passes. Returns whether the condition held;
    /// on success the clock stays at the event that satisfied it.
    @discardableResult
    public func run(until condition: () -> Bool, timeout: Duration) -> Bool {
        if condition() { return true }
        let end = clock.now() + timeout
        while let event = queue.pop(notAfter: end) {
            clock.advance(to: event.due)
            event.action()
            if condition() { return true }
        }
        clock.advance(to: end)
        return condition()
    }
}
