import LVBCore
import LVBCrypto

// Birthday punching's easy side (`Birthday`): accepting an offer, and
// probing random ports of the hard side's outside address until one lands.
extension TransportCore {
    /// An offer: accepted if this node can meet a hard NAT (its own is not
    /// hard), a coordinator named the peer's outside IPv4 address, it is
    /// not probing for too many others, and the peer does not offer too often.
    func offered(by peer: Peer, id: NodeID, now: Instant) {
        if config.nat != .hard, let run = birthday.run, run.peer == id, run.accepted == nil {
            // Both offered at once (two NATs that look alike): the lower id's offer goes on.
            if nodeID.text < id.text {
                stats.birthdayDeclined += 1
                return sendIntroduce(.birthday(step: .busy, count: 0), to: id)
            }
            birthday.run = nil
        }
        let target = birthdayTarget(peer)
        let step: BirthdayStep
        let tooSoon = birthday.accepted[id].map { now - $0 < BirthdayConstants.retry } ?? false
        if config.nat == .hard || target == nil || birthday.probing[id] != nil || tooSoon {
            step = .decline
        } else if birthday.probing.count >= BirthdayConstants.probingAtOnce {
            step = .busy
        } else {
            step = .accept
        }
        guard step == .accept, let target else {
            stats.birthdayDeclined += 1
            sendIntroduce(.birthday(step: step, count: 0), to: id)
            return
        }
        birthday.accepted[id] = now
        if birthday.accepted.count > TransportConstants.maxPeers { birthday.accepted = birthday.accepted.filter { peersByID[$0.key] != nil } }
        // Should this direction fail, the other comes next (two NATs that
        // look alike: only one direction can meet), before the peer's next offer.
        let ours = now + BirthdayConstants.retry / 2
        if birthday.backoff[id].map({ $0.at < ours }) ?? true { birthday.backoff[id] = (ours, birthday.backoff[id]?.gap ?? .zero) }
        birthday.probing[id] = BirthdayState.Probing(host: target.host, accepted: now)
        // Behind a NAT that keeps ports, the probes leave from a spare
        // socket whose outside port is its own (named in the acceptance),
        // not from the node's: a probe to the one port where the peer's
        // unanswered handshake came from would clash with that flow in a
        // Linux NAT, which then gives the probe another port, and every
        // later new flow from the same socket that port too (the newest
        // flow's mapping is reused), so every probe after it would miss
        // (seen in the NAT lab: a host's probes all leaving from 43425, not 7400).
        if config.nat == .easy, config.natKeepsPort,
           sink.openSpares(count: 1, receive: spareReceiver, { [weak self] spares in self?.probeSpareOpened(spares, for: id) }) {
            return
        }
        sendIntroduce(.birthday(step: .accept, count: UInt16(BirthdayConstants.probes)), to: id)
    }

    /// The probing spare opened: the acceptance names its port (as the NAT
    /// keeps it). One that did not open, or whose port is unknown, leaves
    /// the probes to the node's own socket.
    private func probeSpareOpened(_ spares: [UInt32], for id: NodeID) {
        guard var probing = birthday.probing[id], probing.spare == nil, probing.started == nil else { return sink.closeSpares(spares) }
        var port: UInt16 = 0
        if let spare = spares.first, let p = sink.sparePort(spare) {
            probing.spare = spare
            port = p
            birthday.probing[id] = probing
            stats.birthdaySpares += 1
        }
        sink.closeSpares(spares.filter { $0 != probing.spare })
        sendIntroduce(.birthday(step: .accept, count: UInt16(BirthdayConstants.probes), port: port), to: id)
    }

    /// Probing for `id` ends (met, given up, or the peer gone): its spare
    /// closes unless it carries the session now.
    func endProbing(_ id: NodeID) {
        guard let probing = birthday.probing.removeValue(forKey: id), let spare = probing.spare, birthday.kept[id] != spare else { return }
        sink.closeSpares([spare])
    }

    /// One round of probes: the same sealed keepalive to the next ports.
    func tickProbes(_ id: NodeID, now: Instant) {
        guard var probing = birthday.probing[id] else { return }
        guard let peer = peersByID[id], peer.established, RelayPath.isRelay(peer.endpoint) else {
            // Direct now (a probe landed and the answer came: `birthdayRoamed`), or gone.
            return endProbing(id)
        }
        guard let started = probing.started else {
            // Accepted, and the peer never said it was ready.
            if now - probing.accepted >= BirthdayConstants.answerWithin { endProbing(id) }
            return
        }
        guard probing.sent < BirthdayConstants.probes else {
            // The last answers had a round trip to come back.
            if now - started >= BirthdayConstants.sparesLifetime {
                endProbing(id)
                emit(.birthday(id, met: false, after: now - started))
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
            let to = PeerAddress(host: probing.host, port: port)
            transmit(probe, to: probing.spare.flatMap { SparePath.address(spare: $0, remote: to) } ?? to)
        }
        probing.sent += round
        stats.birthdayProbes += round
        birthday.probing[id] = probing
    }

    /// A keepalive sealed under the session's current keys, to send to any address.
    func sealedKeepalive(_ peer: Peer) -> [UInt8]? {
        guard let kp = peer.current, !kp.isExpired(now: clock.now()), let counter = kp.takeCounter() else { return nil }
        var datagram = [UInt8](repeating: 0, count: Keypair.sealedCount(channel: nil, payload: []))
        datagram.withUnsafeMutableBytes { kp.seal(counter: counter, channel: nil, payload: [], into: $0) }
        return datagram
    }
}
