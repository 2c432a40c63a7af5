import LVBCore
import LVBCrypto

/// What a node keeps to notice that its own outside address changed (a
/// home's new lease, a phone between Wi-Fi and a carrier) and to move its
/// sessions along.
struct AddressWatch {
    /// Where each coordinator (a rendezvous, a room's host) last said it sees
    /// this node: its reflexive address there.
    var observed: [NodeID: PeerAddress] = [:]
    /// The requests naming this node itself that await their answer, by coordinator.
    var asked: [NodeID: UInt32] = [:]
    /// When this node last asked where it is seen, and last moved.
    var lastCheck: Instant?
    var lastMove: Instant?
    /// Sessions this node asked to be introduced again after it moved: the request.
    var again: [NodeID: UInt32] = [:]
}

/// An address that changes (lvbnode-protocol(7), INTRODUCTIONS, "A node
/// that moves"). Every datagram a node sends after its outside address
/// changed reaches its peers from an address their NATs never saw: dropped,
/// and worse, each one leaves an inbound conntrack entry on the peer's NAT
/// that makes it map the peer's own later packets to that address to
/// another port (the clash a punch's hop-limited opener avoids) for as long
/// as they keep coming. So a node that moved:
///
/// - learns it from a coordinator: asked where it is seen (a request naming
///   itself, answered with the address the coordinator sees) whenever a
///   session that was talking goes quiet (`checkOwnAddress`), it compares
///   the answer with the last one from the same coordinator;
/// - moves to a new socket on a port the system picks when its own was
///   picked so too (`DatagramSink.rebind`): a new 5-tuple that no peer's
///   NAT holds a stale entry for (WebRTC's ICE restart gathers new
///   candidates, Tailscale's magicsock rebinds, for the same reason);
/// - holds every session's datagrams to a peer's direct address until that
///   peer is heard from again (`Peer.holdDirectUntil`), and asks the
///   coordinators to introduce it again to each peer it holds a session
///   with (`again`); both sides punch again, the relay racing as at first,
///   and the session stays the same one for the layers above.
extension TransportCore {
    /// Asks every coordinator where it sees this node (at most every
    /// `addressCheckInterval`): a session that was talking went quiet,
    /// which is what a changed outside address looks like from inside.
    public func checkOwnAddress() {
        let now = clock.now()
        if let last = addressWatch.lastCheck, now - last < TransportConstants.addressCheckInterval { return }
        addressWatch.lastCheck = now
        for c in addressCoordinators() {
            let request = random.uint32()
            addressWatch.asked[c] = request
            stats.addressChecks += 1
            sendIntroduce(.request(request: request, peer: nodeID, addresses: config.ownAddresses), to: c)
        }
    }

    /// Coordinators that can say where they see this node: rendezvous and room hosts with a session up.
    func addressCoordinators() -> [NodeID] { establishedPeers(in: [.rendezvous, .host]) }

    /// A coordinator says where it sees this node (its answer to a request
    /// naming us: the first one, after each session with it comes up, sets
    /// what later ones are compared with).
    func observed(_ addresses: [PeerAddress], by coordinator: NodeID, request: UInt32) {
        guard let seen = addresses.first, addresses.count == 1, !RelayPath.isRelay(seen) else { return }
        // Over one of our spare sockets (birthday punching) a coordinator sees that socket's mapping, not our own.
        if let peer = peersByID[coordinator], SparePath.parse(peer.endpoint) != nil { return }
        let solicited = addressWatch.asked.removeValue(forKey: coordinator) == request
        log.debug("\(coordinator.short) sees us at \(seen)")
        let before = addressWatch.observed.updateValue(seen, forKey: coordinator)
        if solicited, let before, before != seen, before.isIPv4 == seen.isIPv4 {
            // (What the others saw was before the move.)
            addressWatch.observed = [coordinator: seen]
            return moved(from: before, to: seen)
        }
        noticeMapping(seen)
    }

    /// Three or more peers see this node at the same outside IPv4 address,
    /// each at a port of its own: its NAT maps each destination apart (a
    /// rendezvous's two ports share its IP, so they cannot tell an
    /// address-dependent NAT from an endpoint-independent one; peers at
    /// other addresses can). Such a NAT meets no other NAT's punch: the
    /// node counts as behind a hard one. (One peer at another port is not
    /// enough: a punch whose conntrack entry clashed was given another
    /// port by an endpoint-independent NAT too.)
    private func noticeMapping(_ seen: PeerAddress) {
        let ports = addressWatch.observed.values.filter { $0.host == seen.host }.map(\.port)
        guard seen.isIPv4, config.nat != .hard, ports.count >= 3, Set(ports).count == ports.count else { return }
        log.info("coordinators see this node at \(addressWatch.observed.values.map(\.description).sorted()): its NAT maps each destination apart")
        config.nat = .hard
        mappingVariesByDestination = true
    }

