import LVBCore

/// Reception statistics of one RTP source, kept as RFC 3550 Appendix A does,
/// and the report block (RFC 3550 §6.4.1) a receiver report carries for it.
///
/// Differences from the appendix, and why: the session is authenticated, so
/// there is no probation (§A.1 MIN_SEQUENTIAL); duplicates are recognised in a
/// window of recent sequence numbers and not counted as received (so loss is
/// not hidden by them); jitter (§A.8) is updated only by packets that advance
/// the highest sequence number, so NACK retransmissions do not inflate it.
public struct ReceiveStatistics: Sendable {
    /// How the statistics classified a packet.
    public enum Arrival: Equatable, Sendable {
        /// The first packet, or one that advances the highest sequence number.
        case inOrder
        /// Older than the highest sequence number and not seen before (reordered or retransmitted).
        case outOfOrder
        /// A sequence number already received.
        case duplicate
        /// A jump of `maxDropout` or more (§A.1 "bad_seq"); two in a row restart the statistics.
        case jump
    }

    public let ssrc: UInt32
    public let clockRate: UInt32

    // RFC 3550 §A.1 source state.
    private var started = false
    private var maxSeq: UInt16 = 0
    private var cycles: UInt32 = 0
    private var baseSeq: UInt32 = 0
    private var badSeq: UInt32 = (1 << 16) + 1  // §A.1: "so seq == bad_seq is false"
    private var received: Int64 = 0
    private var expectedPrior: Int64 = 0
    private var receivedPrior: Int64 = 0
    // RFC 3550 §A.8.
    private var lastTransit: UInt32?
    /// Interarrival jitter in RTP timestamp units.
    public private(set) var jitter: Double = 0
    private var seen: [Int64]
    private var lastSR: (middle: UInt32, at: Instant)?

    public private(set) var bytes: Int64 = 0
    public private(set) var duplicates: Int64 = 0
    public private(set) var outOfOrder: Int64 = 0

    public init(ssrc: UInt32, clockRate: UInt32) {
        self.ssrc = ssrc
        self.clockRate = max(1, clockRate)
        seen = [Int64](repeating: -1, count: ReceiverConstants.duplicateWindow)
    }

    /// Packets received, duplicates excluded.
    public var packetsReceived: Int64 { received }
    /// RFC 3550 §A.3: highest sequence number with its wrap count in the upper 16 bits.
    public var extendedHighestSequence: UInt32 { cycles &+ UInt32(maxSeq) }
    /// RFC 3550 §A.3: packets expected since the first.
    public var expected: Int64 { started ? Int64(extendedHighestSequence) - Int64(baseSeq) + 1 : 0 }
    /// Expected minus received (not clamped; the report block clamps it to 24 bits).
    public var cumulativeLost: Int64 { expected - received }
    public var jitterMilliseconds: Double { jitter * 1000 / Double(clockRate) }

    public mutating func record(_ packet: RTPPacket, at arrival: Instant) -> Arrival {
        record(sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp,
               payloadBytes: packet.payload.count, at: arrival)
    }

    /// Call once for every RTP packet of this source as it arrives.
    public mutating func record(sequenceNumber seq: UInt16, timestamp: UInt32, payloadBytes: Int,
                                at arrival: Instant) -> Arrival {
        guard started else {
            restart(seq)
            bytes += Int64(payloadBytes)
            updateJitter(timestamp, arrival)
            return .inOrder
        }
        // RFC 3550 §A.1 update_seq.
        let udelta = seq &- maxSeq
        if udelta == 0 { return markDuplicate() }
        let arrivalKind: Arrival
        let ext: Int64
        if udelta < ReceiverConstants.maxDropout {
            if seq < maxSeq { cycles &+= 1 << 16 }  // wrapped
            maxSeq = seq
            ext = Int64(extendedHighestSequence)
            arrivalKind = .inOrder
        } else if Int(udelta) <= (1 << 16) - Int(ReceiverConstants.maxMisorder) {
            // A very large jump: a restarted sender if the next packet follows it.
            if UInt32(seq) == badSeq {
                restart(seq)
                bytes += Int64(payloadBytes)
                return .inOrder
            }
            badSeq = UInt32(seq &+ 1)
            return .jump
        } else {
            ext = Int64(extendedHighestSequence) - Int64(maxSeq &- seq)
            guard ext >= 0 else { return .jump }  // before the first packet's cycle: nothing to count
            if ext < Int64(baseSeq) { baseSeq = UInt32(ext) }  // reordered ahead of the first packet
            if seen[slot(ext)] == ext { return markDuplicate() }
            arrivalKind = .outOfOrder
            outOfOrder += 1
        }
        seen[slot(ext)] = ext
        received += 1
        bytes += Int64(payloadBytes)
        if arrivalKind == .inOrder { updateJitter(timestamp, arrival) }
        return arrivalKind
    }

