import LVBCore

/// The media layer's numbers (STYLE rule 2): values fixed by a specification
/// or by this project's protocol (man/lvbnode-protocol.7), then tuning values.
public enum MediaConstants {
    // MARK: Specification and protocol values

    /// Dynamic RTP payload types (RFC 3551 §6) this project fixes instead of
    /// negotiating: VP8 (RFC 7741) and Opus (RFC 7587). The SDP written by
    /// `--sdp` names the same numbers.
    public static let videoPayloadType: UInt8 = 96
    public static let audioPayloadType: UInt8 = 111
    /// RTP clock rates: 90 kHz for video (RFC 7741 §6.1), 48 kHz for Opus (RFC 7587 §4.1).
    public static let videoClockRate = 90_000
    public static let audioClockRate = 48_000
    /// Samples per 20 ms Opus frame at 48 kHz.
    public static let audioFrameSamples = 960
    /// RTP header (12) + one-byte extension header (4) + capture time element
    /// (1 + 8, padded to 12): what every media packet spends before its payload.
    public static let rtpOverhead = 28
    /// Seconds from 1900 (NTP era 0) to 1970 (RFC 5905 §6).
    public static let ntpUnixOffset: UInt64 = 2_208_988_800

    // MARK: Tuning values

    /// Packets the sender keeps to answer NACKs (about 10 s of 1 Mbit/s video).
    public static let sendHistoryPackets = 1024
    /// The GOP cache holds at most this many bytes; a longer GOP is not cached
    /// (joiners then wait for a keyframe).
    public static let gopCacheMaxBytes = 4 << 20
    /// A viewer gets the GOP cache at most once in this long.
    public static let gopBurstInterval: Duration = .seconds(10)
    /// A viewer that sends no RTCP for this long stops receiving media.
    public static let subscriberTimeout: Duration = .seconds(5)
    /// Sender reports go to each viewer this often.
    public static let senderReportInterval: Duration = .seconds(1)
    /// The encoder is asked for a keyframe at most this often, however many PLIs arrive.
    public static let keyframeRequestInterval: Duration = .milliseconds(250)
    /// Retransmissions to one viewer may use this many times the video target
    /// bitrate (bounds what a NACK can make the host send).
    public static let retransmitBudgetFactor = 2.0
    /// Rate control: back off above this loss, probe up below `probeLoss`.
    public static let backoffLoss = 0.10
    public static let probeLoss = 0.02
    /// Probing raises the target by this factor per second of low loss.
    public static let probeGainPerSecond = 1.08
    /// The lowest video target rate control goes to.
    public static let minVideoKbps = 100
    /// Opus bitrate of the room's audio.
    public static let audioBitrate = 48_000
}

/// NTP 64-bit timestamps (RFC 5905 §6: seconds since 1900 in the upper 32
/// bits, fraction in the lower 32), as carried by the capture-time extension
/// and RTCP sender reports.
public enum NTPTime {
    public static func from(_ wall: WallTime) -> UInt64 {
        let seconds = wall.seconds &+ MediaConstants.ntpUnixOffset
        let fraction = (UInt64(wall.nanoseconds) << 32) / 1_000_000_000
        return seconds << 32 | fraction
    }

    /// `later − earlier` in milliseconds (negative when `later` is earlier).
    public static func milliseconds(from earlier: UInt64, to later: UInt64) -> Double {
        Double(Int64(bitPattern: later &- earlier)) * 1000 / 4_294_967_296
    }

    /// The middle 32 bits (RFC 3550 §6.4.1 LSR/DLSR units: 1/65536 s).
    public static func middle32(_ ntp: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: ntp >> 16) }
}
