#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A point on a monotonic clock, in nanoseconds from an arbitrary origin.
public struct Instant: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var nanoseconds: UInt64
    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    public static func < (a: Instant, b: Instant) -> Bool { a.nanoseconds < b.nanoseconds }
    public static func + (a: Instant, d: Duration) -> Instant {
        Instant(nanoseconds: a.nanoseconds &+ UInt64(max(0, d.nanosecondsClamped)))
    }
    /// Time elapsed from `b` to `a`; zero if `b` is later.
    public static func - (a: Instant, b: Instant) -> Duration {
        a >= b ? .nanoseconds(Int64(a.nanoseconds - b.nanoseconds)) : .zero
    }
    public var description: String { "\(Double(nanoseconds) / 1e9)s" }
}

public extension Duration {
    /// Whole nanoseconds, clamped to Int64.
    var nanosecondsClamped: Int64 {
        let (s, atto) = components
        let (ns, o1) = s.multipliedReportingOverflow(by: 1_000_000_000)
        if o1 { return s < 0 ? .min : .max }
        let (sum, o2) = ns.addingReportingOverflow(atto / 1_000_000_000)
        return o2 ? .max : sum
    }
    var seconds: Double { Double(nanosecondsClamped) / 1e9 }
    var milliseconds: Double { Double(nanosecondsClamped) / 1e6 }
}

/// Wall-clock time: seconds and nanoseconds since the Unix epoch.
public struct WallTime: Comparable, Sendable {
    public var seconds: UInt64
    public var nanoseconds: UInt32
    public init(seconds: UInt64, nanoseconds: UInt32) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
    }
    public static func < (a: WallTime, b: WallTime) -> Bool {
        (a.seconds, a.nanoseconds) < (b.seconds, b.nanoseconds)
    }

    /// Milliseconds since the Unix epoch (event timestamps).
    public var milliseconds: UInt64 { seconds * 1000 + UInt64(nanoseconds / 1_000_000) }
}

/// The only source of time in the project: injected so protocol code runs on a
/// manual clock in tests (toxcore's Mono_Time does the same).
public protocol Clock: AnyObject {
    /// Monotonic time, for timers and intervals.
    func now() -> Instant
    /// Wall-clock time, for handshake timestamps and human-readable output.
    func wallTime() -> WallTime
}

/// The process's real clocks (CLOCK_MONOTONIC and CLOCK_REALTIME).
public final class SystemClock: Clock, @unchecked Sendable {
    public static let shared = SystemClock()
    public init() {}

    public func now() -> Instant {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Instant(nanoseconds: UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec))
    }

    public func wallTime() -> WallTime {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return WallTime(seconds: UInt64(ts.tv_sec), nanoseconds: UInt32(ts.tv_nsec))
    }
}
