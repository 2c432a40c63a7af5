import LVBCore

/// The viewer side of an Opus stream, sans I/O: RTP packets in; one decoded
/// 20 ms frame per timestamp slot, and receiver reports, out.
///
/// Slots play in timestamp order at their jitter-buffer time. A packet missing
/// at its slot is rebuilt from the next packet's in-band FEC when that one is
/// already here, else concealed; after 200 ms of concealment in a row playout
/// stops until packets resume. Audio queued far behind live (a burst of old
/// packets after joining) is dropped to get back to live. The owner calls
/// `receive` per packet, then `poll`, and `poll` again at `nextWakeup`.
public final class AudioReceiver {
    private struct Queued {
        var timestamp: Int64
        var payload: [UInt8]
        var captureTime: UInt64?
        var arrival: Instant
    }

    public let ssrc: UInt32
    public let config: AudioReceiverConfig
    /// The sender's SSRC, learned from the first packet.
    public private(set) var mediaSSRC: UInt32?

    private let clock: Clock
    private let decoder: OpusDecoder
    private var statistics: ReceiveStatistics?
    private var jitter: JitterBuffer
    private var timestamps = TimestampUnwrapper()
    private var counters = AudioReceiverStats()
    /// Packets waiting to play, ascending by unwrapped timestamp.
    private var queue: [Queued] = []
    /// The next slot to play; nil before playout starts and after it stopped.
    private var cursor: Int64?
    /// Packets before this timestamp are late: their slot has played.
    private var playedThrough: Int64?
    private var concealmentRun = 0
    /// Playout stopped for lack of packets; the next arrival sets a new baseline.
    private var stopped = false
    private var nextReport: Instant?
    /// When a slot last had no packet; while loss is recent, a missing slot
    /// waits up to one frame for the next packet and its in-band FEC.
    private var lastLossAt: Instant?
    private var waitingForFEC: Instant?

    private let frameTicks = ReceiverConstants.audioFrameTicks

    public init(clock: Clock, ssrc: UInt32, config: AudioReceiverConfig = .init()) throws(MediaError) {
        self.clock = clock
        self.ssrc = ssrc
        self.config = config
        self.decoder = try OpusDecoder(sampleRate: Int(ReceiverConstants.audioClockRate), channels: config.channels)
        self.jitter = JitterBuffer(clockRate: ReceiverConstants.audioClockRate, maxTargetDelay: config.maxTargetDelay)
    }

    public var stats: AudioReceiverStats {
        var s = counters
        s.lost = Int(max(0, statistics?.cumulativeLost ?? 0))
        s.duplicates = Int(statistics?.duplicates ?? 0)
        s.currentDelay = jitter.targetDelay
        s.jitter = statistics?.jitterMilliseconds ?? 0
        return s
    }

    /// Call for every RTP packet that arrives for this stream.
    public func receive(_ packet: RTPPacket) {
        let now = clock.now()
        guard packet.payloadType == config.payloadType, (try? OpusPayload.toc(of: packet.payload)) != nil else {
            counters.malformedPackets += 1
            return
        }
        if mediaSSRC == nil {
            mediaSSRC = packet.ssrc
            statistics = ReceiveStatistics(ssrc: packet.ssrc, clockRate: ReceiverConstants.audioClockRate)
            nextReport = now + config.reportInterval
        }
        guard packet.ssrc == mediaSSRC else { counters.foreignPackets += 1; return }
        counters.packets += 1
        guard statistics?.record(packet, at: now) != .duplicate else { return }

        if stopped {
            jitter.resetBaseline()
            stopped = false
        }
        jitter.recordArrival(timestamp: packet.timestamp, at: now)
        let ts = timestamps.unwrap(packet.timestamp)
        if let playedThrough, ts < playedThrough { counters.late += 1; return }
        let i = insertionIndex(ts)
        guard i == queue.count || queue[i].timestamp != ts else { return }
        queue.insert(Queued(timestamp: ts, payload: Array(packet.payload), captureTime: packet.captureTime,
                            arrival: now), at: i)
        if queue.count > ReceiverConstants.maxQueuedAudioPackets {
            let dropped = queue.removeFirst()
            counters.discarded += 1
            if cursor != nil { advance(to: dropped.timestamp + frameTicks) }
        }
    }

    /// Call for RTCP from the media sender; sender reports feed LSR/DLSR.
    public func receiveRTCP(_ packet: RTCPPacket) {
        guard case let .senderReport(report) = packet, report.ssrc == mediaSSRC else { return }
        statistics?.recordSenderReport(report, at: clock.now())
    }

    /// Plays every slot that is due and returns it with any feedback to send.
    public func poll() -> [AudioReceiverOutput] {
        let now = clock.now()
        guard mediaSSRC != nil else { return [] }
        jitter.expire(now: now)
        var out: [AudioReceiverOutput] = []
        play(now: now, into: &out)
        if let due = nextReport, now >= due, let block = statistics?.reportBlock(now: now),
           let report = try? RTCPReceiverReport(ssrc: ssrc, reportBlocks: [block]) {
            out.append(.feedback([.receiverReport(report)]))
            nextReport = max(due + config.reportInterval, now)
        }
        return out
    }

