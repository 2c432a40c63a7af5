import LVBCore
import Logging

/// What a stream's subscribers sent back, for `stats` lines.
public struct DownstreamStats: Sendable, Equatable {
    /// PLIs from full subscribers; of them, those that raised no keyframe
    /// request (the GOP cache had just started the subscriber, or a request
    /// had just been raised).
    public var plisReceived = 0
    public var plisAggregated = 0
    /// PLIs from keyframes-only subscribers, not acted on.
    public var plisIgnored = 0
    /// Keyframe requests raised (at most one per `keyframeRequestInterval`).
    public var keyframeRequests = 0
    /// Sequence numbers subscribers NACKed that the send history resent.
    public var nacksAnswered = 0
    public var receiverReports = 0
    public var malformedRTCP = 0
    /// Feedback from a new full subscriber while `maxFullSubscribers` were subscribed, ignored.
    public var subscribersRefused = 0
}

/// The subscribers of one stream and what they send back, whoever feeds the
/// stream: the encoder of its origin (`MediaOrigin`) or a relay's parent
/// (`MediaRelay`). Sans-IO on the node's loop. A peer subscribes by sending
/// receiver feedback (RR, NACK or PLI), to keyframes only when it carries the
/// APP keyframes-only request (`RTCPApp.keyframesOnly`), and goes with an
/// RTCP goodbye or after `subscriberTimeout` without feedback. Full
/// subscribers are capped (a node's slots in the media tree); a new one past
/// the cap is refused (`onRefused`). A new subscriber starts from the GOP
/// cache at once; NACKs are answered from the send history within each
/// subscriber's repair budget; a PLI raises at most one keyframe request per
/// interval (at a relay none when the cache has just started the subscriber); a report
/// gives the subscriber's loss before repair (the larger of what it reports
/// and what it NACKed) and, echoing a sender report, its round trip. The
/// owner adds what differs: an origin's rate control and sender reports, a
/// relay's requests upstream.
public final class Downstream<Peer: Hashable> {
    private struct Subscriber {
        var lossFraction = 0.0
        var rtt: Duration?
        /// When its last report about the video came.
        var reportedAt: Instant?
    }

    public let fanOut: FanOut<Peer>
    public private(set) var stats = DownstreamStats()
    /// Full subscribers taken at most; keyframes-only ones are not counted.
    public var maxFullSubscribers = Int.max
    /// A peer's feedback was refused: every full slot is taken, or `admits` said no.
    public var onRefused: ((Peer) -> Void)?
    /// Whether a new full subscriber may be taken at all (a relay refuses
    /// the nodes it takes its own stream through: one taken would close a loop).
    public var admits: ((Peer) -> Bool)?
    /// Whether a PLI from a subscriber the GOP cache has just started still
    /// raises a keyframe request: at the origin it does (a keyframe costs one
    /// encode there, and under loss a burst may reach the subscriber
    /// incomplete); a relay would pass it upstream, where the origin decides.
    var keyframeAfterCacheStart = false
    /// The video SSRC feedback must name (a relay's changes with the stream it relays).
    var videoSSRC: UInt32?
    /// A subscriber starts afresh: new, or a preview now taking the whole stream.
    var onFresh: ((Peer) -> Void)?
    /// A subscriber is gone (goodbye, timeout, or the owner let it go).
    var onGone: ((Peer) -> Void)?
    /// A NACK, after the send history resent what it holds.
    var onNACK: (([UInt16], Peer, Instant) -> Void)?
    /// A full subscriber's loss before repair, from each report about the video.
    var onLoss: ((Peer, Double, Instant) -> Void)?
    /// The round trip a report block shows when it echoes a sender report this stage sent.
    var roundTrip: ((RTCPReportBlock, Instant) -> Duration?)?

    private let clock: Clock
    private let log = Log.logger("media")
    private var subscribers: [Peer: Subscriber] = [:]
    private var keyframeWanted = false
    private var lastKeyframeRequest: Instant?

