import DequeModule
import LVBCore
import LVBCrypto
import Logging

/// Settings of one node's transport.
public struct TransportConfig: Sendable {
    /// Accept sessions that other nodes start (hosts do; a pure dialler may not).
    public var acceptIncoming = true
    /// Initiations per second (valid mac1) above which a cookie (mac2) is demanded.
    public var underLoadThreshold = TransportConstants.underLoadHandshakesPerSecond
    /// What this node says in its hello.
    public var hello = Hello(agent: "lvbnode/\(CoreConstants.version)", role: .viewer)
    /// The share (0 to 1) of received datagrams dropped before anything reads
    /// them: a lossy link into this node, whatever address each peer uses
    /// (`--inbound-loss`, the demo mesh's `--loss`). 0 in normal use.
    public var inboundLoss = 0.0
    /// This node's own addresses (its interfaces'), claimed when it asks to
    /// be introduced; a coordinator passes on only the local-scope ones.
    public var ownAddresses: [PeerAddress] = []
    /// Relay the sealed datagrams of pairs this node introduced, up to this
    /// many kbit/s in all, each pair up to `IntroductionConstants.relayPairKbps`
    /// of it (0: relays nothing; a rendezvous's `--relay-kbps`). Read once, at start.
    public var relayKbps = 0
    /// What this node's NAT does, once measured (`NATKind`).
    public var nat = NATKind.unknown
    /// Whether that NAT kept the socket's port (Linux's masquerade does
    /// while the port is free): birthday punching's easy side then probes
    /// from a spare socket of its own, whose outside port it can name.
    public var natKeepsPort = false
    public init() {}
}

/// The sans-IO session layer: handshakes, keys, timers, channels. It is fed
/// datagrams (`receive`) and ticks (`tick`) and sends through a `DatagramSink`.
/// Not thread-safe: its owner calls it from one event loop (or the virtual network).
public final class TransportCore {
    public let identity: Identity
    /// The X25519 form of the identity, derived once (it costs a scalar multiplication).
    let staticKey: NoiseKeyPair
    public var config: TransportConfig
    public var onEvent: ((TransportEvent) -> Void)?
    /// Another protocol sharing the socket (STUN on a rendezvous): sees every
    /// datagram first and claims its own.
    public var sideChannel: ((ArraySlice<UInt8>, PeerAddress) -> SideChannelVerdict)?

    /// Puts `claims` in front of the side channel the core has: it sees
    /// each datagram first and takes its own (true); the rest go on.
    public func addSideChannel(_ claims: @escaping (ArraySlice<UInt8>, PeerAddress) -> Bool) {
        let previous = sideChannel
        sideChannel = { bytes, source in claims(bytes, source) ? .consumed : previous?(bytes, source) ?? .notMine }
    }
    /// Sends a datagram along a relay path (`RelayPath`) that is not one of
    /// the transport's own; without it such datagrams are dropped.
    public var relaySend: ((PeerAddress, [UInt8]) -> Void)?
    /// The node a relay path of `relaySend`'s owner runs through (for `relay(of:)`).
    public var relayOwner: ((PeerAddress) -> NodeID?)?
    public internal(set) var stats = TransportStats()

    let clock: Clock
    let random: RandomSource
    let sink: DatagramSink
    let log = Log.logger("transport")

    var peersByID: [NodeID: Peer] = [:]
    /// Peers dialled by address whose identity an XX handshake has not revealed yet.
    var anonymousPeers: [Peer] = []
    var indices: [UInt32: IndexEntry] = [:]
    var pendingResponses = Deque<UInt32>()

    /// Checks mac1/mac2 on messages sent to our static key, and on XX's first two.
    let ownChecker: CookieChecker
    let anonymousChecker: CookieChecker

    var lastTimestampSent = TAI64N(seconds: 0, nanoseconds: 0)
    var latestTimestamps: [NodeID: TAI64N] = [:]
    var loadMeter = LoadMeter()
    var introductions: IntroductionState
    var addressWatch = AddressWatch()
    var birthday = BirthdayState()
    var memberRelays = MemberRelayState()
    /// Three peers at other addresses each saw this node at a port of its
    /// own on one outside address (`noticeMapping`): its NAT is hard,
    /// whatever a probe of one rendezvous's two ports said.
    public internal(set) var mappingVariesByDestination = false
    /// Unknown-session packets: sent, per source host; taken, in all (each costs a look through the sessions).
    var unknownSessionAnswers = RateLimiter<PeerAddress.Host>(count: TransportConstants.unknownSessionRate,
                                                              burst: TransportConstants.unknownSessionBurst)
    var unknownSessionsTaken = RateLimiter<Int>(count: TransportConstants.unknownSessionRate * 10,
                                                burst: TransportConstants.unknownSessionBurst * 10)

