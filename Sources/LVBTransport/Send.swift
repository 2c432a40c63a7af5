import LVBCore
import LVBCrypto

extension TransportCore {
    /// The largest payload `send` takes: a datagram's plaintext less the channel byte.
    public var maxPayload: Int { MessageSize.maxTransportPlaintext - 1 }

    /// Sends `payload` to `id` on `channel`. Queued (bounded) while a session
    /// is being set up; throws if the payload cannot fit one datagram or the
    /// peer is unknown.

    public func send(_ payload: [UInt8], channel: DataChannel, to id: NodeID) throws(TransportError) {
        guard payload.count + 1 <= MessageSize.maxTransportPlaintext else { throw .payloadTooLarge(payload.count) }
        guard let peer = peersByID[id] else { throw .noSession }
        if !sendNow(channel, payload[...], to: peer) {
            if peer.queue.count >= TransportConstants.maxQueuedPerPeer {
                peer.queue.removeFirst()
                stats.droppedQueueFull += 1
            }
            peer.queue.append((channel, payload))
            if peer.initiation == nil, !peer.awaitsConfirmation(now: clock.now()) { startInitiation(peer, firstAttempt: clock.now()) }
        }
    }

    /// Seals and sends under the current keys; false when there are none usable.
    @discardableResult
    func sendNow(_ channel: DataChannel?, _ payload: ArraySlice<UInt8>, to peer: Peer) -> Bool {
        let now = clock.now()
        guard let kp = peer.current, !kp.isExpired(now: now) else { return false }
        if let hold = peer.holdDirectUntil {
            if now >= hold {
                peer.holdDirectUntil = nil
            } else if !RelayPath.isRelay(peer.endpoint) {
                // We moved: a datagram to the peer's NAT from our new address
                // now would make it remap the peer's punch (`AddressChange`).
                stats.heldAfterMove += 1
                return true
            }
        }
        // Use of the session (`collectSessions`): anything but control
        // messages and introductions, which serve sessions (coordinating,
        // birthday punching); relaying does use them (`IntroductionRelay`).
        if let channel, channel != .control, channel != .introduce { use(peer, now: now) }
        guard let counter = kp.takeCounter() else { return false }
        transmit(count: Keypair.sealedCount(channel: channel, payload: payload), to: peer.endpoint) { out in
            kp.seal(counter: counter, channel: channel, payload: payload, into: out)
        }
        peer.lastSent = now
        if channel != nil { stats.messagesOut += 1 }
        // wireguard-go's "keep key fresh" on the send path.
        if kp.isInitiator, peer.initiation == nil,
           now - kp.created >= TransportConstants.rekeyAfterTime || kp.sendCounter >= TransportConstants.rekeyAfterMessages {
            startInitiation(peer, firstAttempt: now)
        }
        return true
    }

    /// Sends what waited for the session; true if anything was sent.
    func flushQueue(_ peer: Peer) -> Bool {
        var sent = false
        while let (channel, payload) = peer.queue.first, sendNow(channel, payload[...], to: peer) {
            peer.queue.removeFirst()
            sent = true
        }
        return sent
    }

    func sendKeepalive(_ peer: Peer) {
        sendNow(nil, [], to: peer)
    }

    func sendControl(_ message: ControlMessage, to peer: Peer) {
        sendNow(.control, message.bytes[...], to: peer)
    }

    /// Our hello, at the start of a session: resent (doubling gaps) until
    /// the peer's own arrives; a peer that sees ours again answers it.
    func sendHello(_ peer: Peer) {
        sendControl(.hello(config.hello), to: peer)
        guard !peer.helloReceived else { return }
        let gap = peer.helloResend.map { min($0.gap * 2, TransportConstants.helloRetryMax) } ?? TransportConstants.helloRetry
        peer.helloResend = (clock.now() + gap, gap)
    }

    /// Measures the round-trip time to `id` now: a ping whose pong brings an
    /// `.rtt` event. Keepalive pings only flow on idle sessions, so a layer
    /// that keeps a session busy (media) and needs the RTT asks for it.
    public func probeRoundTrip(to id: NodeID) {
        guard let peer = peersByID[id], peer.established, peer.current != nil else { return }
        sendPing(peer)
    }

    func sendPing(_ peer: Peer) {
        peer.pingNonce = random.uint64()
        peer.pingSentAt = clock.now()
        sendControl(.ping(peer.pingNonce), to: peer)
    }
}
