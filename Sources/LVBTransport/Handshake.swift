import LVBCore
import LVBCrypto

// Handshake flows (man/lvbnode-protocol.7 §HANDSHAKE), paired as in
// wireguard-go's noise-protocol.go: createInitiation / consumeInitiation,
// createResponse / consumeResponse, plus XX's third message.
extension TransportCore {
    // MARK: Initiator

    /// Sends a fresh initiation to `peer` (new ephemeral key and index each
    /// try); `only`: to these addresses alone (probing a direct path while
    /// the session runs over a relay).
    func startInitiation(_ peer: Peer, firstAttempt: Instant, cookieRetried: Bool = false, only: [PeerAddress]? = nil, lapses: Bool = false) {
        if let old = peer.initiation { indices[old.localIndex] = nil }
        peer.initiation = nil
        let pattern: NoisePattern = peer.id == nil ? .XX : .IK
        let now = clock.now()
        do {
            let hs = try NoiseHandshake(pattern: pattern, role: .initiator, prologue: TransportConstants.prologue,
                                        localStatic: staticKey, remoteStatic: peer.id?.noiseStaticKey, random: random)
            let payload = pattern == .IK
                ? HandshakePayload.initiator(id: nodeID, timestamp: nextTimestamp())
                : [UInt8](repeating: 0, count: MessageSize.xxInitiationPadding)
            let noise = try hs.writeMessage(payload: payload)
            let index = newIndex()
            var packet = Packet.handshake(type: pattern == .IK ? .ikInitiation : .xxInitiation, sender: index, receiver: nil, noise: noise)
            peer.cookies.addMACs(&packet)
            var wait = TransportConstants.rekeyTimeout + jitter(TransportConstants.rekeyTimeoutJitter)
            // A punch's first try only opens our own NAT (hop-limited); the
            // real ones follow from punchRetry on, when the peer's NAT has opened too.
            var hopLimit: Int?
            if let n = peer.punchAttempts {
                wait = min(wait, TransportConstants.punchRetry * (1 << min(n, 8)))
                peer.punchAttempts = n + 1
                if n == 0 {
                    hopLimit = TransportConstants.punchOpenerHops
                    peer.openerSentAt = now
                }
            } else if peer.current == nil {
                // No session yet (a dial, a redial after a lost session):
                // a lost initiation or response costs firstRetry, then twice
                // the time tried so far, not rekeyTimeout (a join waited 5 or
                // 10 s for its first picture at 10 % loss).
                let fast = min(TransportConstants.rekeyTimeout, max(TransportConstants.firstRetry, now - firstAttempt))
                wait = min(wait, fast + jitter(fast / 8))
            }
            peer.initiation = PendingInitiation(handshake: hs, pattern: pattern, localIndex: index, firstAttempt: firstAttempt,
                                                sentAt: now, retryAt: now + wait, cookieRetried: cookieRetried,
                                                lapses: lapses && only != nil && peer.current != nil, only: only)
            indices[index] = .initiation(peer)
            if let only {
                for address in only { transmit(packet, to: address) }
            } else {
                // Relay paths are not NATed: they get the real thing at once.
                for address in [peer.endpoint] + peer.candidates.filter({ $0 != peer.endpoint }) {
                    transmit(packet, to: address, hopLimit: RelayPath.isRelay(address) ? nil : hopLimit)
                }
            }
            peer.lastSent = now
        } catch {
            log.error("cannot create initiation: \(error)")
        }
    }

