import LVBCore

/// Settings of an `AudioReceiver`.
public struct AudioReceiverConfig: Sendable {
    /// RTP payload type of the Opus stream; packets of other types are counted and dropped.
    public var payloadType: UInt8
    /// Decoded channels (the sender's stream is mono).
    public var channels: Int
    /// How often a receiver report goes out once packets flow.
    public var reportInterval: Duration
    /// Upper bound of the jitter-buffer delay.
    public var maxTargetDelay: Duration

    public init(payloadType: UInt8 = ReceiverConstants.audioPayloadType, channels: Int = 1,
                reportInterval: Duration = ReceiverConstants.reportInterval,
                maxTargetDelay: Duration = ReceiverConstants.maxTargetDelay) {
        self.payloadType = payloadType
        self.channels = channels
        self.reportInterval = reportInterval
        self.maxTargetDelay = maxTargetDelay
    }
}

/// 20 ms of decoded audio for one RTP timestamp slot.
public struct ReceivedAudioFrame: Sendable {
    /// Interleaved samples at 48 kHz: 960 per channel for a 20 ms frame.
    public var pcm: [Int16]
    /// The Opus packet decoded; nil when the audio was concealed or recovered by FEC.
    public var encoded: [UInt8]?
    public var rtpTimestamp: UInt32
    /// The sender's capture time (NTP 32.32); nil when concealed or recovered by FEC.
    public var captureTime: UInt64?
    /// True when the audio is loss concealment (PLC), not decoded data.
    public var concealed: Bool
    /// When the packet arrived; nil when concealed or recovered by FEC.
    public var arrival: Instant?

    public init(pcm: [Int16], encoded: [UInt8]?, rtpTimestamp: UInt32, captureTime: UInt64?, concealed: Bool, arrival: Instant?) {
        self.pcm = pcm
        self.encoded = encoded
        self.rtpTimestamp = rtpTimestamp
        self.captureTime = captureTime
        self.concealed = concealed
        self.arrival = arrival
    }
}

/// What `AudioReceiver.poll()` hands its owner.
public enum AudioReceiverOutput: Sendable {
    case audio(ReceivedAudioFrame)
    /// RTCP to send to the media sender (receiver reports).
    case feedback([RTCPPacket])
}

/// Counters of an `AudioReceiver`.
public struct AudioReceiverStats: Equatable, Sendable {
    /// RTP packets of the media source, duplicates included.
    public var packets = 0
    /// Packets expected but never received (RFC 3550 §A.3).
    public var lost = 0
    /// Frames rebuilt from the next packet's in-band FEC.
    public var fecRecovered = 0
    /// Frames concealed (PLC).
    public var concealed = 0
    /// Packets that arrived after their slot had played.
    public var late = 0
    /// Packets dropped to get back to live (queued far beyond the target delay).
    public var discarded = 0
    /// Jitter-buffer target delay.
    public var currentDelay: Duration = .zero
    /// RFC 3550 §A.8 interarrival jitter, in milliseconds.
    public var jitter: Double = 0
    public var duplicates = 0
    public var decodeErrors = 0
    /// Packets of another SSRC, or with a bad payload type or empty payload.
    public var foreignPackets = 0
    public var malformedPackets = 0

    public init() {}
}
