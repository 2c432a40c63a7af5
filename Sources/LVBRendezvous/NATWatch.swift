import LVBCore
import LVBCrypto
import LVBRoom
import LVBTransport

/// Learns what this node's NAT does (issue 48, "know your NAT") from its
/// own socket: a `NATProbe` of a rendezvous's two ports (the mapping test
/// alone: one socket cannot test filtering without spoiling it), at start
/// and again after the node moved. Two reflexive addresses from two
/// destinations tell endpoint-independent from endpoint-dependent mapping;
/// the node's own address seen means no NAT. The result goes into the
/// transport's config (`TransportConfig.nat`), which the node's relay
/// position carries to placement. STUN answers are taken from the
/// transport's side channel (chained, as `STUNClient` does).
public final class NATWatch: LiveRole {
    /// The result of each probe (a kind, and what the classifier saw).
    public var onResult: ((NATKind, NATReport) -> Void)?

    private let core: TransportCore
    private let clock: Clock
    private let random: RandomSource
    private let server: PeerAddress
    private var probe: NATProbe?
    private var stopped = false

    /// How long a probe runs before it settles for what it has.
    static let probeTime: Duration = .seconds(3)

    public init(core: TransportCore, clock: Clock, random: RandomSource, server: PeerAddress) {
        self.core = core
        self.clock = clock
        self.random = random
        self.server = server
        core.addSideChannel { [unowned self] bytes, source in take(bytes, from: source) }
        probe = NATProbe(server: server, deadline: clock.now() + Self.probeTime, testFiltering: false)
    }

    public func handle(_ event: NodeEvent) {
        // A new address (and perhaps a new NAT): measure again.
        if case .transport(.moved) = event, !stopped {
            probe = NATProbe(server: server, deadline: clock.now() + Self.probeTime, testFiltering: false)
        }
    }

    public func tick() { step() }

    /// Sends what the probe asks next and finishes it once done: on every
    /// tick, and at once on each answer, so the result comes two round
    /// trips after the start, not two ticks later (a joiner is placed in
    /// the tree by it, and was placed blind when it came late).
    private func step() {
        guard !stopped, var p = probe else { return }
        for out in p.tick(now: clock.now(), random: random) { core.sendRaw(out.bytes, to: out.to) }
        probe = p
        if p.isDone { finish(p) }
    }

    public func leave() { stopped = true }
    public func stop() { stopped = true }

    private func take(_ bytes: ArraySlice<UInt8>, from source: PeerAddress) -> Bool {
        guard probe != nil, STUNMessage.looksLikeSTUN(bytes), let message = try? STUNMessage.parse(bytes) else { return false }
        guard probe?.consume(message, from: source, now: clock.now()) == true else { return false }
        step()
        return true
    }

    private func finish(_ p: NATProbe) {
        probe = nil
        let port = core.config.ownAddresses.first?.port ?? 0
        let report = NATClassifier.classify([p.observation], localPort: port, localHosts: Set(LocalAddresses.interfaceHosts() ?? []))
        let kind: NATKind = switch report.mapping {
        case .none: .open
        case .endpointIndependent: .easy
        case .endpointDependent: .hard
        case .unknown: core.config.nat
        }
        // (Peers at other addresses saw it mapped apart: hard, whatever one address's two ports say.)
        core.config.nat = core.mappingVariesByDestination ? .hard : kind
        core.config.natKeepsPort = report.portPreserving == true
        onResult?(kind, report)
    }
}
