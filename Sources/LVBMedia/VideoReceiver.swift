import LVBCore

/// The viewer side of a VP8 stream, sans I/O: RTP packets in; decoded frames
/// and RTCP feedback out.
///
/// Packets feed the receive statistics, the NACK tracker and frame assembly.
/// Complete frames wait in decode order and go to the decoder once every
/// earlier frame is decoded or skipped and their jitter-buffer time has come.
/// A gap in decode order is waited for while NACKs repair it; past a deadline
/// the receiver skips to the next keyframe, or, if none is queued, asks for
/// one (PLI) and keeps what it holds: a repair that comes later still (a new
/// relay's GOP burst after the old one died) resumes decoding without a
/// skip. The owner calls `receive` per packet, then `poll`, and `poll` again
/// at `nextWakeup`.
public final class VideoReceiver {
    public let ssrc: UInt32
    public let config: VideoReceiverConfig
    /// The sender's SSRC, learned from the first packet.
    public private(set) var mediaSSRC: UInt32?
    /// Called just before each frame goes to the decoder: a relay sends the
    /// packets it forwarded before spending milliseconds decoding.
    public var beforeDecode: (() -> Void)?

    private let clock: Clock
    private let decoder: VP8Decoder
    private var statistics: ReceiveStatistics?
    private var nack = NackTracker()
    private var buffer = VideoFrameBuffer()
    private var sequences = SequenceUnwrapper()
    private var jitter: JitterBuffer
    private var counters = VideoReceiverStats()

    private var lastDecoded: DecodedVideoFrame?
    /// Only a keyframe can be decoded next (at the start, after a skip, after a decode error).
    private var needKeyframe = true
    /// `skippedFrames` when the last frame was released (the next one says whether any were lost since).
    private var skippedAtRelease = 0
    /// When a keyframe became wanted (a PLI is due from then on, rate-limited).
    private var keyframeWantedAt: Instant?
    private var lastPLI: Instant?
    /// `requestKeyframe()` was called: a PLI goes with the next poll.
    private var keyframeAsked = false
    /// When decoding first stalled on the current decode-order gap.
    private var gapSince: Instant?
    private var nextReport: Instant?
    /// The first keyframe's start is being asked for: the packets before the
    /// first that arrived (`lowest` is the lowest asked for so far).
    private var backfill: (lowest: Int64, asked: Int)?
    /// Sealed stream: packets that answered a NACK on arrival, until verified (`arrived`).
    private var answeredNACK: Set<UInt16> = []
    /// When the last packet of the stream arrived (a long silence is an outage).
    private var lastPacketAt: Instant?

    public init(clock: Clock, ssrc: UInt32, config: VideoReceiverConfig = .init()) throws(MediaError) {
        self.clock = clock
        self.ssrc = ssrc
        self.config = config
        self.decoder = try VP8Decoder()
        self.jitter = JitterBuffer(clockRate: ReceiverConstants.videoClockRate,
                                   maxTargetDelay: config.maxTargetDelay)
    }

    /// Round-trip time to the sender (the owner feeds the transport's estimate).
    public var rtt: Duration {
        get { nack.rtt }
        set { nack.rtt = newValue }
    }

    public var stats: VideoReceiverStats {
        var s = counters
        s.lost = Int(max(0, statistics?.cumulativeLost ?? 0))
        s.recovered = nack.recovered
        s.duplicates = Int(statistics?.duplicates ?? 0)
        s.currentDelay = jitter.targetDelay
        s.jitter = statistics?.jitterMilliseconds ?? 0
        return s
    }

    /// The sequence number of the last packet of the last frame decoded: a
    /// new parent resumes the stream after it (nil before the first picture).
    public var resumePoint: UInt16? {
        lastDecoded.map { UInt16(truncatingIfNeeded: $0.lastSeq) }
    }

