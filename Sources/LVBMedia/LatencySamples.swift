/// Glass-to-glass latencies (ms) of one stats interval, and of the whole run.
public struct LatencySamples: Sendable {
    public init() {}
    private var interval: [Double] = []
    private var all: [Double] = []
    private static let maxKept = 100_000

    public mutating func add(_ ms: Double) {
        interval.append(ms)
        if all.count < Self.maxKept { all.append(ms) }
    }

    /// p50 and p95 of the samples since the last call, then starts a new interval.
    public mutating func takeInterval() -> (p50: Double, p95: Double, count: Int)? {
        defer { interval.removeAll(keepingCapacity: true) }
        return Self.percentiles(interval)
    }

    public var overall: (p50: Double, p95: Double, count: Int)? { Self.percentiles(all) }

    static func percentiles(_ values: [Double]) -> (p50: Double, p95: Double, count: Int)? {
        guard !values.isEmpty else { return nil }
        let s = values.sorted()
        func at(_ q: Double) -> Double { s[min(s.count - 1, Int((q * Double(s.count - 1)).rounded()))] }
        return (at(0.5), at(0.95), s.count)
    }
}
