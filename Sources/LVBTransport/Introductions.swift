import LVBCore
import LVBCrypto

/// What a node keeps for introductions (introduce channel): the peers it is
/// reaching through coordinators, the pairs it introduced (its relay serves
/// only those), its own relay paths through coordinators, and the budgets.
struct IntroductionState {
    /// A peer this node wants a session with, asked of coordinators.
    struct Reach {
        /// Addresses known beforehand (a relay position's, a gossip record's):
        /// dialled with the introduced ones, or alone if nobody introduces.
        var hints: [PeerAddress]
        /// Coordinators named by the caller (rendezvous peers are asked too).
        var via: [NodeID]
        let request: UInt32
        let started: Instant
        var asked: Instant
        var times: Int
        /// A coordinator named addresses (we dialled them), and which answered at all.
        var introduced = false
        var fellBack = false
        var answered: Set<NodeID> = []
        /// A member coordinator (not a rendezvous) offered its relay: dialled
        /// only after `memberRelayAfter` without a session.
        var memberRelay: NodeID?
        var memberRelayDialled = false
    }

    /// A relay path of this node: through `via`, to `peer`.
    struct Route: Hashable {
        let via: NodeID
        let peer: NodeID
    }

    typealias Pair = NodePair

    var reaching: [NodeID: Reach] = [:]
    /// Pairs this node introduced: when it last introduced them or relayed for them.
    var pairs: [Pair: Instant] = [:]
    /// When each side of a pair was last told (so a requester's retries
    /// re-tell the target at most every `retellAfter`).
    var told: [Pair: Instant] = [:]
    /// The local-scope addresses each peer claimed for itself in its requests.
    var claimed: [NodeID: [PeerAddress]] = [:]
    /// Where a coordinator last said it sees each peer (the first address
    /// of its introduction): what birthday punching aims at (`Birthday`).
    var seen: [NodeID: PeerAddress] = [:]
    var routes: [UInt32: Route] = [:]
    var routeIndex: [Route: UInt32] = [:]
    var nextRoute: UInt32 = 0
    var nextPieceID: UInt16 = 0
    /// First pieces waiting for their second, per path.
    var halves: [UInt32: RelayPiece] = [:]
    var requests: RateLimiter<NodeID>
    var dials: RateLimiter<Int>
    var pairBytes: RateLimiter<Pair>
    var totalBytes: RateLimiter<Int>

    init(relayKbps: Int) {
        requests = RateLimiter(count: IntroductionConstants.requestRate, burst: IntroductionConstants.requestBurst)
        dials = RateLimiter(count: IntroductionConstants.dialRate, burst: IntroductionConstants.dialBurst)
        let kbps = max(0, relayKbps)
        let pairRate = max(1, min(kbps, IntroductionConstants.relayPairKbps) * 125)
        pairBytes = RateLimiter(count: pairRate, burst: max(pairRate / 4, 2 * CoreConstants.maxDatagram))
        let totalRate = max(1, kbps * 125)
        totalBytes = RateLimiter(count: totalRate, burst: max(totalRate / 4, 2 * CoreConstants.maxDatagram))
    }

    /// Own relay paths are numbered from here, apart from a `relaySend`
    /// owner's (a rendezvous client numbers its own from 1).
    static let routeBase: UInt32 = 0x8000_0000
}

/// An unordered pair of nodes (a pair a coordinator introduced or relays for).
public struct NodePair: Hashable, Sendable {
    public let a: NodeID, b: NodeID
    public init(_ x: NodeID, _ y: NodeID) { (a, b) = x.text < y.text ? (x, y) : (y, x) }
}

