import LVBCore
import LVBCrypto

// Unknown-session packets (type 8, man/lvbnode-protocol.7 §PACKETS): a node
// that gets a transport packet under an index it does not hold says so, and
// the sender, if that index is its current session's with the node at that
// address, takes the session as lost at once instead of after
// `peerGoneTimeout` of silence. A rendezvous restarted under a running
// room is heard again at the host's next announcement, not 15 s later.
//
//  0               1               2               3
//  +---------------+---------------+---------------+---------------+
//  |     0x08      |            reserved (zero)                    |
//  +---------------+---------------+---------------+---------------+
//  |           receiver index of the packet answered, LE           |
//  +---------------+---------------+---------------+---------------+
//
// 8 bytes in answer to at least 32: never an amplifier; at most
// `unknownSessionRate` a second to one source host. Only someone who saw
// the index on the path can forge one, and it costs the session one fresh
// handshake, no more than dropping its packets would.
extension TransportCore {
    /// A transport packet under `index`, which this node does not hold, came from `source`.
    func answerUnknownIndex(_ index: UInt32, to source: PeerAddress) {
        guard unknownSessionAnswers.allow(source.host, now: clock.now()) else { return }
        stats.unknownSessionsSent += 1
        transmit(Packet.unknownSession(index: index), to: source, unauthenticatedReply: true)
    }

    /// The node at `source` holds no session under `index`. Believed only
    /// for the current keys of the session with the node at that address,
    /// and only once the peer has been quiet for `unknownSessionQuiet` (a
    /// packet under keys the peer has just replaced, as when both sides
    /// dialled at once, is answered so too while the session lives). Heard
    /// from lately: a ping asks it, and if nothing comes for
    /// `unknownSessionQuiet` after, the session is lost (`tickUnknownSession`).
    func consumeUnknownSession(_ index: UInt32, from source: PeerAddress) {
        let now = clock.now()
        guard unknownSessionsTaken.allow(0, now: now) else {
            drop(\.droppedUnknownSession, from: source, "unknown-session packet over the rate")
            return
        }
        guard let peer = peersByID.values.first(where: { $0.endpoint == source && $0.current?.remoteIndex == index }),
              peer.established else {
            drop(\.droppedUnknownSession, from: source, "unknown-session packet for index \(index) names no session here")
            return
        }
        // Keys the peer never sent under may be keys it dropped for others
        // (both sides dialled at once): a restart loses keys that were in use.
        guard peer.current?.receivedAny == true else {
            drop(\.droppedUnknownSession, from: source, "unknown-session packet for keys the peer never used")
            return
        }
        guard now - (peer.lastReceived ?? peer.created) >= TransportConstants.unknownSessionQuiet else {
            if peer.unknownSessionSince == nil {
                peer.unknownSessionSince = now
                sendPing(peer)
            }
            return
        }
        stats.sessionsReset += 1
        lost(peer, reason: .reset, now: now)
    }

    /// After an unknown-session packet from a peer heard from lately: lost
    /// if nothing came since for `unknownSessionQuiet`, the doubt dropped if
    /// something did. Called from `tick()` for each established peer; true when lost.
    func tickUnknownSession(_ peer: Peer, now: Instant) -> Bool {
        guard let since = peer.unknownSessionSince else { return false }
        if let last = peer.lastReceived, last > since {
            peer.unknownSessionSince = nil
            return false
        }
        guard now - since >= TransportConstants.unknownSessionQuiet else {
            // Asked again (a ping or its pong may be lost), about three times in all.
            if now - (peer.pingSentAt ?? since) >= TransportConstants.unknownSessionQuiet / 3 { sendPing(peer) }
            return false
        }
        peer.unknownSessionSince = nil
        stats.sessionsReset += 1
        lost(peer, reason: .reset, now: now)
        return true
    }
}
