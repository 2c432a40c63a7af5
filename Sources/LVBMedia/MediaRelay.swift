import LVBCore
import Logging

/// What a relay stage did, for `stats` lines (its fan-out counts the bytes
/// sent, retransmissions and GOP bursts).
public struct RelayStats: Sendable, Equatable {
    /// Distinct RTP packets from the parent passed on, each once, and their bytes.
    public var forwardedPackets = 0
    public var forwardedBytes = 0
    /// Copies of packets already forwarded, dropped.
    public var duplicatesDropped = 0
    /// Packets too far behind the newest of their SSRC to tell, dropped.
    public var tooOld = 0
    /// Video of another SSRC while the relayed one plays, dropped.
    public var foreignVideo = 0
    public var malformedRTP = 0
    public var unknownPayloadTypes = 0
    public var malformedRTCP = 0
    /// Sequence numbers children NACKed: resent from the history, and
    /// passed upstream because the relay lacks them too.
    public var nacksAnswered = 0
    public var nacksPassedUp = 0
    /// PLIs from full children; of them, those that did not go upstream (the
    /// GOP cache started the child, or a request had just gone up).
    public var plisReceived = 0
    public var plisAggregated = 0
    /// PLIs from keyframes-only children, not acted on.
    public var plisIgnored = 0
    /// Keyframe requests raised for upstream (at most one per interval).
    public var keyframeRequests = 0
    /// Children's receiver reports, consumed here.
    public var receiverReports = 0
    /// Feedback from a new child while `maxChildren` are subscribed, ignored.
    public var childrenRefused = 0
}

/// The relay stage of one stream, sans-IO on the node's loop: a viewer
/// forwarding the stream it receives to its children before any jitter
/// buffer or decoding (a `--no-media` viewer relays too). Each packet is
/// forwarded the first time it arrives; its fan-out keeps the send history
/// and the GOP cache of exactly what it forwarded, so a child's NACK is
/// answered here and a child that joins starts from a keyframe at once.
/// Children subscribe as they would at the origin (receiver feedback; the
/// APP keyframes-only request for a preview) and time out the same way. What
/// goes upstream is aggregated, never multiplied by the audience: the
/// sequence numbers children NACKed that the relay lacks too
/// (`takeUpstreamNACKs`), and at most one keyframe request per
/// `keyframeRequestInterval` (`takeKeyframeRequest`). The owner merges them
/// into its own feedback to the parent; children's receiver reports stop here.
public final class MediaRelay<Peer: Hashable> {
    /// The children, and what they send back.
    public let downstream: Downstream<Peer>
    public var fanOut: FanOut<Peer> { downstream.fanOut }
    /// Full children beyond this many are not taken on (the node's relay slots).
    public var maxChildren: Int { downstream.maxFullSubscribers }
    public var stats: RelayStats {
        var s = counts
        let d = downstream.stats
        (s.plisReceived, s.plisAggregated, s.plisIgnored) = (d.plisReceived, d.plisAggregated, d.plisIgnored)
        (s.keyframeRequests, s.receiverReports, s.malformedRTCP) = (d.keyframeRequests, d.receiverReports, d.malformedRTCP)
        (s.childrenRefused, s.nacksAnswered) = (d.subscribersRefused, d.nacksAnswered)
        return s
    }
    /// A new child's feedback was refused: every slot is taken.
    public var onRefused: ((Peer) -> Void)? {
        get { downstream.onRefused }
        set { downstream.onRefused = newValue }
    }
    /// The video SSRC relayed (its history and GOP cache), once one arrived.
    public var videoSSRC: UInt32? { downstream.videoSSRC }
    /// The audio SSRC last relayed.
    public private(set) var audioSSRC: UInt32?
    /// Round trip to the parent (the owner feeds the transport's estimate): a
    /// missing packet is asked for upstream again at most every
    /// max(RTT × `nackRetryRTTFactor`, `nackRetryFloor`).
    public var upstreamRTT: Duration = .milliseconds(100)

