import LVBCore

/// What a stream's origin did, for `stats` lines.
public struct OriginStats: Sendable, Equatable {
    public var videoPackets = 0
    public var audioPackets = 0
    /// PLIs from full subscribers (keyframe requests).
    public var plisReceived = 0
    /// PLIs from keyframes-only subscribers, not acted on.
    public var plisIgnored = 0
    public var receiverReports = 0
    public var malformedRTCP = 0
    /// Feedback from a new full subscriber while `maxFullSubscribers` were subscribed, ignored.
    public var subscribersRefused = 0
}

/// The origin stage of one published stream, sans-IO on the node's loop: the
/// encoder's side of the feedback loop. Its subscribers and their feedback
/// are a `Downstream`, as a relay's are; the origin adds what only the
/// encoder's side does: a keyframe request goes to the encoder, each full
/// subscriber's loss drives a rate controller (the encoder follows the
/// lowest target), and it sends sender reports, whose echo gives each
/// subscriber's round trip. Packets go out through its `fanOut`.
public final class MediaOrigin<Peer: Hashable> {
    public let videoSSRC: UInt32
    public let audioSSRC: UInt32
    public let maxVideoKbps: Int
    /// The subscribers, and what they send back.
    public let downstream: Downstream<Peer>
    public var fanOut: FanOut<Peer> { downstream.fanOut }
    public var stats: OriginStats {
        var s = counts
        let d = downstream.stats
        (s.plisReceived, s.plisIgnored, s.receiverReports) = (d.plisReceived, d.plisIgnored, d.receiverReports)
        (s.malformedRTCP, s.subscribersRefused) = (d.malformedRTCP, d.subscribersRefused)
        return s
    }
    /// Full subscribers taken at most (a host's relay slots: the rest of the
    /// audience gets the stream through them); keyframes-only ones are not counted.
    public var maxFullSubscribers: Int {
        get { downstream.maxFullSubscribers }
        set { downstream.maxFullSubscribers = newValue }
    }
    /// A peer's feedback was refused: every full slot is taken.
    public var onRefused: ((Peer) -> Void)? {
        get { downstream.onRefused }
        set { downstream.onRefused = newValue }
    }

    private let clock: Clock
    private var counts = OriginStats()
    /// Each subscriber's rate control (previews' included, unused), and when it last got a sender report.
    private var rates: [Peer: RateController] = [:]
    private var lastSenderReport: [Peer: Instant] = [:]
    // Sender report bookkeeping (RFC 3550 §6.4.1).
    private var videoCount: (packets: UInt32, octets: UInt32, timestamp: UInt32) = (0, 0, 0)
    private var audioCount: (packets: UInt32, octets: UInt32, timestamp: UInt32) = (0, 0, 0)
    /// One numbering per medium whatever source feeds it (`beginSource`).
    private var videoSplicer = RTPSplicer(clockRate: MediaConstants.videoClockRate)
    private var audioSplicer = RTPSplicer(clockRate: MediaConstants.audioClockRate)

    public init(clock: Clock, videoSSRC: UInt32, audioSSRC: UInt32, maxVideoKbps: Int, useGOPCache: Bool = true) {
        self.clock = clock
        self.videoSSRC = videoSSRC
        self.audioSSRC = audioSSRC
        self.maxVideoKbps = maxVideoKbps
        downstream = Downstream(clock: clock, videoSSRC: videoSSRC, useGOPCache: useGOPCache,
                                budgetKbps: Int(MediaConstants.retransmitBudgetFactor * Double(maxVideoKbps)))
        downstream.keyframeAfterCacheStart = true
        downstream.onFresh = { [unowned self] peer in
            rates[peer] = RateController(maxKbps: maxVideoKbps)
            if lastSenderReport[peer] == nil { lastSenderReport[peer] = clock.now() }
        }
        downstream.onGone = { [unowned self] peer in
            rates[peer] = nil
            lastSenderReport[peer] = nil
        }
        downstream.onLoss = { [unowned self] peer, loss, now in
            guard var rate = rates[peer] else { return }
            rate.report(fractionLost: loss, at: now)
            rates[peer] = rate
            fanOut.setBudget(peer, kbps: MediaConstants.retransmitBudgetFactor * rate.targetKbps)
        }
        // RFC 3550 §6.4.1: RTT = A − LSR − DLSR, in 1/65536 s, A from our own wall clock.
        downstream.roundTrip = { [unowned self] block, _ in
            let a = NTPTime.middle32(NTPTime.from(self.clock.wallTime()))
            let rtt = a &- block.lastSenderReport &- block.delaySinceLastSenderReport
            return rtt < 65536 * 10 ? .nanoseconds(Int64(rtt) * 1_000_000_000 / 65536) : nil
        }
    }

    /// Sends one packet to one subscriber (the owner seals it into the session).
    public var send: ((Peer, MediaChannel, [UInt8]) -> Void)? {
        get { fanOut.send }
        set { fanOut.send = newValue }
    }