    /// Our outside address changed: a new socket if we may take one, then
    /// every session punched again.
    func moved(from old: PeerAddress, to new: PeerAddress) {
        let now = clock.now()
        if let last = addressWatch.lastMove, now - last < TransportConstants.addressCheckInterval { return }
        addressWatch.lastMove = now
        stats.addressChanges += 1
        log.info("own address changed: \(old) → \(new)")
        emit(.moved(from: old, to: new))
        // Nothing more to our peers' direct addresses until each is punched
        // again (a relay may take them at once), from before the new socket
        // exists: the first datagram from it must be a punch's opener.
        let held = peersByID.values.filter { $0.established && $0.role != .rendezvous && !RelayPath.isRelay($0.endpoint) }
        for peer in held {
            peer.holdDirectUntil = now + TransportConstants.holdAfterMove
            peer.lastDirectIn = nil
        }
        let rebinding = sink.rebind { [weak self] port in self?.rebound(port: port, family: new.isIPv4) }
        guard !rebinding else { return }
        // On the same socket only the family that moved is held (a firewall
        // of the other family knows this port).
        for peer in held where SparePath.outside(peer.endpoint).isIPv4 != new.isIPv4 { peer.holdDirectUntil = nil }
        rebound(port: nil, family: new.isIPv4)
    }

    /// On the new socket (`port`), or on the old one when it could not
    /// move: every rendezvous hears from us at once (a public node roams
    /// on any authenticated datagram, and learns the new address), and
    /// every other session asks to be introduced again.
    func rebound(port: UInt16?, family ipv4: Bool) {
        log.info("on port \(port.map(String.init) ?? "unchanged"): punching every session again")
        if let port {
            stats.socketsRebound += 1
            config.ownAddresses = config.ownAddresses.map { PeerAddress(host: $0.host, port: port) }
        }
        let rendezvous = rendezvousPeers()
        for peer in peersByID.values where peer.established && (port != nil || SparePath.outside(peer.endpoint).isIPv4 == ipv4) {
            // (A session over a relay is introduced again too: the peer
            // hears that we moved rather than taking our pause for a death,
            // and the punch may find the direct path this time.)
            guard let id = peer.id else { continue }
            if peer.role == .rendezvous {
                sendPing(peer)
                continue
            }
            let via = rendezvous.filter { $0 != id }
            guard !via.isEmpty else {
                // Nobody to introduce us: straight to where it was (it roams to us).
                peer.holdDirectUntil = nil
                sendPing(peer)
                continue
            }
            let request = random.uint32()
            addressWatch.again[id] = request
            stats.introductionsAsked += 1
            for c in via { sendIntroduce(.again(request: request, peer: id, addresses: config.ownAddresses), to: c) }
        }
        // Where the coordinators see us now (and the new socket's own addresses).
        addressWatch.lastCheck = nil
        checkOwnAddress()
    }

    /// Either side of a pair introduced again (`again`, or `punch`: not
    /// `moved`): punch anew to the addresses given, the session and its
    /// keys going on meanwhile. A `punch` (the session runs on a relay)
    /// punches the direct addresses alone, for `repunchTries` tries: an
    /// initiation along the relay would complete first and end the punch.
    /// A move punches every address, the relay racing.
    func introducedAgain(to other: NodeID, at addresses: [PeerAddress], relay: Bool, moved: Bool = true, request: UInt32, by coordinator: NodeID) {
        if request != 0 {
            guard addressWatch.again[other] == request else { return }
            addressWatch.again[other] = nil
        }
        guard let peer = peersByID[other], !addresses.isEmpty else { return }
        let path = relay ? [relayPath(to: other, via: coordinator)] : []
        guard peer.established else {
            // (A session that died meanwhile: an ordinary introduction.)
            return connect(to: addresses + path, expecting: other, punch: true)
        }
        stats.introductionsTaken += 1
        log.debug("introduced again to \(other.short) at \(addresses)")
        if request == 0 && moved { emit(.peerMoved(other)) }
        let direct = addresses.filter { !RelayPath.isRelay($0) }
        if !moved {
            guard !direct.isEmpty, peer.initiation == nil || peer.initiation?.lapses == true else { return }
            stats.repunches += 1
            peer.punchAttempts = 0
            return startInitiation(peer, firstAttempt: clock.now(), only: Array(direct.uniqued(limit: TransportConstants.maxCandidates)), lapses: true)
        }
        let candidates = (direct + path).uniqued(limit: TransportConstants.maxCandidates)
        peer.candidates = Array(candidates)
        noteDirectCandidates(Array(candidates), of: peer)
        peer.punchAttempts = 0
        startInitiation(peer, firstAttempt: clock.now())
    }

    /// A session that was talking and has heard nothing for
    /// `quietBeforeCheck` while a ping of ours waits: maybe we moved.
    func tickAddressWatch(_ peer: Peer, now: Instant) {
        guard let sent = peer.pingSentAt, now - sent >= TransportConstants.quietBeforeCheck,
              (peer.lastReceived ?? peer.created) < sent, now - sent < TransportConstants.peerGoneTimeout else { return }
        checkOwnAddress()
    }
}