    let clock: Clock
    let log = Log.logger("media")
    var counts = RelayStats()
    private var seen = DuplicateFilter()
    /// RTP timestamps of the latest keyframes of `videoSSRC` (their later packets are keyframe packets too).
    private var keyframeTimestamps: [UInt32] = []
    private var lastVideo: Instant?
    /// Missing sequence numbers asked for upstream, and when; those to ask next.
    var upstreamAsked: [UInt16: Instant] = [:]
    var upstreamPending: Set<UInt16> = []
    /// Sender reports forwarded to children (middle 32 bits of their NTP time) and when.
    var forwardedReports: [(middle: UInt32, at: Instant)] = []

    /// - Parameters:
    ///   - repairBudgetKbps: what retransmissions to one child may use (a
    ///     multiple of the stream's rate, as at the origin).
    ///   - maxChildren: the node's relay slots.
    public init(clock: Clock, repairBudgetKbps: Int, maxChildren: Int = .max, useGOPCache: Bool = true) {
        self.clock = clock
        downstream = Downstream(clock: clock, videoSSRC: nil, useGOPCache: useGOPCache, budgetKbps: repairBudgetKbps)
        downstream.maxFullSubscribers = max(0, maxChildren)
        downstream.onNACK = { [unowned self] sequences, _, now in passUp(sequences, now: now) }
        downstream.roundTrip = { [unowned self] block, now in roundTrip(echoing: block, now: now) }
    }

    /// Sends one packet to one child (the owner seals it into the session).
    public var send: ((Peer, MediaChannel, [UInt8]) -> Void)? {
        get { fanOut.send }
        set { fanOut.send = newValue }
    }

    /// Children, keyframes-only ones included.
    public var children: [Peer] { fanOut.peers }
    public var childCount: Int { fanOut.count }
    public func isKeyframesOnly(_ child: Peer) -> Bool { fanOut.isKeyframesOnly(child) }
    /// Loss a full child reports (before repair), and its round trip from
    /// the sender reports forwarded to it (`receiveUpstreamRTCP`).
    public func loss(of child: Peer) -> Double? { downstream.loss(of: child) }
    public func roundTrip(to child: Peer) -> Duration? { downstream.roundTrip(to: child) }

    // MARK: RTP from the parent

    /// One RTP datagram of the stream from the parent, as it arrived.
    public func receiveRTP(_ bytes: ArraySlice<UInt8>) {
        let header: RTPHeader
        do { header = try RTPHeader(parsing: bytes) } catch {
            counts.malformedRTP += 1
            log.debug("relay: malformed RTP: \(error)")
            return
        }
        relay(header, bytes)
    }

    /// The same, already parsed (a node that also decodes the stream parses once).
    public func receiveRTP(_ packet: RTPPacket, bytes: ArraySlice<UInt8>) { relay(RTPHeader(packet), bytes) }

    private func relay(_ header: RTPHeader, _ bytes: ArraySlice<UInt8>) {
        switch header.payloadType {
        case MediaConstants.videoPayloadType:
            guard let (descriptor, data) = try? VP8PayloadDescriptor.parse(header.payload) else {
                counts.malformedRTP += 1
                log.debug("relay: malformed VP8 payload descriptor")
                return
            }
            relayVideo(header, bytes, startsKeyframe: descriptor.startsKeyframe(data))
        case MediaConstants.audioPayloadType:
            guard isNew(header, bytes) else { return }
            audioSSRC = header.ssrc
            fanOut.sendAudio(Array(bytes))
        default:
            counts.unknownPayloadTypes += 1
        }
    }

    private func relayVideo(_ header: RTPHeader, _ bytes: ArraySlice<UInt8>, startsKeyframe: Bool) {
        let now = clock.now()
        if header.ssrc != videoSSRC {
            // Another stream takes over at its keyframe, or once this one is silent.
            let silent = lastVideo.map { now - $0 >= MediaConstants.streamSwitchSilence } ?? true
            guard startsKeyframe || silent else {
                counts.foreignVideo += 1
                return
            }
            adopt(header.ssrc)
        }
        guard isNew(header, bytes) else { return }
        lastVideo = now
        if startsKeyframe, !keyframeTimestamps.contains(header.timestamp) {
            keyframeTimestamps.append(header.timestamp)
            if keyframeTimestamps.count > 4 { keyframeTimestamps.removeFirst() }
        }
        if !upstreamAsked.isEmpty { upstreamAsked[header.sequenceNumber] = nil }
        fanOut.forwardVideo(Array(bytes), sequence: header.sequenceNumber, timestamp: header.timestamp,
                            keyframe: keyframeTimestamps.contains(header.timestamp), startsKeyframe: startsKeyframe)
    }