    public init(identity: Identity, clock: Clock, random: RandomSource, sink: DatagramSink, config: TransportConfig = TransportConfig()) {
        self.identity = identity
        staticKey = identity.noiseStatic
        self.clock = clock
        self.random = random
        self.sink = sink
        self.config = config
        introductions = IntroductionState(relayKbps: config.relayKbps)
        ownChecker = CookieChecker(keyMaterial: staticKey.publicKey, clock: clock, random: random,
                                   secretLifetime: TransportConstants.cookieSecretLifetime)
        anonymousChecker = CookieChecker(keyMaterial: MacKeyMaterial.anonymous, clock: clock, random: random,
                                         secretLifetime: TransportConstants.cookieSecretLifetime)
    }

    public var nodeID: NodeID { identity.nodeID }

    /// Starts (and keeps up) a session with the node at `address`: IK when its
    /// identity is known, XX otherwise. Retries until `rekeyAttemptTime`.
    public func connect(to address: PeerAddress, expecting id: NodeID?) {
        connect(to: [address], expecting: id)
    }

    /// As `connect(to:expecting:)`, sending each initiation to every candidate
    /// address until one answers (a ticket lists all of a host's addresses).
    /// `punch`: both sides were just introduced and dial each other at once
    /// (hole punching): the first retries come fast (`punchRetry`, doubling).
    public func connect(to addresses: [PeerAddress], expecting id: NodeID?, punch: Bool = false) {
        guard let address = addresses.first else { return }
        if let id, let existing = peersByID[id] {
            // An established session keeps the address it authenticated from.
            guard !existing.established else { return }
            // The new addresses first, then those already tried: two
            // coordinators may each know a different way to the peer.
            let merged = (addresses + [existing.endpoint] + existing.candidates).uniqued(limit: TransportConstants.maxCandidates)
            existing.endpoint = merged[0]
            existing.candidates = Array(merged.dropFirst())
            noteDirectCandidates(merged, of: existing)
            if punch {
                // A second introduction while a punch is under way (another
                // coordinator's) joins it: an initiation now would go out at
                // full hop limit before the peer's own opener, and could make
                // the peer's NAT remap the peer's punch.
                if existing.punchAttempts != nil, let i = existing.initiation, clock.now() - i.sentAt < TransportConstants.punchRetry { return }
                existing.punchAttempts = 0
            }
            if existing.current == nil && (existing.initiation == nil || punch) && !existing.awaitsConfirmation(now: clock.now()) {
                startInitiation(existing, firstAttempt: existing.initiation?.firstAttempt ?? clock.now())
            }
            return
        }
        let peer = Peer(id: id, endpoint: address, persistent: true, cookies: generator(for: id), created: clock.now())
        if id == nil { peer.dialledBlind = address }
        peer.candidates = Array(addresses.dropFirst())
        if punch { peer.punchAttempts = 0 }
        noteDirectCandidates(addresses, of: peer)
        if let id { peersByID[id] = peer } else { anonymousPeers.append(peer) }
        startInitiation(peer, firstAttempt: clock.now())
    }

    /// Adds a relay path to a dial under way and sends an initiation along
    /// it now (the direct addresses keep theirs: the first answer wins, and
    /// a session that starts on the relay still probes them).
    func dialRelay(_ path: PeerAddress, to id: NodeID) {
        guard let peer = peersByID[id] else {
            connect(to: [path], expecting: id)
            return
        }
        guard peer.current == nil else { return }
        let others = ([peer.endpoint] + peer.candidates).filter { $0 != path }
        peer.candidates = Array(([path] + others.dropFirst()).prefix(TransportConstants.maxCandidates - 1))
        peer.endpoint = others.first ?? path
        noteDirectCandidates([peer.endpoint] + peer.candidates, of: peer)
        let now = clock.now()
        guard !peer.awaitsConfirmation(now: now) else { return }
        startInitiation(peer, firstAttempt: peer.initiation?.firstAttempt ?? now, only: [path])
    }

