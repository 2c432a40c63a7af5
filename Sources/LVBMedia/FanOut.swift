import LVBCore

/// Which media channel a packet goes on.
public enum MediaChannel: Sendable { case rtp, rtcp }

/// What a fan-out stage did, for `stats` lines.
public struct FanOutStats: Sendable, Equatable {
    /// Bytes sent to subscribers: live packets, GOP bursts and retransmissions.
    public var bytesSent = 0
    public var retransmissions = 0
    public var nacksReceived = 0
    /// NACKed packets not resent because the subscriber's repair budget was spent.
    public var retransmitsRefused = 0
    public var gopBursts = 0
    /// New subscribers sent what they missed since the packet they named
    /// (a resume request) instead of the GOP cache.
    public var resumeBursts = 0
    /// Subscribers started at once, from the GOP cache or by a resume.
    public var startBursts: Int { gopBursts + resumeBursts }
    /// Keyframes sent to keyframes-only subscribers (one per subscriber per
    /// keyframe, the cached one they start from included).
    public var trickleKeyframes = 0
}

/// The fan-out stage of one stream, sans-IO: sends each packet to every
/// subscriber, keeps the send history (a NACK is answered with the same bytes,
/// within a per-subscriber budget) and the GOP cache (a new subscriber gets the
/// current GOP at once). A subscriber may take keyframes only (a trickle, to
/// preview the stream): it gets each keyframe and nothing else, and the cached
/// keyframe when it subscribes. It knows nothing of encoders, sender reports or
/// rate control, so the origin of a stream and a relay of it use it alike.
public final class FanOut<Peer: Hashable> {
    private struct Subscriber {
        var lastHeard: Instant
        /// Repair budget: a token bucket in bytes, refilled at this rate.
        var budgetKbps: Double
        var tokens: Double = 0
        var tokensAt: Instant
        /// Video packets sent and distinct sequence numbers NACKed since the
        /// last `takeRepairCounts`: loss before repair.
        var sentSinceReport = 0
        var nacked: Set<UInt16> = []
        /// Gets keyframes only: no delta frames, no audio.
        var keyframesOnly: Bool
    }

    public let useGOPCache: Bool
    /// Sends one packet to one subscriber (the owner seals it into the session).
    public var send: ((Peer, MediaChannel, [UInt8]) -> Void)?
    public private(set) var stats = FanOutStats()

    private var subscribers: [Peer: Subscriber] = [:]
    private var history = SendHistory()
    private var gop = GOPCache()
    /// When each peer last got the GOP cache, and the cached keyframe alone.
    private var lastBurst: [Peer: Instant] = [:]
    private var lastPreview: [Peer: Instant] = [:]
    private let defaultBudgetKbps: Double

    /// - Parameter budgetKbps: a subscriber's repair budget until the owner sets one.
    public init(useGOPCache: Bool = true, budgetKbps: Int) {
        self.useGOPCache = useGOPCache
        defaultBudgetKbps = Double(budgetKbps)
    }

    // The walks below run every tick, mostly over no subscribers at all (a
    // viewer relays to nobody): they return at once when empty, and use plain
    // loops, as a key path or a filter-and-map on this generic type costs a
    // metadata lookup (even the runtime's demangler) on every call.
    public var peers: [Peer] {
        guard !subscribers.isEmpty else { return [] }
        return Array(subscribers.keys)
    }
    public var count: Int { subscribers.count }
    /// Subscribers that take keyframes only.
    public var keyframesOnlyCount: Int {
        guard !subscribers.isEmpty else { return 0 }
        var n = 0
        for s in subscribers.values where s.keyframesOnly { n += 1 }
        return n
    }

    public func isKeyframesOnly(_ peer: Peer) -> Bool { subscribers[peer]?.keyframesOnly ?? false }