    /// A sealed stream: every packet as it arrives, before its seal is
    /// checked, so that NACKs ask only for what did not come; `receive`
    /// then takes the verified ones.
    public func arrived(_ packet: RTPPacket) {
        guard packet.payloadType == config.payloadType, mediaSSRC.map({ $0 == packet.ssrc }) ?? true else { return }
        if nack.insert(packet.sequenceNumber, at: clock.now()) { answeredNACK.insert(packet.sequenceNumber) }
        if answeredNACK.count > ReceiverConstants.nackMaxTracked { answeredNACK.removeAll() }
    }

    /// Packets that arrived (`arrived`) but were refused with their frame: asked for again.
    public func askAgain(_ sequenceNumbers: [UInt16]) {
        nack.missingAgain(sequenceNumbers, at: clock.now())
    }

    /// Call for every RTP packet that arrives for this stream (of a sealed stream: every verified one).
    public func receive(_ packet: RTPPacket) {
        let now = clock.now()
        guard packet.payloadType == config.payloadType else { counters.malformedPackets += 1; return }
        if mediaSSRC == nil {
            mediaSSRC = packet.ssrc
            statistics = ReceiveStatistics(ssrc: packet.ssrc, clockRate: ReceiverConstants.videoClockRate)
            keyframeWantedAt = now + ReceiverConstants.firstKeyframeWait
            nextReport = now + config.reportInterval
        }
        guard packet.ssrc == mediaSSRC else { counters.foreignPackets += 1; return }
        counters.packets += 1
        counters.bytes += packet.payload.count
        if let last = lastPacketAt, now - last >= ReceiverConstants.videoOutageSilence { jitter.resetBaseline() }
        lastPacketAt = now
        let arrival = statistics?.record(packet, at: now)
        let answersNACK = nack.insert(packet.sequenceNumber, at: now) || answeredNACK.remove(packet.sequenceNumber) != nil
        guard arrival != .duplicate else { return }

        let seq = sequences.unwrap(packet.sequenceNumber)
        askForFirstKeyframeStart(packet, seq: seq, now: now)
        do {
            switch try buffer.insert(packet, seq: seq, repaired: answersNACK, at: now) {
            case let .complete(frame):
                // A repaired frame is late by a round trip, not by jitter.
                if !frame.repaired { jitter.recordArrival(timestamp: frame.timestamp, at: now) }
                if gapSince == nil, isBlockedOnGap { gapSince = now }
            case .stale: counters.latePackets += 1
            case .oversized: counters.malformedPackets += 1
            case .partial: break
            }
        } catch {
            counters.malformedPackets += 1
        }
        trimQueue()
    }

    /// A new subscriber's stream starts with a keyframe (the GOP cache, or a
    /// keyframe the sender makes for it). When the first packet is not a
    /// keyframe's start, that start was lost where no gap can show it: the
    /// packets before the first are asked for, 4 then twice as many each
    /// time the lowest asked for comes back, until a keyframe's start comes,
    /// a keyframe is decoded, or `maxBackfillPackets` were asked for.
    private func askForFirstKeyframeStart(_ packet: RTPPacket, seq: Int64, now: Instant) {
        if counters.packets == 1 {
            guard !Self.startsKeyframe(packet) else { return }
            backfill = (seq, 0)
        } else if let b = backfill, seq < b.lowest + Int64(b.asked) {
            // One of the packets asked for (later ones are not the search's business).
            if !needKeyframe || Self.startsKeyframe(packet) { backfill = nil }
            guard seq == b.lowest, backfill != nil else { return }
        } else {
            return
        }
        guard let b = backfill else { return }
        let step = min(max(ReceiverConstants.backfillStep, b.asked), ReceiverConstants.maxBackfillPackets - b.asked)
        guard step > 0 else { backfill = nil; return }
        nack.expect(step, before: UInt16(truncatingIfNeeded: b.lowest), at: now)
        backfill = (b.lowest - Int64(step), b.asked + step)
    }

    private static func startsKeyframe(_ packet: RTPPacket) -> Bool {
        guard let (descriptor, data) = try? VP8PayloadDescriptor.parse(packet.payload) else { return false }
        return descriptor.startsKeyframe(data)
    }

