import LVBCore

/// A VP8 frame whose packets have all arrived, waiting for its turn at the decoder.
struct QueuedVideoFrame: Sendable {
    var data: [UInt8]
    var isKeyframe: Bool
    var pictureID: UInt16?
    var timestamp: UInt32
    /// Unwrapped sequence numbers of the frame's first and last packets.
    var firstSeq: Int64
    var lastSeq: Int64
    /// Capture time (NTP 32.32) carried by the frame's first packet.
    var captureTime: UInt64?
    /// When the frame became complete.
    var arrival: Instant
    /// A packet of the frame came only after we had NACKed it.
    var repaired: Bool

    /// True when this frame is the next one in decode order after `previous`:
    /// by PictureID (RFC 7741 §4.2) when both carry one, else by sequence numbers.
    func follows(_ previous: DecodedVideoFrame) -> Bool {
        if let id = pictureID, let previousID = previous.pictureID {
            return id == (previousID &+ 1) & 0x7FFF
        }
        return firstSeq == previous.lastSeq + 1
    }
}

/// What the decoder last consumed, to tell whether the next frame follows it.
struct DecodedVideoFrame: Sendable {
    var pictureID: UInt16?
    var lastSeq: Int64
}

/// Frames being assembled and frames complete in decode order.
///
/// Each RTP timestamp gets its own `VP8FrameAssembler`: one shared assembler
/// gives up on a frame as soon as a newer one completes, which would throw
/// away every frame a NACK could still repair.
struct VideoFrameBuffer: Sendable {
    private struct Partial: Sendable {
        var assembler = VP8FrameAssembler(maxPendingFrames: 1, maxPacketsPerFrame: ReceiverConstants.maxPacketsPerFrame)
        var lowest: Int64
        var highest: Int64
        var captureTime: UInt64?
        var repaired = false
    }

    enum Insertion: Sendable {
        /// Part of a frame still missing packets.
        case partial
        /// The packet completed this frame, now queued in decode order.
        case complete(QueuedVideoFrame)
        /// The packet belongs to a frame already decoded, dropped, or complete.
        case stale
        /// The frame claimed more packets than an assembler holds; it was dropped.
        case oversized
    }

    private var partials: [UInt32: Partial] = [:]
    private var readyTimestamps: Set<UInt32> = []
    /// Complete frames, ascending by first sequence number.
    private(set) var ready: [QueuedVideoFrame] = []
    /// Bytes of the frames in `ready`.
    private(set) var readyBytes = 0
    /// Packets at or before this sequence number belong to frames already decoded or dropped.
    private(set) var consumedThrough: Int64?

    /// Adds one packet (`seq` is its unwrapped sequence number); fails only
    /// when its VP8 payload descriptor is malformed.
    mutating func insert(_ packet: RTPPacket, seq: Int64, repaired: Bool,
                         at now: Instant) throws(MediaError) -> Insertion {
        if let consumedThrough, seq <= consumedThrough { return .stale }
        let ts = packet.timestamp
        if readyTimestamps.contains(ts) { return .stale }
        var partial = partials[ts] ?? Partial(lowest: seq, highest: seq, captureTime: packet.captureTime)
        let outputs = try partial.assembler.insert(packet)
        if seq < partial.lowest {
            partial.lowest = seq
            partial.captureTime = packet.captureTime ?? partial.captureTime
        }
        partial.highest = max(partial.highest, seq)
        partial.repaired = partial.repaired || repaired
        for output in outputs {
            switch output {
            case let .frame(frame):
                partials[ts] = nil
                let queued = QueuedVideoFrame(
                    data: frame.data, isKeyframe: frame.isKeyframe, pictureID: frame.pictureID,
                    timestamp: ts, firstSeq: partial.lowest, lastSeq: partial.highest,
                    captureTime: partial.captureTime, arrival: now, repaired: partial.repaired)
                enqueue(queued)
                return .complete(queued)
            case .incomplete:
                partials[ts] = nil
                return .oversized
            }
        }
        partials[ts] = partial
        if partials.count > ReceiverConstants.maxPartialFrames,
           let oldest = partials.min(by: { $0.value.lowest < $1.value.lowest })?.key {
            partials[oldest] = nil
        }
        return .partial
    }

    /// Takes the first frame in decode order out of the queue and marks
    /// everything up to its last packet as consumed.
    mutating func removeFirst() -> QueuedVideoFrame? {
        guard !ready.isEmpty else { return nil }
        let frame = ready.removeFirst()
        readyBytes -= frame.data.count
        readyTimestamps.remove(frame.timestamp)
        consumedThrough = max(consumedThrough ?? frame.lastSeq, frame.lastSeq)
        if let consumedThrough {
            partials = partials.filter { $0.value.highest > consumedThrough }
        }
        return frame
    }

    private mutating func enqueue(_ frame: QueuedVideoFrame) {
        var lo = 0, hi = ready.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if ready[mid].firstSeq < frame.firstSeq { lo = mid + 1 } else { hi = mid }
        }
        ready.insert(frame, at: lo)
        readyBytes += frame.data.count
        readyTimestamps.insert(frame.timestamp)
    }
}
