#if canImport(Glibc)
import Glibc
#endif

/// A wall time broken down in the machine's local time zone: the console's
/// clock and recording file names.
public struct LocalTime {
    public let year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int, millisecond: Int

    public init(_ wall: WallTime) {
        var t = time_t(wall.seconds)
        var parts = tm()
        localtime_r(&t, &parts)
        year = Int(parts.tm_year) + 1900
        month = Int(parts.tm_mon) + 1
        day = Int(parts.tm_mday)
        hour = Int(parts.tm_hour)
        minute = Int(parts.tm_min)
        second = Int(parts.tm_sec)
        millisecond = Int(wall.nanoseconds / 1_000_000)
    }

    /// `YYYYMMDD-HHMMSS`, for file names.
    public var compactText: String {
        "\(year)\(Self.pad(month))\(Self.pad(day))-\(Self.pad(hour))\(Self.pad(minute))\(Self.pad(second))"
    }

    /// `HH:MM:SS.mmm`, for console lines.
    public var clockText: String {
        "\(Self.pad(hour)):\(Self.pad(minute)):\(Self.pad(second)).\(Self.pad(millisecond, to: 3))"
    }

    static func pad(_ v: Int, to width: Int = 2) -> String {
        let s = String(v)
        return String(repeating: "0", count: max(0, width - s.count)) + s
    }
}