/// Introductions between any two peers, the way DCUtR coordinates a punch
/// over a relayed connection: a node that wants a session with a peer asks
/// coordinators it holds sessions with (the room's host, a rendezvous) to
/// introduce it; a coordinator that holds a session with that peer tells
/// both sides, at once, where the other is, and both dial (hole punching,
/// each first initiation hop-limited). Nobody dials a peer's outside
/// address before being introduced: a datagram that reaches the peer's NAT
/// before the peer sent towards us can make that NAT map the peer's own
/// punch to another port (lvbnode-protocol(7), INTRODUCTIONS).
extension TransportCore {
    /// Starts (and keeps up) a session with `id`: through introductions by
    /// `coordinators` and by every rendezvous this node holds a session
    /// with, dialling `hints` too once introduced; directly at `hints` when
    /// no coordinator is at hand or none answers.
    public func reach(_ id: NodeID, at hints: [PeerAddress], via coordinators: [NodeID] = []) {
        guard id != nodeID, !isEstablished(with: id) else { return }
        let now = clock.now()
        let hints = hints.filter { !RelayPath.isRelay($0) }
        if var r = introductions.reaching[id] {
            r.hints = (r.hints + hints).uniqued(limit: IntroductionMessage.maxAddresses)
            r.via = Array(Set(r.via + coordinators))
            introductions.reaching[id] = r
            return
        }
        let asked = self.coordinators(for: id, named: coordinators, rendezvous: rendezvousPeers())
        guard !asked.isEmpty else {
            connect(to: hints, expecting: id)
            return
        }
        let r = IntroductionState.Reach(hints: hints.uniqued(limit: IntroductionMessage.maxAddresses), via: coordinators,
                                        request: random.uint32(), started: now, asked: now, times: 1)
        introductions.reaching[id] = r
        stats.introductionsAsked += 1
        for c in asked { sendIntroduce(.request(request: r.request, peer: id, addresses: config.ownAddresses), to: c) }
    }

    /// Whether this node holds a session with a rendezvous (one that can introduce it).
    public var hasRendezvousSession: Bool { !rendezvousPeers().isEmpty }

    /// Whether a session with `id` is being reached through introductions.
    public func isReaching(_ id: NodeID) -> Bool { introductions.reaching[id] != nil }

    /// The node a relayed session with `id` runs through (nil: direct, or no session).
    public func relay(of id: NodeID) -> NodeID? {
        peersByID[id].flatMap { relayVia($0.endpoint) }
    }

    /// The node relay path `address` runs through (nil: not a relay path, or not known).
    func relayVia(_ address: PeerAddress) -> NodeID? {
        guard let i = RelayPath.index(of: address) else { return nil }
        return introductions.routes[i]?.via ?? relayOwner?(address)
    }

    /// Every rendezvous this node holds a session with, in a stable order.
    func rendezvousPeers() -> [NodeID] { establishedPeers(in: [.rendezvous]) }

    /// The peers of these roles with a session up, in a stable order.
    func establishedPeers(in roles: Set<NodeRole>) -> [NodeID] {
        peersByID.values.filter { $0.established && $0.role.map(roles.contains) == true }.compactMap(\.id).sorted { $0.text < $1.text }
    }

    /// Coordinators for reaching `id`: those named, then every rendezvous,
    /// each with a session up.
    private func coordinators(for id: NodeID, named: [NodeID], rendezvous: [NodeID]) -> [NodeID] {
        var seen = Set<NodeID>()
        return (named + rendezvous).filter {
            $0 != id && $0 != nodeID && isEstablished(with: $0) && seen.insert($0).inserted
        }
    }

    // MARK: Messages

    func sendIntroduce(_ message: IntroductionMessage, to id: NodeID) {
        try? send(message.encoded, channel: .introduce, to: id)
    }

    /// A message on the introduce channel from an authenticated peer.
    func handleIntroduce(_ payload: ArraySlice<UInt8>, from peer: Peer) {
        guard let from = peer.id else { return }
        let message: IntroductionMessage
        do { message = try IntroductionMessage.parse(payload) } catch {
            drop(\.droppedMalformed, from: peer.endpoint, "introduce message: \(error)")
            return
        }
        switch message {
        case let .request(request, target, addresses):
            coordinate(request: request, target: target, claimed: addresses, again: false, from: peer, id: from)
        case let .again(request, target, addresses):
            coordinate(request: request, target: target, claimed: addresses, again: true, from: peer, id: from)
        case let .punch(request, target, addresses):
            coordinate(request: request, target: target, claimed: addresses, again: true, stay: true, from: peer, id: from)
        case let .introduction(request, other, relay, again, seen, stay, addresses):
            // Only where the coordinator sees `other` (never an address it merely claimed, a LAN's).
            if other != nodeID, seen, let first = addresses.first, peer.role == .rendezvous || peer.role == .host {
                noteSeen(other, at: first)
            }
            if other != nodeID,
               memberRelayIntroduced(to: other, offersRelay: relay, addresses: addresses, request: request, by: from) { return }
            if other == nodeID {
                observed(addresses, by: from, request: request)
            } else if again || addressWatch.again[other] == request && request != 0 {
                introducedAgain(to: other, at: addresses, relay: relay && isRendezvous(from), moved: !stay, request: request, by: from)
            } else {
                introduced(to: other, at: addresses, relay: relay, request: request, by: from)
            }
        case let .relay(to, piece):
            forwardRelay(piece, from: from, to: to)
        case let .relayed(origin, piece):
            receiveRelayed(piece, from: origin, via: from)
        case let .birthday(step, count, port):
            handleBirthday(step, count: count, port: port, from: peer)
        }
    }

