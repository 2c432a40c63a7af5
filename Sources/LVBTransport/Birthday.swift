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
    /// Peers the easy side probes for at once (a host with several hard
    /// viewers): at most 4 × 640 probes a second.
    public static let probingAtOnce = 4
    /// The ports probed: Linux's NAT gives a flow from a port above 1023 a
    /// port in 1024–65535 (`random,fully-random` draws them uniformly).
    public static let firstPort: UInt16 = 1024
    /// A session relayed this long is offered a birthday by its hard side
    /// (no ordinary punch of a hard NAT meets a NAT: only an open peer
    /// could, and its session would not be on a relay); by a side whose NAT looked
    /// endpoint-independent, after `afterEasy`: a punch between two such
    /// NATs that failed shows that one maps by destination after all (an
    /// address-dependent NAT looks endpoint-independent to one
    /// rendezvous's two ports), and whichever side it is, one of the two
    /// directions meets.
    public static let after: Duration = .milliseconds(100)
    public static let afterEasy: Duration = .seconds(3)
    /// The hard side keeps its spares this long after saying they are
    /// ready, then gives up (the probes take 3.2 s; round trips over the
    /// relay add to it); an offer or an acceptance not followed up within
    /// `answerWithin` lapses.
    public static let sparesLifetime: Duration = .seconds(6)
    public static let answerWithin: Duration = .seconds(3)
    /// A pair that did not meet is offered again after this, then twice as
    /// late each time up to `retryMax`; an easy side probes for one peer at
    /// most once per `retry`.
    public static let retry: Duration = .seconds(30)
    public static let retryMax: Duration = .seconds(480)
    /// An easy side busy probing for others: offered again after this.
    public static let busyRetry: Duration = .seconds(2)

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
        /// The peer's outside address, as a coordinator introduced it (the
        /// port the peer's acceptance named, if any): what the spares aim at.
        var target: PeerAddress
        /// When the offer went, and (once accepted) the spares opened and readiness said.
        let offered: Instant
        var accepted: Instant?
        var spares: [UInt32] = []
        var ready: Instant?
    }
    /// The easy side's probing for one peer: accepted, and once the peer
    /// is ready, probes going out.
    struct Probing {
        /// The peer's outside IPv4 address, as a coordinator introduced it.
        let host: PeerAddress.Host
        let accepted: Instant
        var started: Instant?
        var sent = 0
        var tried: Set<UInt16> = []
        /// The spare socket the probes leave from (nil: the node's own).
        var spare: UInt32?
    }
    var run: Run?
    var probing: [NodeID: Probing] = [:]
    /// Spares that carry a session now, by peer.
    var kept: [NodeID: UInt32] = [:]
    /// Sessions of the hard side seen relayed, since when.
    var relayedSince: [NodeID: Instant] = [:]
    /// When each peer may be offered again, and the gap after that.
    var backoff: [NodeID: (at: Instant, gap: Duration)] = [:]
    /// When this node last accepted each peer's offer.
    var accepted: [NodeID: Instant] = [:]
    /// The sink has no spare sockets: never offer.
    var unsupported = false
}

/// Birthday punching: a pair with one NAT that maps each destination to a
/// new random port (hard) and one that keeps one port for all
/// (endpoint-independent) meets without a relay the way Tailscale's
/// magicsock does, after `danderson/nat-birthday-paradox`. Once their
/// session has run over a relay for `after`, the hard side offers (over
/// the session); an easy side accepts; the hard side opens `spares` spare
/// sockets, each sending one hop-limited datagram (dead before the peer's
/// NAT) to the easy side's outside address, so its NAT maps `spares`
/// random ports towards it, and says it is ready. The easy side probes
/// random ports of the hard side's outside IPv4 address from its own
/// socket, 64 every 100 ms, each probe a sealed keepalive of the session:
/// a probe that lands on one of those ports passes the hard NAT's filter
/// (the spare sent to exactly that address) and reaches the spare, where
/// it authenticates, and the hard side's session roams onto the spare
/// (`SparePath`) as on any authenticated datagram; its answer from there
/// passes the easy NAT (the probe opened it) and the easy side roams too.
/// 2,048 probes against 256 spares in 64,512 ports meet with 99.97 %
/// (`BirthdayConstants.chance`). Nobody opens spares for a peer that
/// cannot probe (a hard one declines the offer first).
extension TransportCore {
    /// Called from `tick()`.
    func tickBirthday(_ now: Instant) {
        keepSpares()
        // (Offers need a NAT measured: one not yet known, or none, offers nothing.)
        if config.nat == .hard || config.nat == .easy, !birthday.unsupported { tickOffers(now) }
        for id in birthday.probing.keys { tickProbes(id, now: now) }
    }