    init(clock: Clock, videoSSRC: UInt32?, useGOPCache: Bool, budgetKbps: Int) {
        self.clock = clock
        self.videoSSRC = videoSSRC
        fanOut = FanOut(useGOPCache: useGOPCache, budgetKbps: budgetKbps)
    }

    /// Subscribers, keyframes-only ones included.
    public var peers: [Peer] { fanOut.peers }
    public var count: Int { fanOut.count }
    /// Those that take the whole stream (children in the media tree), and their number.
    public var fullSubscribers: [Peer] { fanOut.peers.filter { !fanOut.isKeyframesOnly($0) } }
    public var fullCount: Int { fanOut.count - fanOut.keyframesOnlyCount }
    public func isKeyframesOnly(_ peer: Peer) -> Bool { fanOut.isKeyframesOnly(peer) }
    /// The loss `peer` last reported (before repair), and its round trip, if it subscribes.
    public func loss(of peer: Peer) -> Double? { subscribers[peer]?.lossFraction }
    /// When `peer` last reported on the video (nil: never): a subscriber that
    /// moved away and whose goodbye was lost stays until `subscriberTimeout`
    /// with the loss it last reported, or none.
    public func reportedAt(_ peer: Peer) -> Instant? { subscribers[peer]?.reportedAt }
    public func roundTrip(to peer: Peer) -> Duration? { subscribers[peer]?.rtt }
    /// Mean loss the full subscribers report, and the worst round trip.
    public var meanLoss: Double {
        let full = fullSubscribers.compactMap { subscribers[$0] }
        return full.isEmpty ? 0 : full.reduce(0) { $0 + $1.lossFraction } / Double(full.count)
    }
    public var worstRoundTrip: Duration? { subscribers.values.compactMap(\.rtt).max() }

    /// True once after a keyframe was requested (a PLI, or a subscriber with
    /// nothing cached to start from); the owner acts on it (its encoder, or upstream).
    public func takeKeyframeRequest() -> Bool {
        defer { keyframeWanted = false }
        return keyframeWanted
    }

    /// Raises a keyframe request unless one was raised within
    /// `keyframeRequestInterval`; false when it was aggregated into that one.
    /// (Its subscribers' PLIs raise it; so may someone beside them, such as
    /// `--egress`'s media server: `NodeMedia.requestKeyframe(of:)`.)
    @discardableResult
    public func requestKeyframe(now: Instant) -> Bool {
        if let last = lastKeyframeRequest, now - last < MediaConstants.keyframeRequestInterval { return false }
        lastKeyframeRequest = now
        keyframeWanted = true
        stats.keyframeRequests += 1
        return true
    }

    /// RTCP from a peer the owner lets subscribe (an admitted member).
    public func receiveRTCP(_ bytes: ArraySlice<UInt8>, from peer: Peer) {
        let packets: [RTCPPacket]
        do { packets = try RTCPPacket.parseCompound(bytes) } catch {
            stats.malformedRTCP += 1
            log.debug("malformed RTCP from a subscriber: \(error)")
            return
        }
        receiveRTCP(packets, from: peer)
    }

