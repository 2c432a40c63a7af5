import LVBCore
import LVBCrypto

/// Birthday punching's numbers (lvbnode-protocol(7), INTRODUCTIONS,
/// "Birthday punching"). Tuning: a second implementation may choose
/// others, as long as it answers an offer and probes only the address a
/// coordinator named.
public enum BirthdayConstants {
    /// Spare sockets the hard side opens for one attempt.
    public static let spares = 256
    /// Probes the easy side sends each round (one tick), and the most in all.
    public static let probesPerRound = 64
    public static let probes = 2048
    /// The ports probed: Linux's NAT gives a flow from a port above 1023 a
    /// port in 1024–65535 (`random,fully-random` draws them uniformly).
    public static let firstPort: UInt16 = 1024
    /// A session relayed this long (its ordinary punch had its chance) is
    /// offered a birthday by its hard side.
    public static let after: Duration = .seconds(1)
    /// The hard side keeps its spares this long after its offer, then gives
    /// up (the probes take 3.2 s; round trips over the relay add to it).
    public static let sparesLifetime: Duration = .seconds(6)
    /// A pair that did not meet is offered again after this, then twice as
    /// late each time up to `retryMax`; an easy side probes for one peer at
    /// most once per `retry`.
    public static let retry: Duration = .seconds(30)
    public static let retryMax: Duration = .seconds(480)

    /// The chance that `probes` probes to distinct random ports among
    /// `ports` hit one of `spares` mapped ports: 1 − C(ports − spares,
    /// probes) / C(ports, probes).
    public static func chance(spares: Int = spares, probes: Int = probes, ports: Int = 65536 - Int(firstPort)) -> Double {
        var miss = 1.0
        for i in 0..<min(probes, ports - spares) { miss *= Double(ports - spares - i) / Double(ports - i) }
        return 1 - miss
    }
}

/// What a node keeps for birthday punching.
struct BirthdayState {
    /// The hard side's attempt under way (one at a time: 256 sockets).
    struct Run {
        let peer: NodeID
        /// The peer's outside address, as a coordinator introduced it: what the spares aim at.
        let target: PeerAddress
        let started: Instant
        var spares: [UInt32] = []
        var offered: Instant?
    }
    /// The easy side's probing (one peer at a time).
    struct Probing {
        let peer: NodeID
        /// The peer's outside IPv4 address, as a coordinator introduced it.
        let host: PeerAddress.Host
        let started: Instant
        var sent = 0
        var tried: Set<UInt16> = []
    }
    var run: Run?
    var probing: Probing?
    /// Spares that carry a session now, by peer.
    var kept: [NodeID: UInt32] = [:]
    /// Sessions of the hard side seen relayed, since when.
    var relayedSince: [NodeID: Instant] = [:]
    /// When each peer may be offered (or probed for) again, and the gap after that.
    var backoff: [NodeID: (at: Instant, gap: Duration)] = [:]
    /// The sink has no spare sockets: never offer.
    var unsupported = false
}

/// Birthday punching: a pair with one NAT that maps each destination to a
/// new random port (hard) and one that keeps one port for all
/// (endpoint-independent) meets without a relay the way Tailscale's
/// magicsock does, after `danderson/nat-birthday-paradox`. Once their
/// session runs over a relay, the hard side opens `spares` spare sockets,
/// each sending one hop-limited datagram (dead before the peer's NAT) to
/// the easy side's outside address, so its NAT maps `spares` random ports
/// towards it; then it says so over the session (an offer). The easy side
/// probes random ports of the hard side's outside IPv4 address from its
/// own socket, 64 every 100 ms, each probe a sealed keepalive of the
/// session: a probe that lands on one of those ports passes the hard
/// NAT's filter (the spare sent to exactly that address) and reaches the
/// spare, where it authenticates, and the hard side's session roams onto
/// the spare (`SparePath`) as on any authenticated datagram; its answer
/// from there passes the easy NAT (the probe opened it) and the easy side
/// roams too. 2,048 probes against 256 spares in 64,512 ports meet with
/// 99.97 % (`BirthdayConstants.chance`).
extension TransportCore {
    /// Called from `tick()`.
    func tickBirthday(_ now: Instant) {
        keepSpares()
        if config.nat == .hard, !birthday.unsupported { tickOffers(now) }
        if birthday.probing != nil { tickProbes(now) }
    }