    /// IK or XX message 2 arrived for one of our initiations.
    func consumeResponse(_ m: HandshakeMessage, from source: PeerAddress) throws(TransportError) {
        guard case .initiation(let peer)? = indices[m.receiverIndex], let pending = peer.initiation,
              pending.localIndex == m.receiverIndex,
              (m.type == .ikResponse) == (pending.pattern == .IK)
        else { drop(\.droppedUnknownIndex, from: source, "\(m.type) for unknown index \(m.receiverIndex)"); return }
        let checker = pending.pattern == .IK ? ownChecker : anonymousChecker
        guard checker.checkMAC1(m.raw) else { drop(\.droppedMAC1, from: source, "\(m.type) with a wrong mac1"); return }
        let payload: [UInt8]
        do { payload = try pending.handshake.readMessage(Array(m.noise)) } catch {
            // The pending state is spent; the retry timer starts a fresh one.
            throw .handshakeFailed("\(error)")
        }
        var target = peer
        if pending.pattern == .XX {
            let id = try HandshakePayload.parseResponder(payload, remoteStatic: pending.handshake.remoteStaticKey)
            guard id != nodeID else {
                emit(.connectFailed(peer.endpoint, id))
                remove(peer, reason: .local)
                throw .handshakeFailed("dialled our own identity")
            }
            target = adopt(peer, as: id)
            let noise3: [UInt8]
            do { noise3 = try pending.handshake.writeMessage(payload: HandshakePayload.initiator(id: nodeID, timestamp: nextTimestamp())) } catch {
                throw .handshakeFailed("\(error)")
            }
            var packet = Packet.handshake(type: .xxFinal, sender: nil, receiver: m.senderIndex, noise: noise3)
            target.cookies.addMACs(&packet)
            transmit(packet, to: source)
        } else {
            guard payload.isEmpty else { throw .malformed("IK response payload must be empty") }
        }
        let keys: (send: [UInt8], receive: [UInt8])
        do { keys = try pending.handshake.split() } catch { throw .handshakeFailed("\(error)") }
        let kp = Keypair(send: keys.send, receive: keys.receive, created: clock.now(), isInitiator: true,
                         localIndex: pending.localIndex, remoteIndex: m.senderIndex)
        kp.handshakeHash = pending.handshake.handshakeHash
        target.initiation = nil
        roam(target, to: source, now: clock.now())
        resumePunch(target, after: source)
        target.candidates = []
        indices[kp.localIndex] = .keypair(target, kp)
        let rekey = target.established
        retire(target.install(kp))
        stats.handshakesCompleted += 1
        // An IK response authenticated the responder, which holds the keys
        // already: the session is ours to use now (as in WireGuard, only the
        // responder waits for key confirmation, our first packet). An XX
        // responder has keys only once our message 3 arrives, which what we
        // send next could overtake; that session waits for its first packet.
        if rekey || pending.pattern == .XX {
            if !flushQueue(target) { sendKeepalive(target) }
            if rekey, let id = target.id { emit(.rekeyed(id)) }
        } else if let id = target.id {
            target.lastReceived = clock.now()
            target.established = true
            emit(.established(PeerInfo(id: id, endpoint: source, established: true, rtt: nil, keyAge: .zero,
                                       initiatedCurrentKeys: true)))
            sendHello(target)
            sendPing(target)
            _ = flushQueue(target)
        }
    }

    /// Gives an anonymous (XX-dialled) peer its identity, merging into an
    /// existing peer of that identity if there is one.
    private func adopt(_ peer: Peer, as id: NodeID) -> Peer {
        anonymousPeers.removeAll { $0 === peer }
        if let existing = peersByID[id], existing !== peer {
            existing.initiation = peer.initiation
            existing.queue.append(contentsOf: peer.queue)
            if let i = peer.initiation { indices[i.localIndex] = .initiation(existing) }
            peer.initiation = nil
            forget(peer)
            return existing
        }
        peer.id = id
        peer.cookies = generator(for: id)
        peersByID[id] = peer
        return peer
    }

    func consumeCookieReply(_ m: CookieReplyMessage, from source: PeerAddress) {
        guard case .initiation(let peer)? = indices[m.receiverIndex], let pending = peer.initiation else {
            drop(\.droppedUnknownIndex, from: source, "cookie reply for unknown index \(m.receiverIndex)")
            return
        }
        guard !pending.cookieRetried else {
            drop(\.droppedHandshake, from: source, "second cookie reply to one initiation")
            return
        }
        guard peer.cookies.consumeReply(nonce: m.nonce, sealed: m.sealed) else {
            drop(\.droppedHandshake, from: source, "cookie reply that does not decrypt")
            return
        }
        // Resend at once with mac2 rather than after the retry timer: an honest
        // joiner of a busy host pays one round trip, not rekeyTimeout. Once per
        // initiation, so forged or replayed replies cannot make us chatter.
        startInitiation(peer, firstAttempt: pending.firstAttempt, cookieRetried: true, only: pending.lapses ? [source] : nil, lapses: pending.lapses)
    }

    /// A random duration in [0, upTo): spreads retries that started together.
    private func jitter(_ upTo: Duration) -> Duration {
        .nanoseconds(Int64(random.unit() * Double(upTo.nanosecondsClamped)))
    }

    func nextTimestamp() -> TAI64N {
        var ts = TAI64N(clock.wallTime())
        if ts <= lastTimestampSent { ts = lastTimestampSent.successor }
        lastTimestampSent = ts
        return ts
    }
}
