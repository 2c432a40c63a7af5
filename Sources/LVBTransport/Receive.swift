import LVBCore
import LVBCrypto

extension TransportCore {
    /// Feeds one datagram from the network. Anything malformed, forged,
    /// replayed or stale is counted in `stats` and dropped; nothing here throws.
    public func receive(_ datagram: consuming [UInt8], from source: PeerAddress) {
        stats.datagramsIn += 1
        stats.bytesIn += datagram.count
        let packet: Packet
        do { packet = try Packet.parse(datagram[...]) } catch {
            stats.droppedMalformed += 1
            stats.unauthenticatedBytesIn += datagram.count
            log.debug("dropped datagram from \(source): \(error)")
            return
        }
        switch packet {
        case .transport(let t):
            receiveTransport(t, datagram: &datagram, from: source)
        case .cookieReply(let c):
            stats.unauthenticatedBytesIn += datagram.count
            consumeCookieReply(c)
        case .handshake(let h):
            stats.unauthenticatedBytesIn += datagram.count
            do {
                switch h.type {
                case .ikInitiation, .xxInitiation: try consumeInitiation(h, from: source)
                case .ikResponse, .xxResponse: try consumeResponse(h, from: source)
                case .xxFinal: try consumeFinal(h, from: source)
                case .cookieReply, .transport: break
                }
            } catch {
                stats.droppedHandshake += 1
                log.debug("handshake from \(source) rejected: \(error)")
            }
        }
    }

    private func receiveTransport(_ t: TransportPacket, datagram buffer: inout [UInt8], from source: PeerAddress) {
        guard case .keypair(let peer, let kp)? = indices[t.receiverIndex] else {
            stats.droppedUnknownIndex += 1
            stats.unauthenticatedBytesIn += buffer.count
            return
        }
        let now = clock.now()
        guard !kp.isExpired(now: now) else { stats.droppedExpired += 1; return }
        let range: Range<Int>
        switch kp.open(t, in: &buffer) {
        case .badTag:
            stats.droppedDecrypt += 1
            stats.unauthenticatedBytesIn += buffer.count
            return
        case .replayed:
            stats.droppedReplay += 1
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
        peer.endpoint = source
        if !peer.established, let id = peer.id {
            peer.established = true
            emit(.established(PeerInfo(id: id, endpoint: source, established: true, rtt: nil, keyAge: .zero,
                                       initiatedCurrentKeys: peer.current?.isInitiator ?? false)))
            sendControl(.hello(config.hello), to: peer)
            sendPing(peer)
            _ = flushQueue(peer)
        }
        guard !range.isEmpty else { stats.keepalivesIn += 1; return }
        guard let channel = DataChannel(rawValue: buffer[range.lowerBound]) else { stats.droppedMalformed += 1; return }
        let payload = buffer[(range.lowerBound + 1)..<range.upperBound]
        stats.messagesIn += 1
        if channel == .control {
            handleControl(payload, from: peer, under: kp)
        } else if let id = peer.id {
            emit(.message(id, channel, payload))
        }
    }

    private func handleControl(_ payload: ArraySlice<UInt8>, from peer: Peer, under keys: Keypair) {
        guard let id = peer.id else { return }
        let message: ControlMessage
        do { message = try ControlMessage.parse(payload) } catch {
            stats.droppedMalformed += 1
            return
        }
        switch message {
        case .hello(let h):
            emit(.hello(id, h))
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
                // or move, not another process. Ignore.
                guard keys === peer.current else { return }
                remove(peer, reason: .replaced)
            } else {
                remove(peer, reason: .bye)
            }
        }
    }
}
