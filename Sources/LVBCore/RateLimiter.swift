/// Token buckets of one rate and burst per key (a node, a source address),
/// on an injected clock.
///
/// Each bucket is kept as GCRA's "theoretical arrival time" in integer
/// nanoseconds: a bucket is full when that time is not after now, and one
/// token costs `interval`. So `rate` per second with `burst` at once is exact
/// on a manual clock (no floating-point drift), and a full bucket holds no
/// state at all — idle buckets are swept without changing any outcome.
public struct RateLimiter<Key: Hashable> {
    /// Nanoseconds one token takes to refill.
    public let interval: UInt64
    /// How far ahead of now the arrival time may run: (burst − 1) tokens.
    public let tolerance: UInt64
    private var arrival: [Key: UInt64] = [:]
    private let sweepThreshold: Int
    private var sweepAt: Int

    /// `count` tokens refill every `per`; at most `burst` are banked. The
    /// table is swept of full buckets once it holds `sweepThreshold` keys.
    public init(count: Int, per: Duration = .seconds(1), burst: Int, sweepThreshold: Int = 1024) {
        self.sweepThreshold = sweepThreshold
        sweepAt = sweepThreshold
        let perNs = UInt64(max(1, per.nanosecondsClamped))
        interval = perNs / UInt64(max(1, count))
        tolerance = interval * UInt64(max(1, burst) - 1)
    }

    /// Whether `id` has a token now, without taking it.
    public func wouldAllow(_ id: Key, now: Instant) -> Bool {
        guard let t = arrival[id], t > now.nanoseconds else { return true }
        return t - now.nanoseconds <= tolerance
    }

    /// Takes a token if `id` has one.
    public mutating func allow(_ id: Key, now: Instant) -> Bool {
        guard wouldAllow(id, now: now) else { return false }
        take(id, now: now)
        return true
    }

    /// Takes `cost` tokens at once if `id` has them (a byte budget: one token a byte).
    public mutating func allow(_ id: Key, cost: Int, now: Instant) -> Bool {
        let start = max(arrival[id] ?? 0, now.nanoseconds)
        let next = start &+ interval &* UInt64(max(1, cost))
        guard next - now.nanoseconds <= tolerance &+ interval else { return false }
        arrival[id] = next
        if arrival.count >= sweepAt { sweep(now: now) }
        return true
    }

    /// Takes a token whether or not one is left (for counting failures).
    public mutating func take(_ id: Key, now: Instant) {
        let start = max(arrival[id] ?? 0, now.nanoseconds)
        arrival[id] = start &+ interval
        if arrival.count >= sweepAt { sweep(now: now) }
    }

    /// Drops full buckets; sweeps again only once the table has doubled, so
    /// many busy authors cost amortised O(1) per event.
    private mutating func sweep(now: Instant) {
        arrival = arrival.filter { $0.value > now.nanoseconds }
        sweepAt = max(sweepThreshold, arrival.count * 2)
    }

    public var trackedCount: Int { arrival.count }
}
