import LVBCore
import LVBCrypto

// Responder side of the handshakes. Before any Diffie-Hellman work an
// initiation must carry a valid mac1 (else: no answer at all) and, when the
// node is under load, a valid mac2 (else: a cookie reply, smaller than the
// initiation). Nothing sent here is larger than the datagram it answers.
extension TransportCore {
    /// IK or XX message 1.
    func consumeInitiation(_ m: HandshakeMessage, from source: PeerAddress) throws(TransportError) {
        guard config.acceptIncoming else { drop(\.droppedHandshake, from: source, "initiation: not accepting sessions"); return }
        let ik = m.type == .ikInitiation
        let checker = ik ? ownChecker : anonymousChecker
        guard checker.checkMAC1(m.raw) else { drop(\.droppedMAC1, from: source, "\(m.type) with a wrong mac1"); return }
        if isUnderLoad(), !checker.checkMAC2(m.raw, source: source) {
            let (nonce, sealed) = checker.makeReply(to: m.raw, source: source)
            transmit(Packet.cookieReply(receiver: m.senderIndex, nonce: nonce, sealed: sealed), to: source, unauthenticatedReply: true)
            stats.cookieRepliesSent += 1
            drop(\.droppedNeedsCookie, from: source, "\(m.type) without a valid mac2 under load; cookie reply sent")
            return
        }
        do {
            let hs = try NoiseHandshake(pattern: ik ? .IK : .XX, role: .responder, prologue: TransportConstants.prologue,
                                        localStatic: staticKey, random: random)
            let payload = try hs.readMessage(Array(m.noise))
            if ik {
                try respondIK(hs, payload: payload, to: m, from: source)
            } else {
                guard payload.count == MessageSize.xxInitiationPadding else { throw TransportError.malformed("XX padding") }
                try respondXX(hs, to: m, from: source)
            }
        } catch let e as TransportError {
            throw e
        } catch {
            throw .handshakeFailed("\(error)")
        }
    }

    private func respondIK(_ hs: NoiseHandshake, payload: [UInt8], to m: HandshakeMessage, from source: PeerAddress) throws {
        let (id, timestamp) = try HandshakePayload.parseInitiator(payload, remoteStatic: hs.remoteStaticKey)
        guard id != nodeID else { throw TransportError.handshakeFailed("initiation from our own identity") }
        if let last = latestTimestamps[id], timestamp <= last {
            drop(\.droppedReplayedInitiation, from: source, "IK initiation replayed (timestamp not newer)")
            return
        }
        guard let peer = peerForIncoming(id, source: source) else { return }
        let noise = try hs.writeMessage(payload: [])
        let keys = try hs.split()
        rememberTimestamp(timestamp, for: id)
        yieldSimultaneousOpen(of: peer, to: id)
        noticeReplacement(of: peer, newEndpoint: source)
        let index = newIndex()
        let kp = Keypair(send: keys.send, receive: keys.receive, created: clock.now(), isInitiator: false,
                         localIndex: index, remoteIndex: m.senderIndex)
        kp.handshakeHash = hs.handshakeHash
        indices[index] = .keypair(peer, kp)
        retire(peer.install(kp))
        roam(peer, to: source, now: clock.now())
        resumePunch(peer, after: source)
        var packet = Packet.handshake(type: .ikResponse, sender: index, receiver: m.senderIndex, noise: noise)
        peer.cookies.addMACs(&packet)
        transmit(packet, to: source, unauthenticatedReply: true)
        stats.handshakesCompleted += 1
    }

    private func respondXX(_ hs: NoiseHandshake, to m: HandshakeMessage, from source: PeerAddress) throws {
        let noise = try hs.writeMessage(payload: nodeID.publicKey)
        let index = newIndex()
        indices[index] = .pendingResponse(PendingResponse(handshake: hs, localIndex: index, remoteIndex: m.senderIndex, created: clock.now()))
        pendingResponses.append(index)
        if pendingResponses.count > TransportConstants.maxPendingResponses, let oldest = pendingResponses.popFirst() {
            indices[oldest] = nil
        }
        var packet = Packet.handshake(type: .xxResponse, sender: index, receiver: m.senderIndex, noise: noise)
        generator(for: nil).addMACs(&packet)
        transmit(packet, to: source, unauthenticatedReply: true)
    }