    /// Subscribers, keyframes-only ones included.
    public var subscriberCount: Int { fanOut.count }
    /// Subscribers that take keyframes only (previews).
    public var trickleCount: Int { fanOut.keyframesOnlyCount }
    /// Subscribers that take the whole stream.
    public var fullSubscriberCount: Int { downstream.fullCount }

    /// The video target: the lowest any full subscriber's rate control allows.
    public var targetVideoKbps: Int {
        downstream.fullSubscribers.compactMap { rates[$0].map { Int($0.targetKbps) } }.min() ?? maxVideoKbps
    }

    /// Mean loss fraction the full subscribers report, and the worst round-trip time.
    public var subscriberLoss: Double { downstream.meanLoss }
    public var subscriberRTT: Duration? { downstream.worstRoundTrip }
    /// The loss fraction `peer` last reported (before repair), if it subscribes.
    public func loss(of peer: Peer) -> Double? { downstream.loss(of: peer) }

    /// True once after a subscriber asked for a keyframe (PLI) or joined with
    /// nothing cached to start from; the encoder forces one on its next frame.
    public func takeKeyframeRequest() -> Bool { downstream.takeKeyframeRequest() }

    /// Every RTP packet published, as subscribers get it (`--egress` on the host).
    public var onPacket: ((RTPPacket) -> Void)?

    /// Another source feeds the stream from its next packet on (a co-host's
    /// page camera instead of its own encoder, or back): its packets are
    /// renumbered to follow on, so subscribers see one stream, whose next
    /// keyframe (a new source starts with one) they decode from.
    public func beginSource() {
        videoSplicer.splice()
        audioSplicer.splice()
    }

    /// Signs what this origin publishes (`MediaSeal`): set by the owner
    /// before the first packet; nil publishes unsealed (tests of the stages alone).
    public var sealer: StreamSealer?

    /// Publishes one encoded video frame.
    public func publishVideo(_ frame: EncodedMediaFrame) {
        var bytes: [[UInt8]] = []
        var sequences: [UInt16] = []
        bytes.reserveCapacity(frame.packets.count)
        sequences.reserveCapacity(frame.packets.count)
        let now = clock.now()
        var packets = frame.packets
        for i in packets.indices { videoSplicer.rewrite(&packets[i], now: now) }
        sealer?.seal(frame: &packets)
        for p in packets {
            onPacket?(p)
            bytes.append(p.serialized())
            sequences.append(p.sequenceNumber)
            videoCount.packets &+= 1
            videoCount.octets &+= UInt32(truncatingIfNeeded: p.payload.count)
            videoCount.timestamp = p.timestamp
        }
        counts.videoPackets += bytes.count
        fanOut.sendVideo(bytes, sequences: sequences, keyframe: frame.isKeyframe)
    }

    /// Publishes one audio packet.
    public func publishAudio(_ packet: RTPPacket) {
        var packet = packet
        audioSplicer.rewrite(&packet, now: clock.now())
        sealer?.seal(audio: &packet)
        onPacket?(packet)
        audioCount.packets &+= 1
        audioCount.octets &+= UInt32(truncatingIfNeeded: packet.payload.count)
        audioCount.timestamp = packet.timestamp
        counts.audioPackets += 1
        fanOut.sendAudio(packet.serialized())
    }

    /// RTCP from a peer the owner lets subscribe (an admitted member): `Downstream.receiveRTCP`.
    public func receiveRTCP(_ bytes: ArraySlice<UInt8>, from peer: Peer) { downstream.receiveRTCP(bytes, from: peer) }
    public func receiveRTCP(_ packets: [RTCPPacket], from peer: Peer) { downstream.receiveRTCP(packets, from: peer) }

    /// Subscribes `peer` before it sent any feedback: `Downstream.subscribe`.
    public func subscribe(_ peer: Peer) { downstream.subscribe(peer) }

    /// Forgets a subscriber (its session ended or it left).
    public func unsubscribe(_ peer: Peer) { downstream.unsubscribe(peer) }

    /// Runs timers (call every 100 ms): sender reports, silent subscribers dropped.
    public func tick() {
        let now = clock.now()
        downstream.expire(now: now)
        for (peer, last) in lastSenderReport where now - last >= MediaConstants.senderReportInterval {
            lastSenderReport[peer] = now
            fanOut.send(senderReports(), channel: .rtcp, to: peer)
        }
    }

    private func senderReports() -> [UInt8] {
        let ntp = NTPTime.from(clock.wallTime())
        var out: [RTCPPacket] = []
        for (ssrc, count) in [(videoSSRC, videoCount), (audioSSRC, audioCount)] where count.packets > 0 {
            if let sr = try? RTCPSenderReport(ssrc: ssrc, ntpTimestamp: ntp, rtpTimestamp: count.timestamp,
                                              packetCount: count.packets, octetCount: count.octets) {
                out.append(.senderReport(sr))
            }
        }
        return RTCPPacket.serializeCompound(out)
    }
}