    /// Where a session that runs over a relay may meet its peer directly:
    /// the outside IPv4 address a coordinator introduced the peer at. Not
    /// where both have a global IPv6 address: that path is punched as it
    /// is and preferred (a birthday over IPv4 would take the session first).
    func birthdayTarget(_ peer: Peer) -> PeerAddress? {
        guard peer.established, peer.role != .rendezvous, RelayPath.isRelay(peer.endpoint), let id = peer.id,
              let seen = introductions.seen[id], seen.isIPv4 else { return nil }
        if config.ownAddresses.contains(where: \.isGlobalIPv6), peer.directCandidates.contains(where: \.isGlobalIPv6) { return nil }
        return seen
    }

    private func mayTry(_ id: NodeID, now: Instant) -> Bool { birthday.backoff[id].map { now >= $0.at } ?? true }

    // MARK: Hard side

    private func tickOffers(_ now: Instant) {
        if let run = birthday.run {
            if let ready = run.ready {
                // The probes had their time.
                if now - ready >= BirthdayConstants.sparesLifetime { endRun(keeping: nil, now: now) }
            } else if now - (run.accepted ?? run.offered) >= BirthdayConstants.answerWithin {
                // No answer (or the spares never opened): offered again later.
                birthday.run = nil
                sink.closeSpares(run.spares)
                backOff(run.peer, now: now)
            }
            return
        }
        if birthday.backoff.count > TransportConstants.maxPeers { birthday.backoff = birthday.backoff.filter { peersByID[$0.key] != nil } }
        var busiest: (Peer, PeerAddress, Instant)?
        let after = config.nat == .hard ? BirthdayConstants.after : BirthdayConstants.afterEasy
        for peer in peersByID.values {
            guard let id = peer.id else { continue }
            guard let target = birthdayTarget(peer) else {
                birthday.relayedSince[id] = nil
                continue
            }
            let since = birthday.relayedSince[id] ?? now
            birthday.relayedSince[id] = since
            // Only a session one side needs is worth 256 sockets: a layer
            // above needs it here, or the peer offered first (it needs it).
            guard peer.needed || birthday.accepted[id] != nil else { continue }
            // The busiest first (a parent's stream over the relay, not the
            // host's chat: one run at a time, and a hard joiner's run with
            // the host came first and held its parent's back), then the longest relayed.
            if now - since >= after, mayTry(id, now: now), busiest.map({ b in
                peer.relayedBytesIn != b.0.relayedBytesIn ? peer.relayedBytesIn > b.0.relayedBytesIn : since < b.2
            }) ?? true {
                busiest = (peer, target, since)
            }
        }
        guard let (peer, target, _) = busiest, let id = peer.id else { return }
        birthday.run = BirthdayState.Run(peer: id, target: target, offered: now)
        stats.birthdayOffers += 1
        sendIntroduce(.birthday(step: .offer, count: UInt16(BirthdayConstants.spares)), to: id)
    }

    /// What arrives on any spare (either side's) enters the core as from its `SparePath` address.
    var spareReceiver: (inout [UInt8], PeerAddress) -> Void {
        { [weak self] datagram, source in self?.receive(reusing: &datagram, from: source) }
    }

