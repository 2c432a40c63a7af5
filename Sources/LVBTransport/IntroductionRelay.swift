import LVBCore
import LVBCrypto

/// A coordinator's relay for the pairs it introduced, and a node's own
/// relay paths through coordinators (lvbnode-protocol(7), INTRODUCTIONS,
/// "Relay"): sealed datagrams in `relay`/`relayed` messages, each relay
/// path one more endpoint of the session (`RelayPath`).
extension TransportCore {
    /// The relay path to `peer` through `via` (an address in `RelayPath`'s prefix).
    func relayPath(to peer: NodeID, via: NodeID) -> PeerAddress {
        let route = IntroductionState.Route(via: via, peer: peer)
        if let i = introductions.routeIndex[route] { return RelayPath.address(i) }
        let i = IntroductionState.routeBase | (introductions.nextRoute & 0x7FFF_FFFF)
        introductions.nextRoute &+= 1
        introductions.routes[i] = route
        introductions.routeIndex[route] = i
        return RelayPath.address(i)
    }

    /// Sends a datagram along one of our own relay paths; false when
    /// `address` is not one (another owner's, `relaySend`).
    func sendAlongOwnRelay(_ datagram: [UInt8], to address: PeerAddress) -> Bool {
        guard let i = RelayPath.index(of: address), let route = introductions.routes[i] else { return false }
        // The relay message wraps the sealed datagram: header, peer, id, part.
        guard let pieces = RelayPiece.split(datagram, id: introductions.nextPieceID, maxPayload: maxPayload) else { return true }
        introductions.nextPieceID &+= 1
        stats.relayPathDatagramsOut += 1
        if let via = peersByID[route.via] { use(via, now: clock.now()) }  // a session runs through it
        for piece in pieces { sendIntroduce(.relay(peer: route.peer, piece: piece), to: route.via) }
        return true
    }

    /// Coordinator: passes one sealed datagram of a pair it introduced,
    /// within the pair's and the total budget; what goes on is never larger
    /// than what came.
    func forwardRelay(_ piece: RelayPiece, from: NodeID, to: NodeID) {
        let now = clock.now()
        let pair = IntroductionState.Pair(from, to)
        guard config.relayKbps > 0, let last = introductions.pairs[pair], now - last < IntroductionConstants.relayPairLifetime,
              isEstablished(with: to) else {
            stats.relayRefused += 1
            return
        }
        guard introductions.pairBytes.allow(pair, cost: piece.bytes.count, now: now),
              introductions.totalBytes.allow(0, cost: piece.bytes.count, now: now) else {
            stats.relayRefused += 1
            stats.relayOverBudget += 1
            return
        }
        introductions.pairs[pair] = now
        if piece.index == 0 { stats.relayedDatagrams += 1 }
        stats.relayedBytes += piece.bytes.count
        if let peer = peersByID[to] { use(peer, now: now) }
        sendIntroduce(.relayed(peer: from, piece: piece), to: to)
    }

    /// A datagram from `origin` relayed by `via`: into the session layer as
    /// if it came from the relay path's address.
    func receiveRelayed(_ piece: RelayPiece, from origin: NodeID, via: NodeID) {
        let address = relayPath(to: origin, via: via)
        guard let i = RelayPath.index(of: address) else { return }
        var datagram = piece.bytes
        if piece.count == 2 {
            // Two pieces: keep the first until the second of the same datagram comes.
            if piece.index == 0 {
                introductions.halves[i] = piece
                return
            }
            guard let first = introductions.halves.removeValue(forKey: i), first.id == piece.id else { return }
            datagram = first.bytes + piece.bytes
        }
        stats.relayPathDatagramsIn += 1
        receive(datagram, from: address)
    }

    /// A new session with `coordinator` (it restarted, or the path to it
    /// came back): it knows none of the pairs it relayed for us, and
    /// relays only pairs it introduced. Every session of ours running over
    /// a relay path through it asks for its introduction again (both sides,
    /// holding their session, ignore the answer), which makes the pair
    /// known there again before the session falls silent.
    func renewRelayedPairs(via coordinator: NodeID) {
        for (i, route) in introductions.routes where route.via == coordinator {
            guard let p = peersByID[route.peer], p.established, RelayPath.index(of: p.endpoint) == i else { continue }
            stats.introductionsAsked += 1
            sendIntroduce(.request(request: random.uint32(), peer: route.peer, addresses: config.ownAddresses), to: coordinator)
        }
    }
}