    /// Coordinator: tell `target` where the requester is and the requester
    /// where `target` is, both at once, or the requester that we cannot.
    /// A request naming the requester itself is answered with where we see
    /// it (its reflexive address); `again`: the pair holds a session that
    /// no longer reaches (the requester moved), so both are told to dial
    /// again, the target at once.
    private func coordinate(request: UInt32, target: NodeID, claimed: [PeerAddress], again: Bool, stay: Bool = false,
                            from peer: Peer, id requester: NodeID) {
        let now = clock.now()
        guard introductions.requests.allow(requester, now: now) else {
            stats.introductionsRefused += 1
            return
        }
        introductions.claimed[requester] = claimed.filter(\.isClaimable).uniqued(limit: IntroductionMessage.maxAddresses)
        if introductions.claimed.count > TransportConstants.maxPeers {
            introductions.claimed = introductions.claimed.filter { peersByID[$0.key] != nil }
        }
        let requesterSeen = RelayPath.isRelay(peer.endpoint) ? [] : [SparePath.outside(peer.endpoint)]
        if target == requester {
            sendIntroduce(.introduction(request: request, peer: requester, relay: false, seen: true, addresses: requesterSeen), to: requester)
            return
        }
        guard target != nodeID, let other = peersByID[target], other.established else {
            sendIntroduce(.introduction(request: request, peer: target, relay: false, addresses: []), to: requester)
            return
        }
        let targetSeen = RelayPath.isRelay(other.endpoint) ? [] : [SparePath.outside(other.endpoint)]
        let toRequester = (targetSeen + (introductions.claimed[target] ?? [])).uniqued(limit: IntroductionMessage.maxAddresses)
        let toTarget = (requesterSeen + (introductions.claimed[requester] ?? [])).uniqued(limit: IntroductionMessage.maxAddresses)
        guard !toRequester.isEmpty, !toTarget.isEmpty else {
            sendIntroduce(.introduction(request: request, peer: target, relay: false, addresses: []), to: requester)
            return
        }
        let pair = IntroductionState.Pair(requester, target)
        let relay = config.relayKbps > 0
        if relay { introductions.pairs[pair] = now }
        // The requester asks again until its session is up: the target is
        // told again at most every `retellAfter` (each telling restarts its punch).
        if again || introductions.told[pair].map({ now - $0 >= IntroductionConstants.retellAfter }) ?? true {
            introductions.told[pair] = now
            stats.introductionsMade += 1
            sendIntroduce(.introduction(request: 0, peer: requester, relay: relay, again: again, seen: !requesterSeen.isEmpty,
                                        stay: stay, addresses: toTarget), to: target)
        }
        sendIntroduce(.introduction(request: request, peer: target, relay: relay, again: again, seen: !targetSeen.isEmpty,
                                    stay: stay, addresses: toRequester), to: requester)
    }

    /// Either side: a coordinator says where `other` is. Dial it now (a
    /// punch), with the relay path through the coordinator when it offers one.
    private func introduced(to other: NodeID, at addresses: [PeerAddress], relay: Bool, request: UInt32, by coordinator: NodeID) {
        guard other != nodeID else { return }
        if request != 0 {
            guard var r = introductions.reaching[other], r.request == request else { return }
            r.answered.insert(coordinator)
            if addresses.isEmpty {
                introductions.reaching[other] = r
                return
            }
            r.introduced = true
            // A rendezvous's relay races the punch; a member's (its upload is
            // the room's) waits until the punch and any rendezvous relay had their chance.
            let member = relay && !isRendezvous(coordinator)
            if member, r.memberRelay == nil { r.memberRelay = coordinator }
            introductions.reaching[other] = r
            guard !isEstablished(with: other) else { return }
            let path = relay && !member ? [relayPath(to: other, via: coordinator)] : []
            connect(to: (addresses + r.hints).uniqued(limit: 2 * IntroductionMessage.maxAddresses) + path, expecting: other, punch: true)
            return
        }
        // Told to dial someone who asked for us: at most `dialRate` a second.
        guard !addresses.isEmpty, !isEstablished(with: other), introductions.dials.allow(0, now: clock.now()) else { return }
        stats.introductionsTaken += 1
        // (Through a member's relay only the requester dials, and only if it must: we answer where it comes from.)
        let path = relay && isRendezvous(coordinator) ? [relayPath(to: other, via: coordinator)] : []
        connect(to: addresses.filter { !RelayPath.isRelay($0) } + path, expecting: other, punch: true)
    }