    /// Whether a session that runs over a relay may try: a coordinator
    /// introduced the peer at an outside IPv4 address.
    private func birthdayTarget(_ peer: Peer) -> PeerAddress? {
        guard peer.established, peer.role != .rendezvous, RelayPath.isRelay(peer.endpoint), let id = peer.id,
              let seen = introductions.seen[id], seen.isIPv4 else { return nil }
        return seen
    }

    // MARK: Hard side

    private func tickOffers(_ now: Instant) {
        if let run = birthday.run {
            // Nothing came in time (or the peer declined: `answered`).
            if let offered = run.offered, now - offered >= BirthdayConstants.sparesLifetime { endRun(keeping: nil, now: now) }
            else if now - run.started >= BirthdayConstants.sparesLifetime * 2 { endRun(keeping: nil, now: now) }
            return
        }
        var candidates: [(Peer, PeerAddress)] = []
        for peer in peersByID.values {
            guard let id = peer.id else { continue }
            guard let target = birthdayTarget(peer) else {
                birthday.relayedSince[id] = nil
                continue
            }
            let since = birthday.relayedSince[id] ?? now
            birthday.relayedSince[id] = since
            if now - since >= BirthdayConstants.after, birthday.backoff[id].map({ now >= $0.at }) ?? true {
                candidates.append((peer, target))
            }
        }
        // The longest relayed first.
        guard let (peer, target) = candidates.min(by: { birthday.relayedSince[$0.0.id!]! < birthday.relayedSince[$1.0.id!]! }),
              let id = peer.id else { return }
        birthday.run = BirthdayState.Run(peer: id, target: target, started: now)
        stats.birthdayRuns += 1
        let opening = sink.openSpares(count: BirthdayConstants.spares, receive: { [weak self] datagram, source in
            self?.receive(reusing: &datagram, from: source)
        }) { [weak self] spares in self?.sparesOpened(spares, for: id) }
        if !opening {
            birthday.unsupported = true
            birthday.run = nil
            stats.birthdayRuns -= 1
        }
    }

    /// The spares are open: each sends its opener, then the offer goes.
    private func sparesOpened(_ spares: [UInt32], for id: NodeID) {
        guard var run = birthday.run, run.peer == id else { return sink.closeSpares(spares) }
        run.spares = spares
        stats.birthdaySpares += spares.count
        guard let peer = peersByID[id], !spares.isEmpty, let opener = sealedKeepalive(peer) else {
            birthday.run = run
            return endRun(keeping: nil, now: clock.now())
        }
        for spare in spares { sink.sendSpare(opener, spare: spare, to: run.target, hopLimit: TransportConstants.punchOpenerHops) }
        run.offered = clock.now()
        birthday.run = run
        sendIntroduce(.birthday(answer: false, count: UInt16(clamping: spares.count)), to: id)
    }

    /// The attempt ends: met (one spare now carries the session, the rest
    /// close) or not (all close; the pair waits before the next offer).
    private func endRun(keeping spare: UInt32?, now: Instant) {
        guard let run = birthday.run else { return }
        birthday.run = nil
        sink.closeSpares(run.spares.filter { $0 != spare })
        if let spare {
            birthday.kept[run.peer] = spare
            birthday.backoff[run.peer] = nil
        } else {
            stats.birthdayFailed += 1
            backOff(run.peer, now: now)
        }
        emit(.birthday(run.peer, met: spare != nil, after: now - run.started))
    }

    private func backOff(_ id: NodeID, now: Instant) {
        let gap = birthday.backoff[id].map { min($0.gap * 2, BirthdayConstants.retryMax) } ?? BirthdayConstants.retry
        birthday.backoff[id] = (now + gap, gap)
    }