    /// True the first time a packet arrives (and counts it forwarded).
    private func isNew(_ header: RTPHeader, _ bytes: ArraySlice<UInt8>) -> Bool {
        switch seen.check(ssrc: header.ssrc, sequence: header.sequenceNumber) {
        case .duplicate:
            counts.duplicatesDropped += 1
            return false
        case .tooOld:
            counts.tooOld += 1
            return false
        case .new:
            counts.forwardedPackets += 1
            counts.forwardedBytes += bytes.count
            return true
        }
    }

    /// Relays the video of `ssrc` from now on; what was kept of another is dropped.
    private func adopt(_ ssrc: UInt32) {
        if let old = videoSSRC {
            log.debug("relay: video stream replaced by a new SSRC")
            seen.forget(old)
            fanOut.resetVideo()
        }
        downstream.videoSSRC = ssrc
        keyframeTimestamps.removeAll()
        upstreamAsked.removeAll()
        upstreamPending.removeAll()
    }

    // MARK: What goes upstream

    /// Sequence numbers of the relayed video (`videoSSRC`) that children
    /// NACKed and the relay lacks, since the last call; the owner adds them
    /// to its own NACK to the parent.
    public func takeUpstreamNACKs() -> [UInt16] {
        defer { upstreamPending.removeAll(keepingCapacity: true) }
        guard let ssrc = videoSSRC else { return [] }
        return upstreamPending.filter { seen.isMissing(ssrc: ssrc, sequence: $0) }.sorted()
    }

    /// True once after children needed a keyframe the GOP cache could not
    /// give them; the owner sends one PLI to the parent.
    public func takeKeyframeRequest() -> Bool { downstream.takeKeyframeRequest() }

    /// Both of the above as RTCP from `senderSSRC` (the owner's receiver
    /// SSRC), for an owner with no feedback of its own to merge them into.
    public func takeUpstreamFeedback(senderSSRC: UInt32) -> [RTCPPacket] {
        let nacks = takeUpstreamNACKs()
        let keyframe = takeKeyframeRequest()
        guard let videoSSRC else { return [] }
        var out: [RTCPPacket] = []
        if let nack = try? RTCPGenericNACK(senderSSRC: senderSSRC, mediaSSRC: videoSSRC, lost: Set(nacks)) {
            out.append(.nack(nack))
        }
        if keyframe { out.append(.pli(RTCPPictureLossIndication(senderSSRC: senderSSRC, mediaSSRC: videoSSRC))) }
        return out
    }

    /// Video packets this relay forwarded that the origin's seals refused (its
    /// own check, after forwarding): forgotten, so that the origin's copies,
    /// asked for again, are forwarded, and no child gets the lie again.
    public func forget(_ sequences: [UInt16]) {
        guard let ssrc = videoSSRC, !sequences.isEmpty else { return }
        for s in sequences { seen.unsee(ssrc: ssrc, sequence: s) }
        fanOut.forgetVideo(sequences)
    }

    /// True when `sequence` of the relayed video is a hole the parent can still fill.
    func isMissing(_ sequence: UInt16) -> Bool {
        videoSSRC.map { seen.isMissing(ssrc: $0, sequence: sequence) } ?? false
    }

    // MARK: Children

    /// Forgets a child (its session ended, it left, or it moved to another parent).
    public func unsubscribe(_ child: Peer) { downstream.unsubscribe(child) }

    /// Runs timers (call with the node's tick): silent children dropped,
    /// upstream requests given up once too old.
    public func tick() {
        let now = clock.now()
        downstream.expire(now: now)
        upstreamAsked = upstreamAsked.filter { now - $0.value < ReceiverConstants.nackMaxAge }
    }
}
