import LVBCore
import Logging

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
/// encoder's side of the feedback loop. Packets go out through its `fanOut`;
/// it turns subscribers' receiver feedback into keyframe requests (PLI, a
/// subscriber with nothing to start from) and a target bitrate per subscriber
/// (the encoder follows the lowest), measures round trips, and sends sender
/// reports. A peer subscribes by sending receiver feedback (RR, NACK or PLI);
/// it is dropped after `subscriberTimeout` without any. Feedback that carries
/// the APP keyframes-only request (`RTCPApp.keyframesOnly`) subscribes it to
/// keyframes only (a preview); feedback without it, to the whole stream. A
/// keyframes-only subscriber's PLIs are ignored and its reports feed neither
/// rate control nor `subscriberLoss`: its sequence numbers have gaps by design.
public final class MediaOrigin<Peer: Hashable> {
    private struct Subscriber {
        var rate: RateController
        var lastSenderReport: Instant
        var lossFraction = 0.0
        var rtt: Duration?
        var keyframesOnly = false
    }

    public let videoSSRC: UInt32
    public let audioSSRC: UInt32
    public let maxVideoKbps: Int
    public let fanOut: FanOut<Peer>
    public private(set) var stats = OriginStats()
    /// Full subscribers taken at most (a host's relay slots: the rest of the
    /// audience gets the stream through them); keyframes-only ones are not counted.
    public var maxFullSubscribers = Int.max
    /// A peer's feedback was refused: every full slot is taken.
    public var onRefused: ((Peer) -> Void)?

    private let clock: Clock
    private let log = Log.logger("media")
    private var subscribers: [Peer: Subscriber] = [:]
    private var keyframeWanted = false
    private var lastKeyframeRequest: Instant?
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
        fanOut = FanOut(useGOPCache: useGOPCache,
                        budgetKbps: Int(MediaConstants.retransmitBudgetFactor * Double(maxVideoKbps)))
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
    public var fullSubscriberCount: Int { fanOut.count - fanOut.keyframesOnlyCount }

    /// The video target: the lowest any full subscriber's rate control allows.
    public var targetVideoKbps: Int {
        subscribers.values.filter { !$0.keyframesOnly }.map { Int($0.rate.targetKbps) }.min() ?? maxVideoKbps
    }

    /// Mean loss fraction the full subscribers report, and the worst round-trip time.
    public var subscriberLoss: Double {
        let full = subscribers.values.filter { !$0.keyframesOnly }
        return full.isEmpty ? 0 : full.reduce(0) { $0 + $1.lossFraction } / Double(full.count)
    }
    public var subscriberRTT: Duration? { subscribers.values.compactMap(\.rtt).max() }
    /// The loss fraction `peer` last reported (before repair), if it subscribes.
    public func loss(of peer: Peer) -> Double? { subscribers[peer]?.lossFraction }

    /// True once after a subscriber asked for a keyframe (PLI) or joined with
    /// nothing cached to start from; the encoder forces one on its next frame.
    public func takeKeyframeRequest() -> Bool {
        defer { keyframeWanted = false }
        return keyframeWanted
    }

    /// Another source feeds the stream from its next packet on (a co-host's
    /// page camera instead of its own encoder, or back): its packets are
    /// renumbered to follow on, so subscribers see one stream, whose next
    /// keyframe (a new source starts with one) they decode from.
    public func beginSource() {
        videoSplicer.splice()
        audioSplicer.splice()
    }

    /// Publishes one encoded video frame.
    public func publishVideo(_ frame: EncodedMediaFrame) {
        var bytes: [[UInt8]] = []
        var sequences: [UInt16] = []
        bytes.reserveCapacity(frame.packets.count)
        sequences.reserveCapacity(frame.packets.count)
        let now = clock.now()
        for var p in frame.packets {
            videoSplicer.rewrite(&p, now: now)
            bytes.append(p.serialized())
            sequences.append(p.sequenceNumber)
            videoCount.packets &+= 1
            videoCount.octets &+= UInt32(truncatingIfNeeded: p.payload.count)
            videoCount.timestamp = p.timestamp
        }
        stats.videoPackets += bytes.count
        fanOut.sendVideo(bytes, sequences: sequences, keyframe: frame.isKeyframe)
    }

    /// Publishes one audio packet.
    public func publishAudio(_ packet: RTPPacket) {
        var packet = packet
        audioSplicer.rewrite(&packet, now: clock.now())
        audioCount.packets &+= 1
        audioCount.octets &+= UInt32(truncatingIfNeeded: packet.payload.count)
        audioCount.timestamp = packet.timestamp
        stats.audioPackets += 1
        fanOut.sendAudio(packet.serialized())
    }

    /// RTCP from a peer the owner lets subscribe (an admitted member).
    /// Receiver feedback subscribes it; the first time, it gets the cached GOP
    /// (or, asking for keyframes only, the cached keyframe). A goodbye lets it go.
    public func receiveRTCP(_ bytes: ArraySlice<UInt8>, from peer: Peer) {
        let packets: [RTCPPacket]
        do { packets = try RTCPPacket.parseCompound(bytes) } catch {
            stats.malformedRTCP += 1
            log.debug("malformed RTCP: \(error)")
            return
        }
        receiveRTCP(packets, from: peer)
    }

