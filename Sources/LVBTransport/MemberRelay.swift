import LVBCore
import LVBCrypto

/// What a node keeps to move its sessions off a rendezvous's relay onto a
/// member's (`MemberRelay`).
struct MemberRelayState {
    struct Ask {
        let request: UInt32
        let via: NodeID
        let at: Instant
    }
    /// Sessions on a rendezvous's relay: since when.
    var since: [NodeID: Instant] = [:]
    /// The request asked of a member for each, and when (asked again after `memberRelayRetry`).
    var asked: [NodeID: Ask] = [:]
}

/// Members relay before the rendezvous (issue 48): a session that has run
/// over a rendezvous's relay for `memberRelayFirstAfter` (the punch, which
/// the relay raced, had its chance; birthday punching goes on from the
/// member's relay) moves to
/// the relay of the room's host, a member both sides hold direct sessions
/// with, whose relay budget (`--relay-kbps`, 2500 kbit/s by default for a
/// host) is counted and capped as a rendezvous's is. The node asks the
/// host to introduce it to the peer again; an introduction that offers the
/// host's relay gets a handshake along that relay path, and the first
/// answer carries the session there (a relay path is one more way to the
/// same node, as after a rendezvous's restart). The rendezvous's relay
/// stays the last resort: for the first seconds, and where no host relays.
extension TransportCore {
    /// Called from `tick()`.
    func tickMemberRelays(_ now: Instant) {
        var hosts: [NodeID]?
        for peer in peersByID.values {
            guard let id = peer.id else { continue }
            guard peer.established, peer.role != .rendezvous, let via = relayVia(peer.endpoint), isRendezvous(via) else {
                memberRelays.since[id] = nil
                continue
            }
            let since = memberRelays.since[id] ?? now
            memberRelays.since[id] = since
            guard now - since >= IntroductionConstants.memberRelayFirstAfter,
                  memberRelays.asked[id].map({ now - $0.at >= IntroductionConstants.memberRelayRetry }) ?? true else { continue }
            // A host we reach directly, not the peer itself.
            hosts = hosts ?? establishedPeers(in: [.host]).filter { peersByID[$0].map { !RelayPath.isRelay($0.endpoint) } ?? false }
            guard let host = hosts?.first(where: { $0 != id }) else { continue }
            let ask = MemberRelayState.Ask(request: random.uint32(), via: host, at: now)
            memberRelays.asked[id] = ask
            stats.memberRelayAsks += 1
            sendIntroduce(.request(request: ask.request, peer: id, addresses: config.ownAddresses), to: host)
        }
        if memberRelays.asked.count > TransportConstants.maxPeers {
            memberRelays.asked = memberRelays.asked.filter { peersByID[$0.key] != nil }
        }
    }

    /// An introduction answering a member-relay ask (true: it was one).
    func memberRelayIntroduced(to other: NodeID, offersRelay: Bool, addresses: [PeerAddress], request: UInt32, by coordinator: NodeID) -> Bool {
        guard request != 0, let ask = memberRelays.asked[other], ask.request == request, ask.via == coordinator else { return false }
        guard offersRelay, !addresses.isEmpty, let peer = peersByID[other], peer.established,
              let via = relayVia(peer.endpoint), isRendezvous(via) else { return true }
        let path = relayPath(to: other, via: coordinator)
        peer.memberRelayPath = path
        stats.memberRelayMoves += 1
        startInitiation(peer, firstAttempt: clock.now(), only: [path], lapses: true)
        return true
    }

    /// Whether a datagram over relay path `source` may take the session
    /// off a member's relay path: not a rendezvous's while the member's
    /// carried something within `directPathQuiet` (a relayed datagram of
    /// the rendezvous still in flight would take it back).
    func keepsMemberRelay(_ peer: Peer, against source: PeerAddress, now: Instant) -> Bool {
        guard let member = peer.memberRelayPath, peer.endpoint == member, source != member,
              let last = peer.lastMemberRelayIn, now - last < TransportConstants.directPathQuiet else { return false }
        return relayVia(source).map(isRendezvous) ?? true
    }

    /// A session arrived on relay path `path`: true and noted when a member relays it.
    func noteMemberRelay(_ peer: Peer, at path: PeerAddress) -> Bool {
        guard let i = RelayPath.index(of: path), let via = introductions.routes[i]?.via, !isRendezvous(via) else { return false }
        peer.memberRelayPath = path
        return true
    }

    /// A peer is forgotten: what the path machinery kept for it goes
    /// (a spare it kept closes on the next tick, `keepSpares`).
    func forgetPath(of id: NodeID) {
        memberRelays.since[id] = nil
        memberRelays.asked[id] = nil
        birthday.relayedSince[id] = nil
        endProbing(id)
    }
}
