import LVBCore
import LVBCrypto

/// Sessions neither side needs end (issue 48). A node dials many peers for
/// a purpose that passes — a parent candidate that was full, a gossip
/// neighbour since dropped, a peer met for one subscription — and each
/// such session pinged every `keepaliveTimeout` and probed for a direct
/// path for ever, through a rendezvous's relay where it ran relayed: in a
/// room of 200 behind NATs a member held about 45 sessions, two thirds of
/// them unused, and they carried most of what the rendezvous relayed once
/// the room had settled. A session is in use while this node sends on it
/// (anything but control messages); one unused for `sessionIdleAfter`
/// (`relayedSessionIdleAfter` over a relay path, which costs the relay)
/// that the layers above do not need either (`needed`: a parent, a backup,
/// a gossip neighbour, the room's host) is released — `idle(released)`
/// tells the peer — and ends with `bye(idle)` once both sides have
/// released it. Either side that sends on it again, or needs it again,
/// takes its release back first. Sessions with a rendezvous are never
/// released (it introduces and relays), nor a handshake under way.
extension TransportCore {
    /// Releases the sessions nobody uses or needs and takes back releases
    /// of those needed again; call about once a second. `needed`: whether
    /// a layer above needs the session with that node.
    public func collectSessions(needed: (NodeID) -> Bool) {
        let now = clock.now()
        for peer in Array(peersByID.values) where peer.established && peer.initiation == nil {
            guard let id = peer.id else { continue }
            peer.needed = peer.role == .rendezvous || needed(id)
            let after = RelayPath.isRelay(peer.endpoint) ? TransportConstants.relayedSessionIdleAfter : TransportConstants.sessionIdleAfter
            let idle = !peer.needed && now - max(peer.lastUsed ?? peer.created, peer.created) >= after
            if idle && !peer.released {
                release(peer)
            } else if !idle && peer.released {
                use(peer, now: now)
            }
        }
    }

    /// This node sends on the session (or needs it again): a release is taken back.
    func use(_ peer: Peer, now: Instant) {
        peer.lastUsed = now
        guard peer.released else { return }
        peer.released = false
        sendControl(.idle(released: false), to: peer)
    }

    private func release(_ peer: Peer) {
        peer.released = true
        stats.sessionsReleased += 1
        if peer.peerReleased {
            endIdle(peer)
        } else {
            sendControl(.idle(released: true), to: peer)
        }
    }

    /// The peer says whether it still needs the session.
    func peerReleased(_ peer: Peer, _ released: Bool) {
        peer.peerReleased = released
        if released && peer.released { endIdle(peer) }
    }

    /// The peer ended the session as idle. Had we taken our release back
    /// meanwhile (it crossed our use), a session we dialled is dialled again.
    func idleBye(from peer: Peer) {
        stats.sessionsClosedIdle += 1
        if peer.released || !peer.persistent {
            remove(peer, reason: .idle)
        } else {
            lost(peer, reason: .idle, now: clock.now())
        }
    }

    private func endIdle(_ peer: Peer) {
        stats.sessionsClosedIdle += 1
        sendControl(.bye(ControlMessage.ByeReason.idle), to: peer)
        remove(peer, reason: .idle)
    }
}
