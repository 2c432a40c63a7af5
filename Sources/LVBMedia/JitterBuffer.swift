import DequeModule
import LVBCore

/// The adaptive delay of a jitter buffer: when media of a given RTP timestamp
/// should be released so that nearly all of it has arrived by then.
///
/// For each arrival (a complete video frame, an audio packet) the transit is
/// arrival time minus media time, on an arbitrary common origin. The baseline
/// is the smallest transit of the last 10 s: the delay of the luckiest packet,
/// which follows clock drift because old minima leave the window. Lateness is
/// transit minus the baseline at that moment; the target delay is the 95th
/// percentile of the last 3 s of lateness, within [0, 400 ms]. Media is
/// released at media time + baseline + target.
///
/// On a clean link transit is constant, lateness 0, and media leaves as it
/// arrives. A burst of old frames (a GOP cache sent to a new viewer) arrives
/// with ever smaller transit, so each frame lowers the baseline, has lateness
/// 0 and is due at once; the burst neither waits nor raises the target.
public struct JitterBuffer: Sendable {
    private struct Sample: Sendable {
        var at: Instant
        var value: Int64
    }

    public let clockRate: UInt32
    public let maxTargetDelay: Duration
    private var unwrapper = TimestampUnwrapper()
    private var origin: Int64?
    /// Ascending minima of transit (a monotonic deque): the front is the window minimum.
    private var minima: Deque<Sample> = []
    private var lateness: Deque<Sample> = []
    /// The values of `lateness`, kept sorted as samples come and go, so the
    /// percentile is an index rather than a sort of up to 3 s of samples on
    /// every arrival (2 % of a viewer's CPU in a profile).
    private var sortedLateness: [Int64] = []
    /// Cached percentile of `lateness`, in nanoseconds.
    private var target: Int64 = 0

    public init(clockRate: UInt32, maxTargetDelay: Duration = ReceiverConstants.maxTargetDelay) {
        self.clockRate = max(1, clockRate)
        self.maxTargetDelay = max(.zero, maxTargetDelay)
    }

    /// The delay added after the baseline transit.
    public var targetDelay: Duration { .nanoseconds(target) }

    /// The baseline transit in nanoseconds (arbitrary origin), or nil before any arrival.
    var baseline: Int64? { minima.first?.value }

    /// Records one arrival and returns its lateness: how much later than the
    /// baseline it came.
    @discardableResult
    public mutating func recordArrival(timestamp: UInt32, at arrival: Instant) -> Duration {
        expire(now: arrival, keepingBaseline: false)
        let unwrapped = unwrapper.unwrap(timestamp)
        if origin == nil { origin = unwrapped }
        // Wrapping arithmetic: absurd timestamps from a hostile sender give a
        // useless delay, never a trap.
        let transit = Int64(clamping: arrival.nanoseconds) &- mediaTime(unwrapped)
        while let last = minima.last, last.value >= transit { minima.removeLast() }
        minima.append(Sample(at: arrival, value: transit))
        let late = transit &- (minima.first?.value ?? transit)
        lateness.append(Sample(at: arrival, value: late))
        sortedLateness.insert(late, at: Self.insertionIndex(of: late, in: sortedLateness))
        if lateness.count > ReceiverConstants.maxLatenessSamples { dropOldestLateness() }
        recomputeTarget()
        return .nanoseconds(late)
    }

    /// When media with `timestamp` is due, or nil before any arrival.
    public func releaseTime(timestamp: UInt32) -> Instant? {
        guard let baseline else { return nil }
        let due = mediaTime(unwrapper.peek(timestamp)) &+ baseline &+ target
        return Instant(nanoseconds: UInt64(max(0, due)))
    }

    /// Drops samples that left their windows; call before reading `targetDelay` after a silence.
    public mutating func expire(now: Instant) {
        expire(now: now, keepingBaseline: true)
    }

    private mutating func expire(now: Instant, keepingBaseline: Bool) {
        let old = lateness.count
        while let first = minima.first, first.at + ReceiverConstants.baselineWindow <= now,
              !keepingBaseline || minima.count > 1 {
            minima.removeFirst()
        }
        while let first = lateness.first, first.at + ReceiverConstants.latenessWindow <= now {
            dropOldestLateness()
        }
        if lateness.count != old { recomputeTarget() }
    }

    /// Forgets the baseline (the next arrival sets a new one), for when playout
    /// restarts after the stream paused and its timing may have changed.
    public mutating func resetBaseline() {
        minima.removeAll()
    }

    /// Media time in nanoseconds since the first timestamp seen.
    private func mediaTime(_ unwrapped: Int64) -> Int64 {
        Self.nanoseconds(ticks: unwrapped &- (origin ?? unwrapped), rate: Int64(clockRate))
    }

    /// `duration` in ticks of a `rate` Hz clock.
    static func ticks(_ duration: Duration, rate: Int64) -> Int64 {
        let ns = duration.nanosecondsClamped
        return (ns / 1_000_000_000) &* rate &+ (ns % 1_000_000_000) * rate / 1_000_000_000
    }

    /// `ticks` of a `rate` Hz clock in nanoseconds, saturating far beyond any real stream.
    static func nanoseconds(ticks: Int64, rate: Int64) -> Int64 {
        let (whole, overflow) = (ticks / rate).multipliedReportingOverflow(by: 1_000_000_000)
        if overflow || whole > Int64.max / 4 || whole < -(Int64.max / 4) { return ticks < 0 ? Int64.min / 4 : Int64.max / 4 }
        return whole + (ticks % rate) * 1_000_000_000 / rate
    }

    private mutating func dropOldestLateness() {
        let value = lateness.removeFirst().value
        let i = Self.insertionIndex(of: value, in: sortedLateness)
        // The value is there: insertionIndex finds the first element not below it.
        if i < sortedLateness.count, sortedLateness[i] == value { sortedLateness.remove(at: i) }
    }

    /// The first index whose element is not below `value` (binary search).
    private static func insertionIndex(of value: Int64, in sorted: [Int64]) -> Int {
        var low = 0, high = sorted.count
        while low < high {
            let mid = (low + high) / 2
            if sorted[mid] < value { low = mid + 1 } else { high = mid }
        }
        return low
    }

    private mutating func recomputeTarget() {
        let sorted = sortedLateness
        guard !sorted.isEmpty else { target = 0; return }
        let rank = Int((Double(sorted.count - 1) * ReceiverConstants.latenessPercentile).rounded(.up))
        target = min(max(0, sorted[min(rank, sorted.count - 1)]), maxTargetDelay.nanosecondsClamped)
    }
}