    /// Adds `peer` (or notes that it is still there) in the mode it asks for.
    ///
    /// A new full subscriber gets the cached GOP at once, at most once per
    /// `gopBurstInterval` so that leaving and subscribing again cannot turn the
    /// cache into an amplifier; a keyframes-only subscriber that becomes full
    /// (a viewer switching to this room) is treated the same, and within the
    /// interval gets the burst from its repair budget if that holds it (so
    /// toggling costs no more than NACKs could). A new keyframes-only subscriber gets the cached
    /// keyframe alone (at most once per `gopBurstInterval` too), which neither
    /// uses up its GOP burst nor asks for a keyframe: a preview must not make
    /// the encoder spend keyframes for everyone. A full subscriber that asks
    /// for keyframes only gets the cached keyframe under the same rule.
    /// A new full subscriber that says which packet it decoded last
    /// (`resumeAfter`: it was watching through a parent that died) gets the
    /// packets after it from the history instead of the GOP, under the same
    /// once-per-interval rule, when they are at most
    /// `MediaConstants.maxResumePackets`: its decoder goes on where it
    /// stopped, nothing is skipped, and a recording has no hole.
    /// Returns true when the peer became a full subscriber and got no picture
    /// to start from: the origin should make a keyframe.
    @discardableResult
    public func subscribe(_ peer: Peer, now: Instant, keyframesOnly: Bool = false, resumeAfter: UInt16? = nil) -> Bool {
        if var s = subscribers[peer] {
            let (upgrade, downgrade) = (s.keyframesOnly && !keyframesOnly, !s.keyframesOnly && keyframesOnly)
            s.lastHeard = now
            s.keyframesOnly = keyframesOnly
            subscribers[peer] = s
            if downgrade { startPreview(peer, now: now) }
            return upgrade ? startFull(peer, now: now, upgrade: true) : false
        }
        subscribers[peer] = Subscriber(lastHeard: now, budgetKbps: defaultBudgetKbps, tokensAt: now,
                                       keyframesOnly: keyframesOnly)
        guard keyframesOnly else { return startFull(peer, now: now, upgrade: false, resumeAfter: resumeAfter) }
        startPreview(peer, now: now)
        return false
    }

    /// Sends the cached keyframe to a peer that just became keyframes-only (a
    /// new preview, or a viewer that switched away and keeps this room ready),
    /// at most once per `gopBurstInterval`.
    private func startPreview(_ peer: Peer, now: Instant) {
        lastPreview = lastPreview.filter { now - $0.value < MediaConstants.gopBurstInterval }
        guard useGOPCache, lastPreview[peer] == nil, gop.isComplete, gop.keyframePackets > 0, let send else { return }
        lastPreview[peer] = now
        stats.trickleKeyframes += 1
        burst(gop.keyframe, to: peer, send)
    }

    /// Sends `packets` to `peer` at once (a GOP, a keyframe, what it missed).
    private func burst(_ packets: some Sequence<[UInt8]>, to peer: Peer, _ send: (Peer, MediaChannel, [UInt8]) -> Void) {
        for b in packets {
            send(peer, .rtp, b)
            stats.bytesSent += b.count
        }
    }

    /// Sends the GOP cache to a peer that just became a full subscriber, if
    /// its burst interval (or, for an upgrade, its repair budget) allows; true
    /// when it has nothing to start from.
    private func startFull(_ peer: Peer, now: Instant, upgrade: Bool, resumeAfter: UInt16? = nil) -> Bool {
        lastBurst = lastBurst.filter { now - $0.value < MediaConstants.gopBurstInterval }
        guard useGOPCache else { return false }
        if let after = resumeAfter, lastBurst[peer] == nil, let send,
           let missed = history.packets(after: after, limit: MediaConstants.maxResumePackets) {
            lastBurst[peer] = now
            stats.resumeBursts += 1
            burst(missed, to: peer, send)
            return false
        }
        if gop.isComplete, !gop.packets.isEmpty, let send {
            var allowed = lastBurst[peer] == nil
            if !allowed, upgrade, var s = subscribers[peer] {
                refill(&s, now: now)
                if s.tokens >= Double(gop.bytes) {
                    s.tokens -= Double(gop.bytes)
                    allowed = true
                }
                subscribers[peer] = s
            }
            if allowed {
                lastBurst[peer] = now
                stats.gopBursts += 1
                burst(gop.packets, to: peer, send)
                return false
            }
        }
        // Nothing cached (an over-long GOP, no picture yet): start a GOP now.
        return true
    }

    /// Forgets `peer` (its session ended, it left, or it went silent).
    public func unsubscribe(_ peer: Peer) { subscribers[peer] = nil }

    /// The repair budget of `peer`: a multiple of what it is sent.
    public func setBudget(_ peer: Peer, kbps: Double) { subscribers[peer]?.budgetKbps = kbps }
    /// Back to the budget every subscriber starts with.
    public func resetBudget(_ peer: Peer) { setBudget(peer, kbps: defaultBudgetKbps) }

    /// Forgets relayed video packets that were not the origin's (their seal
    /// failed): NACKs and resumes no longer get them, and a GOP holding one
    /// waits for the next keyframe.
    public func forgetVideo(_ sequences: [UInt16]) {
        for s in sequences { history.remove(s) }
        if useGOPCache, gop.holds(any: Set(sequences)) { gop.clear() }
    }

    /// Sends one video frame's packets (`sequences` are their RTP sequence
    /// numbers): a keyframe to every subscriber, a delta frame to full ones.
    public func sendVideo(_ packets: [[UInt8]], sequences: [UInt16], keyframe: Bool) {
        for (s, b) in zip(sequences, packets) { history.store(s, b) }
        if useGOPCache { gop.add(packets, keyframe: keyframe) }
        fanOut(packets, keyframe: keyframe)
        for (peer, s) in subscribers where keyframe || !s.keyframesOnly {
            subscribers[peer]?.sentSinceReport += packets.count
        }
    }

