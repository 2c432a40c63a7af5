import LVBCore
import LVBCrypto

extension TransportCore {
    /// Feeds one datagram from the network. Anything malformed, forged,
    /// replayed or stale is counted in `stats` and dropped; nothing here throws.
    public func receive(_ datagram: consuming [UInt8], from source: PeerAddress) {
        var buffer = datagram
        receive(reusing: &buffer, from: source)
    }

    /// `receive(_:from:)` for a driver that keeps one buffer for every
    /// datagram: a transport packet is opened in place in `datagram`, whose
    /// storage the caller may fill again afterwards.
    func receive(reusing datagram: inout [UInt8], from source: PeerAddress) {
        if config.inboundLoss > 0, random.unit() < config.inboundLoss {
            stats.droppedInbound += 1
            return
        }
        stats.datagramsIn += 1
        stats.bytesIn += datagram.count
        if RelayPath.isRelay(source), let via = relayVia(source), isRendezvous(via) { stats.bytesInViaRendezvous += datagram.count }
        if let sideChannel {
            switch sideChannel(datagram[...], source) {
            case .notMine: break
            case .consumed:
                stats.sideChannelIn += 1
                stats.unauthenticatedBytesIn += datagram.count
                return
            case .reply(let answer):
                stats.sideChannelIn += 1
                stats.unauthenticatedBytesIn += datagram.count
                transmit(answer, to: source, unauthenticatedReply: true)
                return
            }
        }
        let packet: Packet
        do { packet = try Packet.parse(datagram[...]) } catch {
            stats.unauthenticatedBytesIn += datagram.count
            drop(\.droppedMalformed, from: source, "malformed: \(error)")
            return
        }
        switch packet {
        case .transport(let t):
            receiveTransport(t, datagram: &datagram, from: source)
        case .cookieReply(let c):
            stats.unauthenticatedBytesIn += datagram.count
            consumeCookieReply(c, from: source)
        case .unknownSession(let index):
            stats.unauthenticatedBytesIn += datagram.count
            consumeUnknownSession(index, from: source)
        case .handshake(let h):
            stats.unauthenticatedBytesIn += datagram.count
            do {
                switch h.type {
                case .ikInitiation, .xxInitiation: try consumeInitiation(h, from: source)
                case .ikResponse, .xxResponse: try consumeResponse(h, from: source)
                case .xxFinal: try consumeFinal(h, from: source)
                case .cookieReply, .transport, .unknownSession: break
                }
            } catch {
                drop(\.droppedHandshake, from: source, "handshake rejected: \(error)")
            }
        }
    }

    private func receiveTransport(_ t: TransportPacket, datagram buffer: inout [UInt8], from source: PeerAddress) {
        guard case .keypair(let peer, let kp)? = indices[t.receiverIndex] else {
            stats.unauthenticatedBytesIn += buffer.count
            drop(\.droppedUnknownIndex, from: source, "transport packet for unknown index \(t.receiverIndex)")
            answerUnknownIndex(t.receiverIndex, to: source)
            return
        }
        let now = clock.now()
        guard !kp.isExpired(now: now) else { drop(\.droppedExpired, from: source, "transport packet under expired keys"); return }
        let range: Range<Int>
        switch kp.open(t, in: &buffer) {
        case .badTag:
            stats.unauthenticatedBytesIn += buffer.count
            drop(\.droppedDecrypt, from: source, "transport packet failed authentication")
            return
        case .replayed:
            drop(\.droppedReplay, from: source, "transport packet replayed or too old (counter \(t.counter))")
            return
        case .opened(let r):
            range = r
        }
        // Authenticated from here on.
        if kp === peer.next {
            retire(peer.confirmNext())
            if peer.established, let id = peer.id { emit(.rekeyed(id)) }
            if !flushQueue(peer) { sendKeepalive(peer) }
        }
        kp.receivedAny = true
        peer.lastReceived = now
        if RelayPath.isRelay(source) { peer.relayedBytesIn &+= buffer.count }
        roam(peer, to: source, now: now)
        if !peer.established, let id = peer.id {
            peer.established = true
            emit(.established(PeerInfo(id: id, endpoint: SparePath.outside(peer.endpoint), established: true, rtt: nil, keyAge: .zero,
                                       initiatedCurrentKeys: peer.current?.isInitiator ?? false)))
            sendHello(peer)
            sendPing(peer)
            _ = flushQueue(peer)
        }
        guard !range.isEmpty else { stats.keepalivesIn += 1; return }
        guard let channel = DataChannel(rawValue: buffer[range.lowerBound]) else {
            drop(\.droppedMalformed, from: source, "unknown channel \(buffer[range.lowerBound])")
            return
        }
        let payload = buffer[(range.lowerBound + 1)..<range.upperBound]
        stats.messagesIn += 1
        // A peer that sends more than control messages uses the session.
        if channel != .control { peer.peerReleased = false }
        if channel == .control {
            handleControl(payload, from: peer, under: kp)
        } else if channel == .introduce {
            handleIntroduce(payload, from: peer)
        } else if let id = peer.id {
            emit(.message(id, channel, payload))
        }
    }

    private func handleControl(_ payload: ArraySlice<UInt8>, from peer: Peer, under keys: Keypair) {
        guard let id = peer.id else { return }
        let message: ControlMessage
        do { message = try ControlMessage.parse(payload) } catch {
            drop(\.droppedMalformed, from: peer.endpoint, "control message: \(error)")
            return
        }
        switch message {
        case .hello(let h):
            guard !peer.helloReceived else {
                // Another copy: the peer is still resending, so ours never
                // arrived. Answer it, at most once per `helloRetryMax` (an
                // answer that crosses a late hello is a copy to the other
                // side too, and answers must not answer each other for ever).
                // Reported once per session.
                let now = clock.now()
                if peer.helloAnswered.map({ now - $0 >= TransportConstants.helloRetryMax }) ?? true {
                    peer.helloAnswered = now
                    sendControl(.hello(config.hello), to: peer)
                }
                return
            }
            peer.helloReceived = true
            peer.helloResend = nil
            peer.role = h.role
            emit(.hello(id, h))
            renewRelayedPairs(via: id)
            tellOwnAddresses(to: id, role: h.role)
        case .ping(let nonce):
            sendControl(.pong(nonce), to: peer)
        case .pong(let nonce):
            guard let sent = peer.pingSentAt, nonce == peer.pingNonce else { return }
            let rtt = clock.now() - sent
            peer.rtt = rtt
            peer.pingSentAt = nil
            emit(.rtt(id, rtt))
        case .bye(let reason):
            if reason == ControlMessage.ByeReason.replaced {
                // Under keys we have since replaced ourselves: our own rekey
                // or move, not another process. Ignore. So too while our own
                // handshake with the peer is under way: the newer session it
                // saw from another address is then most likely ours (both
                // sides dialled, and we are seen at one address for what we
                // start and at another for what they start, as behind a
                // relay or a flow-mapping NAT). A real second process is
                // still told apart by the room's signed joins (their instance).
                // Our initiation withdrawn for theirs (both dialled) counts
                // as under way for `rekeyTimeout` after.
                let yieldedLately = peer.yieldedAt.map { clock.now() - $0 < TransportConstants.rekeyTimeout } ?? false
                guard keys === peer.current, peer.initiation == nil, !yieldedLately else { return }
                remove(peer, reason: .replaced)
            } else if reason == ControlMessage.ByeReason.idle {
                idleBye(from: peer)
            } else {
                remove(peer, reason: .bye)
            }
        case .idle(let released):
            peerReleased(peer, released)
        }
    }
}