    /// The peer accepted: open the spares, then each sends its opener and
    /// the peer hears that they are ready.
    private func accepted(by id: NodeID, port: UInt16, now: Instant) {
        guard var run = birthday.run, run.peer == id, run.accepted == nil else { return }
        run.accepted = now
        if port != 0 { run.target = PeerAddress(host: run.target.host, port: port) }
        birthday.run = run
        stats.birthdayRuns += 1
        let opening = sink.openSpares(count: BirthdayConstants.spares, receive: spareReceiver) { [weak self] spares in
            self?.sparesOpened(spares, for: id)
        }
        if !opening {
            birthday.unsupported = true
            birthday.run = nil
        }
    }

    private func sparesOpened(_ spares: [UInt32], for id: NodeID) {
        guard var run = birthday.run, run.peer == id, run.ready == nil else { return sink.closeSpares(spares) }
        run.spares = spares
        stats.birthdaySpares += spares.count
        guard let peer = peersByID[id], !spares.isEmpty, let opener = sealedKeepalive(peer) else {
            birthday.run = run
            return endRun(keeping: nil, now: clock.now())
        }
        for spare in spares { sink.sendSpare(opener, spare: spare, to: run.target, hopLimit: TransportConstants.punchOpenerHops) }
        run.ready = clock.now()
        birthday.run = run
        sendIntroduce(.birthday(step: .ready, count: UInt16(clamping: spares.count)), to: id)
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
        emit(.birthday(run.peer, met: spare != nil, after: now - (run.accepted ?? run.offered)))
    }

    private func backOff(_ id: NodeID, now: Instant) {
        let gap = birthday.backoff[id].map { min(max($0.gap * 2, BirthdayConstants.retry), BirthdayConstants.retryMax) }
            ?? BirthdayConstants.retry
        birthday.backoff[id] = (now + gap, gap)
    }

    /// The session with `peer` roamed to a new address: onto one of the
    /// run's spares (a probe landed), or, probing, to the peer's outside
    /// address (its answer from the spare came).
    func birthdayRoamed(_ peer: Peer, to address: PeerAddress) {
        guard let id = peer.id else { return }
        if let (spare, _) = SparePath.parse(address), let run = birthday.run, run.peer == id, run.spares.contains(spare) {
            stats.birthdayMet += 1
            peer.birthdayPath = address
            endRun(keeping: spare, now: clock.now())
            // Our answer from the spare opens the way back: the easy side roams on it.
            sendPing(peer)
        } else if let probing = birthday.probing[id], let started = probing.started, SparePath.outside(address).host == probing.host,
                  SparePath.parse(address)?.spare == probing.spare {
            stats.birthdayMet += 1
            peer.birthdayPath = address
            birthday.probing[id] = nil
            // The probing spare carries the session now (`keepSpares` closes it once it leaves).
            if let spare = probing.spare { birthday.kept[id] = spare }
            emit(.birthday(id, met: true, after: clock.now() - started))
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

    // MARK: Messages

    /// A step of the birthday exchange from `peer` (over the session).
    func handleBirthday(_ step: BirthdayStep, count: UInt16, port: UInt16, from peer: Peer) {
        guard let id = peer.id else { return }
        let now = clock.now()
        switch step {
        case .offer:
            offered(by: peer, id: id, now: now)
        case .accept:
            accepted(by: id, port: port, now: now)
        case .decline, .busy:
            guard let run = birthday.run, run.peer == id, run.accepted == nil else { return }
            birthday.run = nil
            if step == .decline {
                backOff(id, now: now)
            } else {
                birthday.backoff[id] = (now + BirthdayConstants.busyRetry, birthday.backoff[id]?.gap ?? .zero)
            }
        case .ready:
            guard var probing = birthday.probing[id], probing.started == nil else { return }
            probing.started = now
            birthday.probing[id] = probing
            tickProbes(id, now: now)
        }
    }
}