    /// The session with `peer` roamed to a new address: onto one of the
    /// run's spares (a probe landed), or off a spare it kept.
    func birthdayRoamed(_ peer: Peer, to address: PeerAddress) {
        guard let id = peer.id else { return }
        if let (spare, _) = SparePath.parse(address), let run = birthday.run, run.peer == id, run.spares.contains(spare) {
            stats.birthdayMet += 1
            peer.birthdayPath = address
            endRun(keeping: spare, now: clock.now())
            // Our answer from the spare opens the way back: the easy side roams on it.
            sendPing(peer)
        } else if let probing = birthday.probing, probing.peer == id, address.host == probing.host {
            stats.birthdayMet += 1
            peer.birthdayPath = address
            birthday.probing = nil
            emit(.birthday(id, met: true, after: clock.now() - probing.started))
        }
    }

    /// Closes spares whose session left them (it moved, it ended).
    private func keepSpares() {
        for (id, spare) in birthday.kept {
            if let peer = peersByID[id], let (s, _) = SparePath.parse(peer.endpoint), s == spare { continue }
            birthday.kept[id] = nil
            sink.closeSpares([spare])
        }
    }

    // MARK: Easy side

    /// A message of the birthday exchange from `peer` (over the session).
    func handleBirthday(answer: Bool, count: UInt16, from peer: Peer) {
        guard let id = peer.id else { return }
        let now = clock.now()
        if answer {
            // The easy side declined: the spares are of no use.
            if count == 0, let run = birthday.run, run.peer == id { endRun(keeping: nil, now: now) }
            return
        }
        // An offer: probe if we can meet a hard NAT (ours is not hard), no
        // other probing runs, and the peer is not asking too often.
        guard config.nat != .hard, birthday.probing == nil, count > 0, let target = birthdayTarget(peer),
              birthday.backoff[id].map({ now >= $0.at }) ?? true else {
            stats.birthdayDeclined += 1
            sendIntroduce(.birthday(answer: true, count: 0), to: id)
            return
        }
        birthday.backoff[id] = (now + BirthdayConstants.retry, BirthdayConstants.retry)
        birthday.probing = BirthdayState.Probing(peer: id, host: target.host, started: now)
        sendIntroduce(.birthday(answer: true, count: UInt16(BirthdayConstants.probes)), to: id)
        tickProbes(now)
    }

    /// One round of probes: the same sealed keepalive to the next ports.
    private func tickProbes(_ now: Instant) {
        guard var probing = birthday.probing else { return }
        guard let peer = peersByID[probing.peer], peer.established, RelayPath.isRelay(peer.endpoint) else {
            // Direct now (a probe landed and the answer came: `birthdayRoamed`), or gone.
            birthday.probing = nil
            return
        }
        guard probing.sent < BirthdayConstants.probes else {
            // The last answers had a round trip to come back.
            if now - probing.started >= BirthdayConstants.sparesLifetime {
                birthday.probing = nil
                emit(.birthday(probing.peer, met: false, after: now - probing.started))
            }
            return
        }
        guard let probe = sealedKeepalive(peer) else { return }
        let span = Int(UInt16.max) - Int(BirthdayConstants.firstPort) + 1
        let round = min(BirthdayConstants.probesPerRound, BirthdayConstants.probes - probing.sent)
        for _ in 0..<round {
            var port: UInt16
            repeat {
                port = BirthdayConstants.firstPort + UInt16(random.uint32() % UInt32(span))
            } while !probing.tried.insert(port).inserted
            transmit(probe, to: PeerAddress(host: probing.host, port: port))
        }
        probing.sent += round
        stats.birthdayProbes += round
        birthday.probing = probing
    }

    /// A keepalive sealed under the session's current keys, to send to any address.
    private func sealedKeepalive(_ peer: Peer) -> [UInt8]? {
        guard let kp = peer.current, !kp.isExpired(now: clock.now()), let counter = kp.takeCounter() else { return nil }
        var datagram = [UInt8](repeating: 0, count: Keypair.sealedCount(channel: nil, payload: []))
        datagram.withUnsafeMutableBytes { kp.seal(counter: counter, channel: nil, payload: [], into: $0) }
        return datagram
    }
}