    /// Forwards one video packet of a stream it relays, as it arrives (packets
    /// come one by one, in any order): to full subscribers, and to
    /// keyframes-only ones too when `keyframe` (it belongs to a keyframe, as
    /// far as the relay knows). The history keeps it for NACKs; the GOP cache
    /// inserts it in sequence order, and `startsKeyframe` starts a new GOP —
    /// the keyframe's packets that came before their start reach
    /// keyframes-only subscribers then.
    public func forwardVideo(_ packet: [UInt8], sequence: UInt16, timestamp: UInt32, keyframe: Bool, startsKeyframe: Bool) {
        history.store(sequence, packet)
        var early: [[UInt8]] = []
        if useGOPCache { early = gop.insert(packet, sequence: sequence, timestamp: timestamp, startsKeyframe: startsKeyframe) }
        guard let send else { return }
        // Walks the table by index and counts in place: no copy of it per packet.
        var i = subscribers.startIndex
        while i != subscribers.endIndex {
            defer { subscribers.formIndex(after: &i) }
            let (peer, s) = subscribers[i]
            var count = 1
            if s.keyframesOnly {
                guard keyframe || startsKeyframe else { continue }
                if startsKeyframe {
                    stats.trickleKeyframes += 1
                    for b in early {
                        send(peer, .rtp, b)
                        stats.bytesSent += b.count
                    }
                    count += early.count
                }
            }
            send(peer, .rtp, packet)
            stats.bytesSent += packet.count
            subscribers.values[i].sentSinceReport += count
        }
    }

    /// The relayed stream's video was replaced (a new SSRC): the history and
    /// the GOP cache hold the old one's packets.
    public func resetVideo() {
        history = SendHistory()
        gop.clear()
    }

    /// Sends one audio packet to full subscribers (audio is never
    /// retransmitted: FEC and concealment repair it).
    public func sendAudio(_ packet: [UInt8]) { fanOut([packet], keyframe: false) }

    /// Sends one packet to one subscriber only (RTCP for it, such as a sender report).
    public func send(_ bytes: [UInt8], channel: MediaChannel, to peer: Peer) {
        guard subscribers[peer] != nil else { return }
        send?(peer, channel, bytes)
    }

    /// Sends `packets` to full subscribers, and to keyframes-only ones too when they are a keyframe.
    private func fanOut(_ packets: [[UInt8]], keyframe: Bool) {
        guard let send, !subscribers.isEmpty else { return }
        let size = packets.reduce(0) { $0 + $1.count }
        for (peer, s) in subscribers where keyframe || !s.keyframesOnly {
            for b in packets { send(peer, .rtp, b) }
            stats.bytesSent += size
            if s.keyframesOnly { stats.trickleKeyframes += 1 }
        }
    }

    /// A generic NACK (RFC 4585 §6.2.1) from `peer`: resends what the history
    /// still holds while the peer's budget allows.
    public func nack(_ sequences: [UInt16], from peer: Peer, now: Instant) {
        guard var s = subscribers[peer], let send else { return }
        stats.nacksReceived += 1
        if s.nacked.count < MediaConstants.maxTrackedNacks { s.nacked.formUnion(sequences) }
        refill(&s, now: now)
        for seq in sequences {
            guard let b = history.packet(seq) else { continue }
            guard s.tokens >= Double(b.count) else {
                stats.retransmitsRefused += 1
                continue
            }
            s.tokens -= Double(b.count)
            send(peer, .rtp, b)
            stats.retransmissions += 1
            stats.bytesSent += b.count
        }
        subscribers[peer] = s
    }

    /// The repair budget: a token bucket in bytes, one second deep.
    private func refill(_ s: inout Subscriber, now: Instant) {
        let perSecond = s.budgetKbps * 125
        s.tokens = min(perSecond, s.tokens + perSecond * (now - s.tokensAt).seconds)
        s.tokensAt = now
    }

    /// Video packets sent to `peer` and distinct ones it NACKed since the last
    /// call: the loss on its link before repair (retransmissions on the same
    /// SSRC hide it from the receiver report's fraction lost).
    public func takeRepairCounts(_ peer: Peer) -> (sent: Int, nacked: Int) {
        guard var s = subscribers[peer] else { return (0, 0) }
        defer {
            s.sentSinceReport = 0
            s.nacked.removeAll(keepingCapacity: true)
            subscribers[peer] = s
        }
        return (s.sentSinceReport, s.nacked.count)
    }

    /// Drops subscribers silent for `subscriberTimeout`; returns them.
    public func expire(now: Instant) -> [Peer] {
        guard !subscribers.isEmpty else { return [] }
        var gone: [Peer] = []
        for (peer, s) in subscribers where now - s.lastHeard >= MediaConstants.subscriberTimeout { gone.append(peer) }
        for p in gone { subscribers[p] = nil }
        return gone
    }
}