    /// The same, already parsed (a node that also receives from `peer` parses once).
    public func receiveRTCP(_ packets: [RTCPPacket], from peer: Peer) {
        let now = clock.now()
        let (isFeedback, keyframesOnly, leaving, resumeAfter) = RTCPPacket.feedbackMode(of: packets, videoSSRC: videoSSRC)
        if leaving { return unsubscribe(peer) }
        guard isFeedback else { return }
        let isFull = subscribers[peer].map { !$0.keyframesOnly } ?? false
        if !keyframesOnly, !isFull, fullSubscriberCount >= maxFullSubscribers {
            stats.subscribersRefused += 1
            onRefused?(peer)
            return
        }
        subscribe(peer, keyframesOnly: keyframesOnly, resumeAfter: resumeAfter)
        for packet in packets {
            switch packet {
            case .nack(let nack) where nack.mediaSSRC == videoSSRC:
                fanOut.nack(nack.lostSequenceNumbers, from: peer, now: now)
            case .pli(let pli) where pli.mediaSSRC == videoSSRC:
                // A preview waits for the next keyframe: it must not make the encoder spend one for everyone.
                if keyframesOnly {
                    stats.plisIgnored += 1
                } else {
                    stats.plisReceived += 1
                    requestKeyframe(now: now)
                }
            case .receiverReport(let rr):
                stats.receiverReports += 1
                guard !keyframesOnly else { break }
                for block in rr.reportBlocks where block.ssrc == videoSSRC {
                    noteReport(block, from: peer, now: now)
                }
            default:
                break
            }
        }
    }

    /// Subscribes `peer` before it sent any feedback (the host's return stream
    /// to a co-host it just accepted; a co-host's stream to its host): it gets
    /// the cached GOP, or a keyframe is requested.
    public func subscribe(_ peer: Peer) { subscribe(peer, keyframesOnly: false) }

    /// Subscribes `peer` in the mode its feedback asked for. A preview that
    /// becomes a full subscriber starts its rate control and repair counts
    /// afresh: whatever they held (from before it was a preview, or NACKs
    /// of keyframes) says nothing about the whole stream it now gets.
    private func subscribe(_ peer: Peer, keyframesOnly: Bool, resumeAfter: UInt16? = nil) {
        let now = clock.now()
        let existing = subscribers[peer]
        if existing == nil || (existing?.keyframesOnly == true && !keyframesOnly) {
            subscribers[peer] = Subscriber(rate: RateController(maxKbps: maxVideoKbps),
                                           lastSenderReport: existing?.lastSenderReport ?? now, rtt: existing?.rtt)
            if existing != nil {
                _ = fanOut.takeRepairCounts(peer)
                fanOut.setBudget(peer, kbps: MediaConstants.retransmitBudgetFactor * Double(maxVideoKbps))
            }
        }
        subscribers[peer]?.keyframesOnly = keyframesOnly
        if fanOut.subscribe(peer, now: now, keyframesOnly: keyframesOnly, resumeAfter: resumeAfter) { requestKeyframe(now: now) }
    }

    /// Forgets a subscriber (its session ended or it left).
    public func unsubscribe(_ peer: Peer) {
        subscribers[peer] = nil
        fanOut.unsubscribe(peer)
    }

    private func requestKeyframe(now: Instant) {
        if let last = lastKeyframeRequest, now - last < MediaConstants.keyframeRequestInterval { return }
        lastKeyframeRequest = now
        keyframeWanted = true
    }

    private func noteReport(_ block: RTCPReportBlock, from peer: Peer, now: Instant) {
        guard var s = subscribers[peer] else { return }
        let repair = fanOut.takeRepairCounts(peer)
        let beforeRepair = repair.sent > 0 ? min(1, Double(repair.nacked) / Double(repair.sent)) : 0
        let loss = max(Double(block.fractionLost) / 256, beforeRepair)
        s.lossFraction = loss
        s.rate.report(fractionLost: loss, at: now)
        fanOut.setBudget(peer, kbps: MediaConstants.retransmitBudgetFactor * s.rate.targetKbps)
        // RFC 3550 §6.4.1: RTT = A − LSR − DLSR, in 1/65536 s.
        if block.lastSenderReport != 0 {
            let a = NTPTime.middle32(NTPTime.from(clock.wallTime()))
            let rtt = a &- block.lastSenderReport &- block.delaySinceLastSenderReport
            if rtt < 65536 * 10 { s.rtt = .nanoseconds(Int64(rtt) * 1_000_000_000 / 65536) }
        }
        subscribers[peer] = s
    }

    /// Runs timers (call every 100 ms): sender reports, silent subscribers dropped.
    public func tick() {
        let now = clock.now()
        for peer in fanOut.expire(now: now) {
            subscribers[peer] = nil
            log.debug("subscriber timed out")
        }
        for (peer, s) in subscribers where now - s.lastSenderReport >= MediaConstants.senderReportInterval {
            subscribers[peer]?.lastSenderReport = now
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
