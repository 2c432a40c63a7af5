import LVBCore

/// A clock that moves only when a test (or the virtual network) advances it.
public final class ManualClock: Clock {
    /// Where every manual clock starts: 1,000 s monotonic, so subtracting small
    /// intervals from `now()` never underflows.
    public static let defaultStart = Instant(nanoseconds: 1_000_000_000_000)
    /// The wall time at `defaultStart` (November 2023).
    public static let defaultWallStart = WallTime(seconds: 1_700_000_000, nanoseconds: 0)

    private let start: Instant
    private let wallStart: WallTime
    private var current: Instant

    public init(start: Instant = ManualClock.defaultStart, wallStart: WallTime = ManualClock.defaultWallStart) {
        self.start = start
        self.wallStart = wallStart
        self.current = start
    }

    public func now() -> Instant { current }

    /// The wall time at start plus the monotonic time elapsed since.
    public func wallTime() -> WallTime {
        let elapsed = current.nanoseconds - start.nanoseconds
        let ns = UInt64(wallStart.nanoseconds) + elapsed % 1_000_000_000
        return WallTime(
            seconds: wallStart.seconds + elapsed / 1_000_000_000 + ns / 1_000_000_000,
            nanoseconds: UInt32(ns % 1_000_000_000))
    }

    /// Moves time forward; a negative duration is ignored (the clock is monotonic).
    public func advance(by duration: Duration) {
        current = current + duration
    }

    /// Moves time forward to `instant`; an earlier instant is ignored.
    public func advance(to instant: Instant) {
        if instant > current { current = instant }
    }
}
