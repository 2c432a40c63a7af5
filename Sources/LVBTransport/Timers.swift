import LVBCore
import LVBCrypto

// Every session timer lives here (wireguard-go's timers.go). `tick()` must be
// called every `TransportConstants.tickInterval`; it is the only place timers fire.
extension TransportCore {
    /// Runs due timers: handshake retries and give-ups, rekeys, key expiry,
    /// keepalives (as pings, which also measure RTT), and silence detection.
    public func tick() {
        let now = clock.now()
        expirePendingResponses(now)
        for peer in Array(peersByID.values) + anonymousPeers {
            tick(peer, now: now)
        }
        tickIntroductions(now)
        tickBirthday(now)
        tickMemberRelays(now)
    }

    private func tick(_ peer: Peer, now: Instant) {
        // Handshake retry every rekeyTimeout (+ jitter), give up after rekeyAttemptTime.
        if let i = peer.initiation, now >= i.retryAt {
            if i.lapses, let only = i.only, let n = peer.punchAttempts, n < TransportConstants.repunchTries {
                // A punch beside a running session: its paced retries, direct only.
                startInitiation(peer, firstAttempt: i.firstAttempt, only: only, lapses: true)
            } else if i.lapses {
                indices[i.localIndex] = nil
                peer.initiation = nil
            } else if now - i.firstAttempt >= TransportConstants.rekeyAttemptTime {
                giveUp(peer)
                return
            } else {
                startInitiation(peer, firstAttempt: i.firstAttempt)
            }
        }
        if let at = peer.punchResumeAt, now >= at { punchOn(peer, now: now) }
        probeDirectPath(peer, now: now)
        // Keys past rejectAfterTime are useless: wipe them.
        var expired = [Keypair]()
        if let k = peer.previous, k.isExpired(now: now) { expired.append(k); peer.previous = nil }
        if let k = peer.next, k.isExpired(now: now) { expired.append(k); peer.next = nil }
        if let k = peer.current, k.isExpired(now: now) { expired.append(k); peer.current = nil }
        retire(expired)

        // Not while the peer's own fresh keys wait for its first packet: ours would cross them.
        if let k = peer.current, peer.initiation == nil, !peer.awaitsConfirmation(now: now) {
            let age = now - k.created
            let stale = k.isInitiator ? age >= TransportConstants.rekeyAfterTime : age >= TransportConstants.rekeyAfterTimeReceiving
            // An initiator's keys the peer never used after rekeyTimeout: the
            // confirmation (or XX message 3) was lost, so handshake again.
            let unconfirmed = k.isInitiator && !k.receivedAny && age >= TransportConstants.rekeyTimeout
            if (stale || unconfirmed) && peer.id != nil && (peer.established || peer.persistent) {
                startInitiation(peer, firstAttempt: now)
            }
        }
        if peer.established {
            if tickUnknownSession(peer, now: now) { return }
            tickAddressWatch(peer, now: now)
            if let last = peer.lastReceived, now - last >= TransportConstants.peerGoneTimeout {
                lost(peer, reason: .silence, now: now)
                return
            }
            if peer.current == nil && peer.next == nil && peer.previous == nil && peer.initiation == nil {
                lost(peer, reason: .expired, now: now)
                return
            }
            if peer.current != nil, let resend = peer.helloResend, now >= resend.at { sendHello(peer) }
            if peer.current != nil, now - (peer.lastSent ?? now) >= TransportConstants.keepaliveTimeout {
                sendPing(peer)
            }
        } else if !peer.persistent, peer.initiation == nil, peer.current == nil,
                  now - (peer.lastReceived ?? peer.created) >= TransportConstants.peerGoneTimeout {
            // An incoming handshake that never became a session (its initiator
            // never confirmed): forget it, or unconfirmed records fill the table.
            remove(peer, reason: .silence)
        }
    }

    /// The session died: a dialled peer is redialled (one dialled by
    /// address alone at that address, by XX again); others are forgotten.
    /// The next session is a new one for the layers above: its hello is
    /// reported again (a restarted rendezvous must hear the room again).
    func lost(_ peer: Peer, reason: GoneReason, now: Instant) {
        if peer.persistent, let address = peer.dialledBlind {
            remove(peer, reason: reason)
            connect(to: address, expecting: nil)
        } else if peer.persistent, let id = peer.id {
            forget(peer)
            peer.established = false
            peer.unknownSessionSince = nil
            peer.helloReceived = false
            peer.helloResend = nil
            peer.helloAnswered = nil
            emit(.gone(id, reason))
            startInitiation(peer, firstAttempt: now)
        } else {
            remove(peer, reason: reason)
        }
    }

    /// While a session a layer above needs runs over a relay path, a punch
    /// of the direct addresses now and then (1 s, doubling to 8 s, for
    /// `directProbeWindow`): both sides at once through the relay's node
    /// (`punch`), or a handshake from this side alone where none can
    /// introduce; the first that completes moves the session off the relay.
    private func probeDirectPath(_ peer: Peer, now: Instant) {
        guard let probe = peer.directProbe else { return }
        guard now < probe.until, !peer.directCandidates.isEmpty else {
            peer.directProbe = nil
            return
        }
        guard peer.established, RelayPath.isRelay(peer.endpoint) else {
            if peer.established { peer.directProbe = nil }  // on a direct path already
            return
        }
        guard now >= probe.next, peer.initiation == nil else { return }
        let gap = min(probe.gap * 2, TransportConstants.directProbeLast)
        peer.directProbe = (now + gap, gap, probe.until)
        // A session nothing above needs ends soon (`collectSessions`): not worth a punch.
        guard peer.needed else { return }
        if let id = peer.id, let via = relayVia(peer.endpoint), via != id, isEstablished(with: via) {
            // Both sides punch, as at first: a probe from one side alone
            // dies at the other's NAT unless it lets in what its inside
            // never sent to (Tailscale's CallMeMaybe over DERP, alike).
            let request = random.uint32()
            addressWatch.again[id] = request
            stats.punchesAsked += 1
            sendIntroduce(.punch(request: request, peer: id, addresses: config.ownAddresses), to: via)
        } else {
            stats.directProbes += 1
            startInitiation(peer, firstAttempt: now, only: peer.directCandidates, lapses: true)
        }
    }

    private func giveUp(_ peer: Peer) {
        if let i = peer.initiation { indices[i.localIndex] = nil }
        peer.initiation = nil
        if peer.persistent { emit(.connectFailed(peer.endpoint, peer.id)) }
        if peer.current == nil { remove(peer, reason: .expired) }
    }

    private func expirePendingResponses(_ now: Instant) {
        while let first = pendingResponses.first {
            guard case .pendingResponse(let p)? = indices[first] else { pendingResponses.removeFirst(); continue }
            guard now - p.created >= TransportConstants.rekeyTimeout * 2 else { break }
            indices[first] = nil
            pendingResponses.removeFirst()
        }
    }
}