    /// The next time `poll` has work, if any (new packets may bring it sooner).
    public var nextWakeup: Instant? {
        let slot = cursor ?? queue.first?.timestamp
        var release = slot.flatMap { jitter.releaseTime(timestamp: UInt32(truncatingIfNeeded: $0)) }
        if let wait = waitingForFEC, let r = release, wait > r { release = wait }
        return [release, nextReport].compactMap { $0 }.min()
    }

    // MARK: Playout

    private func play(now: Instant, into out: inout [AudioReceiverOutput]) {
        if cursor == nil, let first = queue.first {
            cursor = first.timestamp
            concealmentRun = 0
        }
        while let slot = cursor, let release = jitter.releaseTime(timestamp: UInt32(truncatingIfNeeded: slot)),
              release <= now {
            let behind = now - release > ReceiverConstants.maxPlayoutLag
            if let head = queue.first, head.timestamp < slot + frameTicks {
                queue.removeFirst()
                if behind {
                    counters.discarded += 1
                    advance(to: head.timestamp + frameTicks)
                    continue
                }
                let pcm = decode(head.payload)
                concealmentRun = 0
                waitingForFEC = nil
                out.append(.audio(ReceivedAudioFrame(
                    pcm: pcm, encoded: head.payload, rtpTimestamp: UInt32(truncatingIfNeeded: head.timestamp),
                    captureTime: head.captureTime, concealed: false, arrival: head.arrival)))
                advance(to: head.timestamp + max(frameTicks, Int64(pcm.count / max(1, config.channels))))
                continue
            }
            // The slot's packet is missing.
            if behind {
                // Jump to the next packet or to the first slot within the lag, whichever is
                // sooner, instead of stepping through what may be hours of timestamps.
                let excess = now - release - ReceiverConstants.maxPlayoutLag
                let frames = JitterBuffer.ticks(excess, rate: Int64(ReceiverConstants.audioClockRate)) / frameTicks + 1
                let live = slot &+ frames &* frameTicks
                advance(to: max(slot + frameTicks, min(queue.first?.timestamp ?? live, live)))
                continue
            }
            let nextArrived = queue.first.map { $0.timestamp < slot + 2 * frameTicks } ?? false
            if !nextArrived, let seen = lastLossAt, now - seen < ReceiverConstants.fecWaitAfterLoss {
                let deadline = release + ReceiverConstants.fecWait
                if now < deadline {
                    waitingForFEC = deadline
                    break
                }
            }
            waitingForFEC = nil
            lastLossAt = now
            if let next = queue.first, next.timestamp < slot + 2 * frameTicks,
               let pcm = try? decoder.decodeFEC(next.payload), pcm.count == blockSize {
                counters.fecRecovered += 1
                concealmentRun = 0
                out.append(.audio(missingSlot(slot, pcm, concealed: false)))
            } else if concealmentRun < ReceiverConstants.maxConcealmentRun {
                counters.concealed += 1
                concealmentRun += 1
                out.append(.audio(missingSlot(slot, conceal(), concealed: true)))
            } else {
                // The stream paused: play nothing until packets resume.
                cursor = nil
                stopped = true
                break
            }
            advance(to: slot + frameTicks)
        }
    }

    private func advance(to timestamp: Int64) {
        cursor = timestamp
        playedThrough = max(playedThrough ?? timestamp, timestamp)
    }

    private func missingSlot(_ slot: Int64, _ pcm: [Int16], concealed: Bool) -> ReceivedAudioFrame {
        ReceivedAudioFrame(pcm: pcm, encoded: nil, rtpTimestamp: UInt32(truncatingIfNeeded: slot),
                           captureTime: nil, concealed: concealed, arrival: nil)
    }

    private func decode(_ payload: [UInt8]) -> [Int16] {
        do {
            return fitted(try decoder.decode(payload))
        } catch {
            counters.decodeErrors += 1
            return conceal()
        }
    }

    /// Every slot is one 20 ms frame: a packet of another duration (legal
    /// Opus, but not this stream's format) is concealed instead, so the
    /// output timeline keeps exactly one 20 ms block per slot.
    private func fitted(_ pcm: [Int16]) -> [Int16] {
        guard pcm.count != blockSize else { return pcm }
        counters.decodeErrors += 1
        return conceal()
    }

    /// Samples in one 20 ms slot, all channels.
    private var blockSize: Int { decoder.frameSize * decoder.channels }

    private func conceal() -> [Int16] {
        guard let pcm = try? decoder.decode(nil), pcm.count == blockSize else { return [Int16](repeating: 0, count: blockSize) }
        return pcm
    }

    private func insertionIndex(_ ts: Int64) -> Int {
        var lo = 0, hi = queue.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if queue[mid].timestamp < ts { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
}