    /// The session with `peer` follows an authenticated datagram or
    /// handshake to where it came from, as WireGuard's roaming does; but a
    /// relay path does not take it off a direct path that carried something
    /// within `directPathQuiet`, nor a rendezvous's relay path off a
    /// member's that did (`MemberRelay`).
    func roam(_ peer: Peer, to source: PeerAddress, now: Instant) {
        if RelayPath.isRelay(source) {
            if !RelayPath.isRelay(peer.endpoint), let last = peer.lastDirectIn, now - last < TransportConstants.directPathQuiet { return }
            if source == peer.memberRelayPath {
                peer.lastMemberRelayIn = now
            } else if keepsMemberRelay(peer, against: source, now: now) {
                return
            } else if source != peer.endpoint, noteMemberRelay(peer, at: source) {
                peer.lastMemberRelayIn = now
            }
        } else {
            peer.lastDirectIn = now
            peer.holdDirectUntil = nil
        }
        let moved = peer.endpoint != source
        peer.endpoint = source
        if moved, birthday.run != nil || !birthday.probing.isEmpty { birthdayRoamed(peer, to: source) }
    }

    /// A fresh handshake with `id` to `addresses` while its session runs
    /// over a relay that is gone (a rendezvous back under a new identity):
    /// the first answer carries the session there, keys and the layers
    /// above unchanged (a relay path is one more way to the same node).
    public func reroute(_ id: NodeID, to addresses: [PeerAddress]) {
        guard let peer = peersByID[id], peer.established, !addresses.isEmpty else { return }
        let candidates = Array(addresses.uniqued(limit: TransportConstants.maxCandidates))
        noteDirectCandidates(candidates, of: peer)
        peer.punchAttempts = 0
        startInitiation(peer, firstAttempt: clock.now(), only: candidates)
    }

    /// A dial that races a relay path against direct addresses: remember the
    /// direct ones, to move the session there if it starts on the relay.
    func noteDirectCandidates(_ addresses: [PeerAddress], of peer: Peer) {
        guard addresses.contains(where: RelayPath.isRelay) else { return }
        peer.directCandidates = addresses.filter { !RelayPath.isRelay($0) }
        let now = clock.now()
        peer.directProbe = (now + TransportConstants.directProbeFirst, TransportConstants.directProbeFirst,
                            now + TransportConstants.directProbeWindow)
    }

    /// Sends a datagram outside any session, from the node's socket: for a
    /// protocol sharing the port (a STUN request), never for session data.
    public func sendRaw(_ datagram: [UInt8], to address: PeerAddress) { transmit(datagram, to: address) }

    /// The address a session with `id` currently uses is a relay path.
    public func isRelayed(_ id: NodeID) -> Bool { peersByID[id].map { RelayPath.isRelay($0.endpoint) } ?? false }

    /// Ends the session with `id`, telling the peer (bye) if a session exists.
    public func disconnect(_ id: NodeID, reason: UInt8 = 0) {
        guard let peer = peersByID[id] else { return }
        sendControl(.bye(reason), to: peer)
        remove(peer, reason: .local)
    }

    /// Says bye to every peer and forgets them (a clean shutdown).
    public func close() {
        for id in Array(peersByID.keys) { disconnect(id) }
        for p in anonymousPeers { forget(p) }
        anonymousPeers.removeAll()
    }

    public var peers: [PeerInfo] {
        let now = clock.now()
        return peersByID.values.compactMap { p in
            guard let id = p.id else { return nil }
            return PeerInfo(id: id, endpoint: SparePath.outside(p.endpoint), established: p.established, rtt: p.rtt,
                            keyAge: p.current.map { now - $0.created }, initiatedCurrentKeys: p.current?.isInitiator ?? false,
                            relayVia: relay(of: id))
        }.sorted { $0.id.text < $1.id.text }
    }

    public func isEstablished(with id: NodeID) -> Bool { peersByID[id]?.established ?? false }

    /// When an authenticated datagram last came from `id` (nil: none, or no such peer).
    public func lastHeard(from id: NodeID) -> Instant? { peersByID[id]?.lastReceived }

    /// Whether a session with `id` exists or is being set up.
    public func knows(_ id: NodeID) -> Bool { peersByID[id] != nil }

    /// The address `id`'s authenticated packets come from (or the one being dialled).
    public func endpoint(of id: NodeID) -> PeerAddress? { peersByID[id].map { SparePath.outside($0.endpoint) } }