    func isRendezvous(_ id: NodeID) -> Bool { peersByID[id]?.role == .rendezvous }

    /// A rendezvous (`by`) introduced `other` in its own protocol (a
    /// joiner to a host, a host to a joiner), naming first where it sees
    /// it: kept as for the transport's own introductions.
    public func noteIntroduction(of other: NodeID, seenAt address: PeerAddress, by coordinator: NodeID) {
        guard isRendezvous(coordinator), !RelayPath.isRelay(address) else { return }
        noteSeen(other, at: address)
    }

    /// A rendezvous or host named where it sees `other` (the first address
    /// of an introduction): the only address birthday punching sends to.
    private func noteSeen(_ other: NodeID, at address: PeerAddress) {
        introductions.seen[other] = address
        if introductions.seen.count > TransportConstants.maxPeers {
            introductions.seen = introductions.seen.filter { peersByID[$0.key] != nil }
        }
    }

    /// A new session with a coordinator (a rendezvous, a room's host): it
    /// hears this node's own addresses at once, in a request naming this
    /// node itself (answered with no addresses, ignored), so that when
    /// another node asks to be introduced to this one the coordinator can
    /// name them too. A coordinator knew a target's claimed addresses only
    /// if the target had asked it for an introduction itself; without
    /// them, a requester never learned a target's IPv6 address, whose
    /// firewall then dropped the requester's punch.
    ///
    /// Any other peer whose session runs straight over IPv4 is asked the
    /// same while this node's NAT looked endpoint-independent: three
    /// outside addresses each seeing it at a port of its own show an
    /// address-dependent NAT, which one rendezvous's two ports cannot
    /// (`noticeMapping`). A member answers as a coordinator does.
    func tellOwnAddresses(to coordinator: NodeID, role: NodeRole) {
        guard role == .rendezvous || role == .host else {
            guard config.nat == .easy, let peer = peersByID[coordinator], peer.endpoint.isIPv4,
                  addressWatch.observed.count < TransportConstants.mappingWitnesses else { return }
            return sendIntroduce(.request(request: random.uint32(), peer: nodeID, addresses: []), to: coordinator)
        }
        addressWatch.observed[coordinator] = nil
        sendIntroduce(.request(request: random.uint32(), peer: nodeID, addresses: config.ownAddresses), to: coordinator)
    }

    // MARK: Timers

    /// Asks again while a reach has no session (a request, an introduction
    /// or a punch may be lost; either side may have moved); dials the hints
    /// alone once no coordinator could introduce; gives up after
    /// `askAttempts`. Forgets old pairs. Called from `tick()`.
    func tickIntroductions(_ now: Instant) {
        let rendezvous = introductions.reaching.isEmpty ? [] : rendezvousPeers()
        for (id, var r) in introductions.reaching {
            if isEstablished(with: id) || r.times >= IntroductionConstants.askAttempts {
                introductions.reaching[id] = nil
                if !isEstablished(with: id), !r.fellBack, !r.hints.isEmpty { connect(to: r.hints, expecting: id) }
                continue
            }
            let asked = coordinators(for: id, named: r.via, rendezvous: rendezvous)
            // Nobody can introduce (no coordinator, or each said it holds no
            // session with the peer), or nobody answered for a while: the
            // hints directly, while still asking.
            let noneCan = asked.isEmpty || (!r.introduced && asked.allSatisfy(r.answered.contains))
            if !r.fellBack, !r.hints.isEmpty, noneCan || (!r.introduced && now - r.started >= IntroductionConstants.fallbackAfter) {
                r.fellBack = true
                connect(to: r.hints, expecting: id)
            }
            if let member = r.memberRelay, !r.memberRelayDialled, now - r.started >= IntroductionConstants.memberRelayAfter,
               isEstablished(with: member) {
                r.memberRelayDialled = true
                dialRelay(relayPath(to: id, via: member), to: id)
            }
            if now - r.asked >= IntroductionConstants.askRetry, !asked.isEmpty {
                r.asked = now
                r.times += 1
                for c in asked { sendIntroduce(.request(request: r.request, peer: id, addresses: config.ownAddresses), to: c) }
            }
            introductions.reaching[id] = r
        }
        if !introductions.pairs.isEmpty {
            introductions.pairs = introductions.pairs.filter { now - $0.value < IntroductionConstants.relayPairLifetime }
        }
        if !introductions.told.isEmpty {
            introductions.told = introductions.told.filter { now - $0.value < IntroductionConstants.retellAfter }
        }
    }
}