    /// Remembers the last sender report of this source for LSR/DLSR (RFC 3550 §6.4.1).
    public mutating func recordSenderReport(_ report: RTCPSenderReport, at arrival: Instant) {
        guard report.ssrc == ssrc else { return }
        lastSR = (UInt32(truncatingIfNeeded: report.ntpTimestamp >> 16), arrival)
    }

    /// The report block for this source; starts a new interval for fraction lost (RFC 3550 §A.3).
    public mutating func reportBlock(now: Instant) -> RTCPReportBlock {
        let expected = self.expected
        let expectedInterval = expected - expectedPrior
        let receivedInterval = received - receivedPrior
        expectedPrior = expected
        receivedPrior = received
        let lostInterval = expectedInterval - receivedInterval
        let fraction = expectedInterval == 0 || lostInterval <= 0
            ? 0 : UInt8(clamping: (lostInterval << 8) / expectedInterval)
        let range = ReceiverConstants.cumulativeLostRange
        let lost = Int32(min(max(cumulativeLost, range.lowerBound), range.upperBound))
        var dlsr: UInt32 = 0
        if let lastSR {
            // DLSR is in units of 1/65536 s.
            let ns = UInt64(max(0, (now - lastSR.at).nanosecondsClamped))
            dlsr = UInt32(clamping: ((ns / 1_000_000_000) << 16) + ((ns % 1_000_000_000) << 16) / 1_000_000_000)
        }
        return RTCPReportBlock(ssrc: ssrc, fractionLost: fraction, cumulativeLost: lost,
                               extendedHighestSequence: extendedHighestSequence,
                               jitter: UInt32(jitter.rounded(.down)), lastSenderReport: lastSR?.middle ?? 0,
                               delaySinceLastSenderReport: dlsr)
    }

    /// RFC 3550 §A.1 init_seq (with no probation).
    private mutating func restart(_ seq: UInt16) {
        started = true
        baseSeq = UInt32(seq)
        maxSeq = seq
        badSeq = (1 << 16) + 1
        cycles = 0
        received = 1
        expectedPrior = 0
        receivedPrior = 0
        for i in seen.indices { seen[i] = -1 }
        seen[slot(Int64(seq))] = Int64(seq)
    }

    private mutating func markDuplicate() -> Arrival {
        duplicates += 1
        return .duplicate
    }

    private func slot(_ ext: Int64) -> Int { Int(ext % Int64(seen.count)) }

    /// RFC 3550 §A.8: J += (|D(i-1, i)| - J) / 16, with transit in timestamp units.
    private mutating func updateJitter(_ timestamp: UInt32, _ arrival: Instant) {
        let ns = arrival.nanoseconds, rate = UInt64(clockRate)
        let ticks = (ns / 1_000_000_000) &* rate &+ (ns % 1_000_000_000) * rate / 1_000_000_000
        let transit = UInt32(truncatingIfNeeded: ticks) &- timestamp
        if let lastTransit {
            let d = abs(Double(Int32(bitPattern: transit &- lastTransit)))
            jitter += (d - jitter) * ReceiverConstants.jitterGain
        }
        lastTransit = transit
    }
}