    /// The same, already parsed (a node that also receives from `peer` parses once).
    public func receiveRTCP(_ packets: [RTCPPacket], from peer: Peer) {
        let now = clock.now()
        let (isFeedback, keyframesOnly, leaving, resumeAfter) = RTCPPacket.feedbackMode(of: packets, videoSSRC: videoSSRC)
        if leaving { return unsubscribe(peer) }
        guard isFeedback, let started = subscribe(peer, keyframesOnly: keyframesOnly, resumeAfter: resumeAfter, capped: true, now: now)
        else { return }
        for packet in packets {
            switch packet {
            case .nack(let nack) where nack.mediaSSRC == videoSSRC:
                let resent = fanOut.stats.retransmissions
                fanOut.nack(nack.lostSequenceNumbers, from: peer, now: now)
                stats.nacksAnswered += fanOut.stats.retransmissions - resent
                onNACK?(nack.lostSequenceNumbers, peer, now)
            case .pli(let pli) where pli.mediaSSRC == videoSSRC:
                // A preview waits for the next keyframe: it must not make one for everyone.
                if keyframesOnly {
                    stats.plisIgnored += 1
                } else {
                    stats.plisReceived += 1
                    if (started && !keyframeAfterCacheStart) || !requestKeyframe(now: now) { stats.plisAggregated += 1 }
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

    /// Subscribes `peer` to the whole stream before it sent any feedback, past
    /// the cap (the host's return stream to a co-host it just accepted; a
    /// co-host's stream to its host): it gets the cached GOP, or a keyframe is requested.
    public func subscribe(_ peer: Peer) {
        _ = subscribe(peer, keyframesOnly: false, resumeAfter: nil, capped: false, now: clock.now())
    }

    /// Subscribes `peer` in the mode its feedback asked for; nil when it is a
    /// new full subscriber and every slot is taken, else whether the GOP
    /// cache (or what it missed, when it asked to resume) started it now. A
    /// preview that becomes a full subscriber starts its loss and repair
    /// figures afresh: what they held says nothing about the whole stream.
    private func subscribe(_ peer: Peer, keyframesOnly: Bool, resumeAfter: UInt16?, capped: Bool, now: Instant) -> Bool? {
        let existing = subscribers[peer]
        let wasFull = existing != nil && !fanOut.isKeyframesOnly(peer)
        if capped, !keyframesOnly, !wasFull, fullCount >= maxFullSubscribers || admits?(peer) == false {
            stats.subscribersRefused += 1
            onRefused?(peer)
            return nil
        }
        if existing == nil || (!keyframesOnly && !wasFull) {
            subscribers[peer] = Subscriber(rtt: existing?.rtt)
            if existing != nil {
                _ = fanOut.takeRepairCounts(peer)
                fanOut.resetBudget(peer)
            }
            onFresh?(peer)
        }
        let bursts = fanOut.stats.startBursts
        if fanOut.subscribe(peer, now: now, keyframesOnly: keyframesOnly, resumeAfter: resumeAfter) { requestKeyframe(now: now) }
        return fanOut.stats.startBursts > bursts
    }

    /// A full subscriber's report block about the video.
    private func noteReport(_ block: RTCPReportBlock, from peer: Peer, now: Instant) {
        guard var s = subscribers[peer] else { return }
        let repair = fanOut.takeRepairCounts(peer)
        let beforeRepair = repair.sent > 0 ? min(1, Double(repair.nacked) / Double(repair.sent)) : 0
        s.lossFraction = max(Double(block.fractionLost) / 256, beforeRepair)
        s.reportedAt = now
        if block.lastSenderReport != 0, let rtt = roundTrip?(block, now) { s.rtt = rtt }
        subscribers[peer] = s
        onLoss?(peer, s.lossFraction, now)
    }

    /// Forgets a subscriber (its session ended, it left, it moved elsewhere, or it was moved down).
    public func unsubscribe(_ peer: Peer) {
        guard subscribers.removeValue(forKey: peer) != nil else { return fanOut.unsubscribe(peer) }
        fanOut.unsubscribe(peer)
        onGone?(peer)
    }

    /// Drops subscribers silent for `subscriberTimeout` (call with the owner's tick).
    func expire(now: Instant) {
        for peer in fanOut.expire(now: now) {
            subscribers[peer] = nil
            onGone?(peer)
            log.debug("subscriber timed out")
        }
    }

    /// The same RTCP to every subscriber.
    func sendToAll(_ bytes: [UInt8]) {
        for peer in fanOut.peers { fanOut.send(bytes, channel: .rtcp, to: peer) }
    }
}