    /// The handshake hash of the current session with `id` (64 bytes), the
    /// same on both sides and unknowable to anyone else: proofs bound to it
    /// (a room password proof) cannot be replayed on another session. It
    /// changes on every rekey, so bind at admission time.
    public func sessionBinding(with id: NodeID) -> [UInt8]? {
        guard let p = peersByID[id], p.established, let k = p.current else { return nil }
        return k.handshakeHash
    }

    /// The handshake hashes of every live session with `id` (current, next,
    /// previous keys): when both sides dialled at once (an introduction),
    /// each may send under the keys it initiated, so a proof the peer bound
    /// to its `sessionBinding` matches one of these, not always ours.
    public func sessionBindings(with id: NodeID) -> [[UInt8]] {
        guard let p = peersByID[id], p.established else { return [] }
        return p.keypairs.map(\.handshakeHash).filter { !$0.isEmpty }
    }

    // MARK: Internals shared by the extensions

    enum IndexEntry {
        case initiation(Peer)
        case keypair(Peer, Keypair)
        case pendingResponse(PendingResponse)
    }

    func newIndex() -> UInt32 {
        while true {
            let i = random.uint32()
            if i != 0 && indices[i] == nil { return i }
        }
    }

    func generator(for id: NodeID?) -> CookieGenerator {
        CookieGenerator(keyMaterial: id?.noiseStaticKey ?? MacKeyMaterial.anonymous, clock: clock)
    }

    func transmit(_ datagram: [UInt8], to address: PeerAddress, unauthenticatedReply: Bool = false, hopLimit: Int? = nil) {
        stats.datagramsOut += 1
        stats.bytesOut += datagram.count
        if unauthenticatedReply { stats.bytesSentToUnauthenticated += datagram.count }
        if RelayPath.isRelay(address) {
            if !sendAlongOwnRelay(datagram, to: address) { relaySend?(address, datagram) }
            return
        }
        if let (spare, remote) = SparePath.parse(address) {
            sink.sendSpare(datagram, spare: spare, to: remote, hopLimit: hopLimit)
            return
        }
        if let hopLimit { sink.send(datagram, to: address, hopLimit: hopLimit) } else { sink.send(datagram, to: address) }
    }

    /// `transmit` for a datagram written in place (a sealed transport
    /// packet): the sink's own buffer, unless it goes along a relay path.
    func transmit(count: Int, to address: PeerAddress, fill: (UnsafeMutableRawBufferPointer) -> Void) {
        guard !RelayPath.isRelay(address), !SparePath.isSpare(address) else {
            var datagram = [UInt8](repeating: 0, count: count)
            datagram.withUnsafeMutableBytes(fill)
            return transmit(datagram, to: address)
        }
        stats.datagramsOut += 1
        stats.bytesOut += count
        sink.send(count: count, to: address, fill: fill)
    }

    /// Sends what this read batch has written so far (forwarded media)
    /// before the caller does slow work on the event loop.
    public func flushSends() { sink.flush() }

    func emit(_ e: TransportEvent) { onEvent?(e) }

    /// Zeroes and unregisters keypairs that are no longer usable.
    func retire(_ keypairs: [Keypair]) {
        for k in keypairs {
            if case .keypair(_, let kk)? = indices[k.localIndex], kk === k { indices[k.localIndex] = nil }
            k.zero()
        }
    }

    /// Drops all session state of `peer` (keys zeroed, indices freed).
    func forget(_ peer: Peer) {
        retire(peer.keypairs)
        peer.current = nil; peer.next = nil; peer.previous = nil
        if let i = peer.initiation { indices[i.localIndex] = nil }
        peer.initiation = nil
        peer.queue.removeAll()
    }

    func remove(_ peer: Peer, reason: GoneReason) {
        let wasEstablished = peer.established
        forget(peer)
        if let id = peer.id { addressWatch.observed[id] = nil }
        peer.established = false
        if let id = peer.id, peersByID[id] === peer {
            peersByID[id] = nil
            forgetPath(of: id)
        }
        anonymousPeers.removeAll { $0 === peer }
        if wasEstablished, let id = peer.id { emit(.gone(id, reason)) }
    }
}

/// A responder's XX handshake waiting for message 3.
struct PendingResponse {
    let handshake: NoiseHandshake
    let localIndex: UInt32
    let remoteIndex: UInt32
    let created: Instant
}