    /// Call for RTCP from the media sender; sender reports feed LSR/DLSR.
    public func receiveRTCP(_ packet: RTCPPacket) {
        guard case let .senderReport(report) = packet, report.ssrc == mediaSSRC else { return }
        statistics?.recordSenderReport(report, at: clock.now())
    }

    /// Decodes what is due and returns it with any feedback to send.
    public func poll() -> [VideoReceiverOutput] {
        let now = clock.now()
        guard let mediaSSRC else { return [] }
        jitter.expire(now: now)
        var out: [VideoReceiverOutput] = []
        decodeDue(now: now, into: &out)

        var feedback: [RTCPPacket] = []
        if let due = nextReport, now >= due, let block = statistics?.reportBlock(now: now),
           let report = try? RTCPReceiverReport(ssrc: ssrc, reportBlocks: [block]) {
            feedback.append(.receiverReport(report))
            nextReport = max(due + config.reportInterval, now)
        }
        let lost = nack.poll(now: now)
        if !lost.isEmpty, let request = try? RTCPGenericNACK(senderSSRC: ssrc, mediaSSRC: mediaSSRC, lost: Set(lost)) {
            feedback.append(.nack(request))
            counters.nacksSent += 1
            counters.nackedSequences += lost.count
        }
        if keyframeAsked || pliDue.map({ now >= $0 }) == true {
            feedback.append(.pli(RTCPPictureLossIndication(senderSSRC: ssrc, mediaSSRC: mediaSSRC)))
            lastPLI = now
            counters.keyframeRequests += 1
            keyframeAsked = false
        }
        if !feedback.isEmpty { out.append(.feedback(feedback)) }
        return out
    }

    /// The next time `poll` has work, if any (new packets may bring it sooner).
    public var nextWakeup: Instant? {
        [nack.nextWakeup(), nextReport, pliDue, decodeWakeup, keyframeAsked ? clock.now() : nil].compactMap { $0 }.min()
    }

    /// Someone this node feeds outside the tree (a media server's
    /// subscriber, `--egress`) wants a keyframe: one PLI goes upstream with
    /// the next poll, unless one went within `keyframeRequestInterval` (then
    /// false: that one serves). A child in the tree asks the same way.
    @discardableResult
    public func requestKeyframe() -> Bool {
        guard mediaSSRC != nil else { return false }
        if let last = lastPLI, clock.now() - last < MediaConstants.keyframeRequestInterval { return false }
        keyframeAsked = true
        return true
    }

    // MARK: Decode order

    private var gapWait: Duration {
        let retry = max(rtt * ReceiverConstants.nackRetryRTTFactor, ReceiverConstants.nackRetryFloor)
        let repair = ReceiverConstants.nackReorderWait + rtt + retry * ReceiverConstants.gapRepairRounds
        return min(ReceiverConstants.maxGapWait, max(jitter.targetDelay, repair))
    }

    private var isBlockedOnGap: Bool {
        guard !needKeyframe, let last = lastDecoded, let head = buffer.ready.first else { return false }
        return !head.follows(last)
    }

    /// Waiting for a keyframe, the gap given up on has filled after all: the
    /// head follows the last decoded frame. Only such a gap can: after a
    /// decode error the corrupt frame, consumed, stands between the last
    /// decoded frame and any later one, and before the first picture there
    /// is no last decoded frame.
    private var gapFilledLate: Bool {
        guard needKeyframe, let last = lastDecoded, let head = buffer.ready.first else { return false }
        return head.follows(last)
    }

    private func releaseTime(_ frame: QueuedVideoFrame) -> Instant {
        jitter.releaseTime(timestamp: frame.timestamp) ?? frame.arrival
    }

    private func decodeDue(now: Instant, into out: inout [VideoReceiverOutput]) {
        while true {
            if needKeyframe {
                if gapFilledLate {
                    needKeyframe = false
                    keyframeWantedAt = nil
                    continue
                }
                guard let k = buffer.ready.firstIndex(where: \.isKeyframe) else { break }
                for _ in 0..<k { drop() }
                guard let head = buffer.ready.first, releaseTime(head) <= now else { break }
                decodeFirst(now: now, into: &out)
                continue
            }
            guard let head = buffer.ready.first, let last = lastDecoded else { break }
            if head.follows(last) {
                guard releaseTime(head) <= now else { break }
                decodeFirst(now: now, into: &out)
                continue
            }
            let since = gapSince ?? now
            gapSince = since
            guard now >= since + gapWait else { break }
            skipToKeyframe(now: now)
        }
    }

