import LVBCore

/// Settings of a `VideoReceiver`.
public struct VideoReceiverConfig: Sendable {
    /// RTP payload type of the VP8 stream; packets of other types are counted and dropped.
    public var payloadType: UInt8
    /// How often a receiver report goes out once packets flow.
    public var reportInterval: Duration
    /// Upper bound of the jitter-buffer delay.
    public var maxTargetDelay: Duration

    public init(payloadType: UInt8 = ReceiverConstants.videoPayloadType,
                reportInterval: Duration = ReceiverConstants.reportInterval,
                maxTargetDelay: Duration = ReceiverConstants.maxTargetDelay) {
        self.payloadType = payloadType
        self.reportInterval = reportInterval
        self.maxTargetDelay = maxTargetDelay
    }
}

/// A decoded video frame, released in decode order at its jitter-buffer time.
public struct ReceivedVideoFrame: Sendable {
    public var image: I420Frame
    public var encoded: [UInt8]
    public var isKeyframe: Bool
    public var rtpTimestamp: UInt32
    /// The sender's capture time (NTP 32.32) from the frame's first packet.
    public var captureTime: UInt64?
    /// When the frame's last packet arrived.
    public var arrival: Instant
    /// Frames were lost (skipped, never decoded) since the previous frame
    /// released: this one is a keyframe resuming the stream, or a picture
    /// whose references a second decoder of the same frames lacks.
    public var afterLoss = false

    public init(image: I420Frame, encoded: [UInt8], isKeyframe: Bool, rtpTimestamp: UInt32, captureTime: UInt64?, arrival: Instant,
                afterLoss: Bool = false) {
        self.afterLoss = afterLoss
        self.image = image
        self.encoded = encoded
        self.isKeyframe = isKeyframe
        self.rtpTimestamp = rtpTimestamp
        self.captureTime = captureTime
        self.arrival = arrival
    }
}

/// What `VideoReceiver.poll()` hands its owner.
public enum VideoReceiverOutput: Sendable {
    case frame(ReceivedVideoFrame)
    /// RTCP to send to the media sender as one compound packet (RR, NACK, PLI).
    case feedback([RTCPPacket])
}

/// Counters of a `VideoReceiver`.
public struct VideoReceiverStats: Equatable, Sendable {
    /// RTP packets of the media source, duplicates included, and their payload bytes.
    public var packets = 0
    public var bytes = 0
    /// Packets expected but never received (RFC 3550 §A.3).
    public var lost = 0
    /// Packets that arrived after we NACKed them.
    public var recovered = 0
    public var duplicates = 0
    /// NACK packets sent, and the sequence numbers they asked for.
    public var nacksSent = 0
    public var nackedSequences = 0
    /// PLIs sent.
    public var keyframeRequests = 0
    public var framesDecoded = 0
    /// Frames never shown: lost, incomplete, dropped while waiting for a keyframe, or undecodable.
    public var skippedFrames = 0
    public var decodeErrors = 0
    /// Jitter-buffer target delay.
    public var currentDelay: Duration = .zero
    /// RFC 3550 §A.8 interarrival jitter, in milliseconds.
    public var jitter: Double = 0
    /// Packets of another SSRC, with a bad payload type or VP8 descriptor, or too late to use.
    public var foreignPackets = 0
    public var malformedPackets = 0
    public var latePackets = 0

    public init() {}
}