    /// XX message 3: the initiator reveals and proves its identity.
    func consumeFinal(_ m: HandshakeMessage, from source: PeerAddress) throws(TransportError) {
        guard case .pendingResponse(let pending)? = indices[m.receiverIndex] else {
            drop(\.droppedUnknownIndex, from: source, "XX final for unknown index \(m.receiverIndex)")
            return
        }
        guard ownChecker.checkMAC1(m.raw) else { drop(\.droppedMAC1, from: source, "XX final with a wrong mac1"); return }
        indices[m.receiverIndex] = nil
        pendingResponses.removeAll { $0 == m.receiverIndex }
        do {
            let payload = try pending.handshake.readMessage(Array(m.noise))
            let (id, timestamp) = try HandshakePayload.parseInitiator(payload, remoteStatic: pending.handshake.remoteStaticKey)
            guard id != nodeID else { throw TransportError.handshakeFailed("handshake with our own identity") }
            let keys = try pending.handshake.split()
            guard let peer = peerForIncoming(id, source: source) else { return }
            rememberTimestamp(max(timestamp, latestTimestamps[id] ?? timestamp), for: id)
            noticeReplacement(of: peer, newEndpoint: source)
            // Message 3 proves the initiator holds the keys: no confirmation wait.
            let kp = Keypair(send: keys.send, receive: keys.receive, created: clock.now(), isInitiator: false,
                             localIndex: pending.localIndex, remoteIndex: pending.remoteIndex)
            kp.handshakeHash = pending.handshake.handshakeHash
            indices[kp.localIndex] = .keypair(peer, kp)
            retire(peer.install(kp))
            retire(peer.confirmNext())
            roam(peer, to: source, now: clock.now())
            resumePunch(peer, after: source)
            stats.handshakesCompleted += 1
            if !flushQueue(peer) { sendKeepalive(peer) }
        } catch let e as TransportError {
            throw e
        } catch {
            throw .handshakeFailed("\(error)")
        }
    }

    /// A new session for an established peer from a different address: tell
    /// the old address, under the old keys, that it has been replaced (two
    /// processes share an identity; the newer one wins). A node that has
    /// merely moved never hears it; one that rekeyed gets it under keys it
    /// has already superseded and ignores it.
    /// A relay path is one more way to the same node, never another process:
    /// a handshake that comes over one, or replaces one, notices nothing
    /// (both sides dial direct and through a relay at once after an
    /// introduction, and one side's initiation may come late by either).
    private func noticeReplacement(of peer: Peer, newEndpoint: PeerAddress) {
        guard peer.established, peer.endpoint != newEndpoint, !RelayPath.isRelay(newEndpoint), !RelayPath.isRelay(peer.endpoint),
              let old = peer.current,
              let datagram = old.seal(channel: .control, payload: ControlMessage.bye(ControlMessage.ByeReason.replaced).bytes[...])
        else { return }
        transmit(datagram, to: peer.endpoint)
    }

    /// Both sides dialled at once (an introduction makes them), or rekeyed
    /// at once (keys made together age together): the node with the lower
    /// id drops its own pending initiation and takes the other's, so both
    /// end up under one set of keys. Otherwise each would send under the
    /// keys it initiated, its own never confirmed by the other's data: it
    /// would handshake again after `rekeyTimeout` and retire the keys the
    /// other still sends under (a burst of media lost), and the two sides'
    /// session bindings would differ. Two sides crossed so rekey together
    /// again, every `rekeyTimeout`: before rekeys yielded too, 14 of 40
    /// seeded pairs crossed at 20 % loss were still crossed 10 s later.
    private func yieldSimultaneousOpen(of peer: Peer, to id: NodeID) {
        guard let pending = peer.initiation, nodeID.publicKey.lexicographicallyPrecedes(id.publicKey) else { return }
        indices[pending.localIndex] = nil
        peer.initiation = nil
        peer.yieldedAt = clock.now()
        stats.simultaneousOpensYielded += 1
    }

    /// The peer record an authenticated incoming handshake attaches to.
    private func peerForIncoming(_ id: NodeID, source: PeerAddress) -> Peer? {
        if let p = peersByID[id] { return p }
        guard peersByID.count < TransportConstants.maxPeers else {
            drop(\.droppedHandshake, from: source, "handshake: peer table full (\(TransportConstants.maxPeers))")
            return nil
        }
        let p = Peer(id: id, endpoint: source, persistent: false, cookies: generator(for: id), created: clock.now())
        peersByID[id] = p
        return p
    }

    private func rememberTimestamp(_ t: TAI64N, for id: NodeID) {
        if latestTimestamps.count >= TransportConstants.maxRememberedTimestamps, latestTimestamps[id] == nil {
            // Forget the peers we have no session with; their replays can at
            // worst cost one handshake, never a session.
            latestTimestamps = latestTimestamps.filter { peersByID[$0.key] != nil }
        }
        latestTimestamps[id] = t
    }

    /// Call once per initiation whose mac1 is valid: true when it is over
    /// `underLoadThreshold` in the last second.
    func isUnderLoad() -> Bool {
        loadMeter.isOverThreshold(arrivalAt: clock.now(), threshold: config.underLoadThreshold)
    }
}
