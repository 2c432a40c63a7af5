import LVBCore

/// A punch the relay won. An introduction makes both sides dial at once:
/// a hop-limited opener to each direct address (it opens the sender's own
/// NAT and dies before the peer's), the real initiation to the relay path
/// at once, and to the direct addresses from `punchRetry` on. The relay
/// path has no NAT to open, so its answer comes first and the handshake is
/// done before any direct initiation left: the direct paths then waited
/// for the first direct probe (`directProbeFirst`, 1 s), and every join
/// behind NATs took its first picture and a second of the stream over the
/// rendezvous (30 KB of 35 KB an ordinary NAT's viewer received in its
/// first two seconds, measured). Now the punch goes on beside the session:
/// when its real initiations were due, to the direct addresses alone, and
/// lapsing (`repunchTries`) where they cannot meet (a hard NAT: birthday
/// punching's turn).
extension TransportCore {
    /// A handshake with `peer` completed along `source`: if that is a relay
    /// path and this punch's opener went out lately, its direct initiations go on.
    func resumePunch(_ peer: Peer, after source: PeerAddress) {
        guard RelayPath.isRelay(source), peer.punchResumeAt == nil, peer.punchAttempts != nil,
              let opener = peer.openerSentAt, !peer.directCandidates.isEmpty else { return }
        let now = clock.now()
        guard now - opener < TransportConstants.directProbeFirst else { return }
        peer.punchResumeAt = max(now, opener + TransportConstants.punchRetry)
    }

    /// Called from `tick` once `punchResumeAt` has come.
    func punchOn(_ peer: Peer, now: Instant) {
        peer.punchResumeAt = nil
        peer.openerSentAt = nil
        guard peer.established, RelayPath.isRelay(peer.endpoint), peer.initiation == nil || peer.initiation?.lapses == true,
              !peer.directCandidates.isEmpty else { return }
        stats.punchesResumed += 1
        peer.punchAttempts = max(peer.punchAttempts ?? 1, 1)  // the opener went: real initiations only
        startInitiation(peer, firstAttempt: now, only: peer.directCandidates, lapses: true)
    }
}