    /// Gives up waiting on a decode-order gap: resumes at the next queued
    /// keyframe, or asks for one and keeps the queue in case the gap still fills.
    private func skipToKeyframe(now: Instant) {
        gapSince = nil
        needKeyframe = true
        if let k = buffer.ready.firstIndex(where: \.isKeyframe) {
            for _ in 0..<k { drop() }
        } else {
            keyframeWantedAt = now
        }
    }

    private func decodeFirst(now: Instant, into out: inout [VideoReceiverOutput]) {
        guard let frame = buffer.removeFirst() else { return }
        beforeDecode?()
        let image: I420Frame?
        do {
            image = try decoder.decode(frame.data)
        } catch {
            // Corrupt data: the decoder's references are suspect until a keyframe.
            counters.decodeErrors += 1
            countDropped(frame)
            needKeyframe = true
            keyframeWantedAt = now
            return
        }
        if let last = lastDecoded, let id = frame.pictureID, let lastID = last.pictureID {
            counters.skippedFrames += Int((id &- lastID &- 1) & 0x7FFF)
        }
        lastDecoded = DecodedVideoFrame(pictureID: frame.pictureID, lastSeq: frame.lastSeq)
        gapSince = nil
        if frame.isKeyframe {
            needKeyframe = false
            keyframeWantedAt = nil
            nack.removeBefore(UInt16(truncatingIfNeeded: frame.firstSeq))
        }
        guard let image else { counters.skippedFrames += 1; return }
        counters.framesDecoded += 1
        let afterLoss = counters.skippedFrames != skippedAtRelease
        skippedAtRelease = counters.skippedFrames
        out.append(.frame(ReceivedVideoFrame(
            image: image, encoded: frame.data, isKeyframe: frame.isKeyframe, rtpTimestamp: frame.timestamp,
            captureTime: frame.captureTime, arrival: frame.arrival, afterLoss: afterLoss)))
    }

    private func drop() {
        if let frame = buffer.removeFirst() { countDropped(frame) }
    }

    /// Frames between two decoded frames are counted by their PictureID gap
    /// when the later one decodes; others are counted as they are dropped.
    private func countDropped(_ frame: QueuedVideoFrame) {
        if frame.pictureID == nil || lastDecoded?.pictureID == nil { counters.skippedFrames += 1 }
    }

    /// Keeps the queue bounded while it waits for a keyframe (or a hostile sender floods it).
    private func trimQueue() {
        while buffer.ready.count > ReceiverConstants.maxQueuedFrames || buffer.readyBytes > ReceiverConstants.maxQueuedBytes { drop() }
    }

    private var decodeWakeup: Instant? {
        if needKeyframe {
            if gapFilledLate, let head = buffer.ready.first { return releaseTime(head) }
            return buffer.ready.first(where: \.isKeyframe).map(releaseTime)
        }
        guard let head = buffer.ready.first, let last = lastDecoded else { return nil }
        if head.follows(last) { return releaseTime(head) }
        return (gapSince ?? clock.now()) + gapWait
    }

    // MARK: Keyframe requests

    /// When the next PLI is due: while a keyframe is wanted and none is queued,
    /// no sooner than max(RTT, 200 ms) after the last for a new loss, and
    /// again every second while none comes.
    private var pliDue: Instant? {
        guard needKeyframe, let wanted = keyframeWantedAt,
              !buffer.ready.contains(where: \.isKeyframe) else { return nil }
        guard let last = lastPLI else { return wanted }
        if wanted > last { return max(wanted, last + max(rtt, ReceiverConstants.pliMinInterval)) }
        return last + ReceiverConstants.pliRepeatInterval
    }
}
