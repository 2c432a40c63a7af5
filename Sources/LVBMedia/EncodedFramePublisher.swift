import LVBCore

/// Frames encoded outside this node (a studio page's WebCodecs encoders: a
/// co-host's own camera and microphone) made into the RTP packets of the
/// stream it publishes, without decoding or re-encoding: VP8 frames through
/// the RFC 7741 packetizer, Opus packets one per RTP packet (RFC 7587), with
/// the stream's SSRCs, its own sequence numbers, timestamps from the
/// frames' capture times, and the capture-time extension. The frames come
/// from outside, so each is checked before it is packetized: a VP8 frame's
/// tag must agree with the keyframe flag and its own lengths (RFC 6386 §9.1),
/// an Opus packet must be one 20 ms packet (RFC 6716 §3.1), as the stream's
/// other source sends.
public final class EncodedFramePublisher {
    public struct Stats: Sendable, Equatable {
        public var videoFrames = 0, keyframes = 0, audioPackets = 0
        public var videoBytes = 0, audioBytes = 0
        public init() {}
    }

    public let videoSSRC: UInt32
    public let audioSSRC: UInt32
    public private(set) var stats = Stats()

    private let clock: Clock
    private var packetizer: VP8Packetizer
    private var videoSequence: UInt16
    private var audioSequence: UInt16
    private let videoBase: UInt32
    private let audioBase: UInt32
    private var firstVideo: UInt64?
    private var lastVideo: UInt32?
    private var lastAudio: (micros: UInt64, timestamp: UInt32)?

    /// Largest Opus packet (RFC 6716 §3.4: at most 1275 bytes per frame).
    public static let maxOpusPacket = 1275
    /// Largest VP8 frame taken (a 640x360 keyframe is tens of kilobytes).
    public static let maxVideoFrame = 256 * 1024

    /// - Parameter maxPacketSize: largest RTP packet (header included) the transport carries.
    public init(videoSSRC: UInt32, audioSSRC: UInt32, maxPacketSize: Int, clock: Clock, random: RandomSource) throws(MediaError) {
        self.videoSSRC = videoSSRC
        self.audioSSRC = audioSSRC
        self.clock = clock
        packetizer = try VP8Packetizer(maxPayloadSize: maxPacketSize - MediaConstants.rtpOverhead,
                                       firstPacketReserve: MediaSeal.firstPacketReserve,
                                       firstPictureID: UInt16(truncatingIfNeeded: random.uint64()))
        videoSequence = UInt16(truncatingIfNeeded: random.uint64())
        audioSequence = UInt16(truncatingIfNeeded: random.uint64())
        videoBase = UInt32(truncatingIfNeeded: random.uint64())
        audioBase = UInt32(truncatingIfNeeded: random.uint64())
    }

    /// One VP8 frame captured at `captureMicros` (µs since the Unix epoch;
    /// 0: now). Its RTP timestamp is its capture time on the 90 kHz clock,
    /// from the first frame on, and always later than the frame before.
    public func video(_ frame: [UInt8], keyframe: Bool, captureMicros: UInt64) throws(MediaError) -> EncodedMediaFrame {
        try Self.checkVP8(frame, keyframe: keyframe)
        let micros = captureMicros == 0 ? Self.micros(clock.wallTime()) : captureMicros
        let first = firstVideo ?? micros
        firstVideo = first
        let since = micros > first ? micros - first : 0
        var timestamp = videoBase &+ UInt32(truncatingIfNeeded: since &* UInt64(MediaConstants.videoClockRate) / 1_000_000)
        if let last = lastVideo, Int32(bitPattern: timestamp &- last) <= 0 { timestamp = last &+ 1 }
        lastVideo = timestamp
        let packets = try packetizer.rtpPackets(frame, timestamp: timestamp, ssrc: videoSSRC, sequence: &videoSequence,
                                                captureTime: Self.ntp(micros: micros))
        stats.videoFrames += 1
        stats.videoBytes += frame.count
        if keyframe { stats.keyframes += 1 }
        return EncodedMediaFrame(packets: packets, isKeyframe: keyframe, bytes: frame.count)
    }

    /// One 20 ms Opus packet whose first sample was captured at
    /// `captureMicros` (0: now). Timestamps step by 960 samples, by more
    /// where the capture times say packets are missing (a gap the receiver
    /// conceals rather than a stretch it plays late).
    public func audio(_ packet: [UInt8], captureMicros: UInt64) throws(MediaError) -> RTPPacket {
        try Self.checkOpus(packet)
        let micros = captureMicros == 0 ? Self.micros(clock.wallTime()) : captureMicros
        let step = UInt32(MediaConstants.audioFrameSamples)
        let timestamp: UInt32
        if let last = lastAudio {
            let frameMicros = UInt64(MediaConstants.audioFrameDuration.nanosecondsClamped / 1000)
            let elapsed = micros > last.micros ? micros - last.micros : 0
            let frames = max(1, (elapsed + frameMicros / 2) / frameMicros)
            timestamp = last.timestamp &+ step &* UInt32(min(frames, 50))
        } else {
            timestamp = audioBase
        }
        lastAudio = (micros, timestamp)
        var p = try RTPPacket(payloadType: MediaConstants.audioPayloadType, sequenceNumber: audioSequence,
                              timestamp: timestamp, ssrc: audioSSRC, payload: packet[...])
        p.setCaptureTime(Self.ntp(micros: micros))
        audioSequence &+= 1
        stats.audioPackets += 1
        stats.audioBytes += packet.count
        return p
    }

    // MARK: Checks

    /// RFC 6386 §9.1: the 3-byte frame tag (bit 0 of the first byte is 0 on
    /// a keyframe; a 3-bit version; a 19-bit first partition size), then on a
    /// keyframe the start code 9d 01 2a and the 14-bit width and height.
    public static func checkVP8(_ frame: [UInt8], keyframe: Bool) throws(MediaError) {
        guard frame.count >= 3 else { throw .truncated("VP8 frame (\(frame.count) bytes, the tag is 3)") }
        guard frame.count <= maxVideoFrame else { throw .malformed("VP8 frame of \(frame.count) bytes, more than \(maxVideoFrame)") }
        let tag = UInt32(frame[0]) | UInt32(frame[1]) << 8 | UInt32(frame[2]) << 16
        let isKey = tag & 1 == 0
        guard isKey == keyframe else { throw .malformed(keyframe ? "VP8 frame flagged key is an interframe" : "VP8 keyframe not flagged as one") }
        guard (tag >> 1) & 7 <= 3 else { throw .malformed("VP8 version \((tag >> 1) & 7)") }
        let header = isKey ? 10 : 3
        guard frame.count >= header else { throw .truncated("VP8 keyframe header (\(frame.count) of 10 bytes)") }
        if isKey {
            guard frame[3] == 0x9D, frame[4] == 0x01, frame[5] == 0x2A else { throw .malformed("VP8 keyframe without the start code 9d 01 2a") }
            let width = (Int(frame[6]) | Int(frame[7]) << 8) & 0x3FFF, height = (Int(frame[8]) | Int(frame[9]) << 8) & 0x3FFF
            guard width > 0, height > 0 else { throw .malformed("VP8 keyframe of \(width)x\(height)") }
        }
        let firstPartition = Int(tag >> 5)
        guard firstPartition <= frame.count - header else {
            throw .truncated("VP8 first partition (\(firstPartition) bytes, \(frame.count - header) left)")
        }
    }

    /// RFC 6716 §3.1: the TOC byte's configuration gives the frame length,
    /// its code the frame count (code 3: the count in the next byte's low 6
    /// bits); the packet must hold 20 ms in all.
    public static func checkOpus(_ packet: [UInt8]) throws(MediaError) {
        guard let toc = packet.first else { throw .truncated("Opus packet (empty)") }
        guard packet.count <= maxOpusPacket else { throw .malformed("Opus packet of \(packet.count) bytes, more than \(maxOpusPacket)") }
        let config = Int(toc >> 3)
        // Frame lengths in units of 2.5 ms: SILK 10/20/40/60, hybrid 10/20, CELT 2.5/5/10/20.
        let quarterMillis: Int = switch config {
        case 0..<12: [4, 8, 16, 24][config % 4]
        case 12..<16: [4, 8][config % 2]
        default: [1, 2, 4, 8][config % 4]
        }
        let frames: Int
        switch toc & 3 {
        case 0: frames = 1
        case 1, 2: frames = 2
        default:
            guard packet.count >= 2 else { throw .truncated("Opus code 3 packet without its frame count") }
            frames = Int(packet[1] & 0x3F)
        }
        guard quarterMillis * frames == 8 else {
            throw .malformed("Opus packet of \(Double(quarterMillis * frames) * 2.5) ms, not 20")
        }
    }

    // MARK: Time

    /// µs since the Unix epoch of a wall-clock time.
    public static func micros(_ wall: WallTime) -> UInt64 { wall.seconds * 1_000_000 + UInt64(wall.nanoseconds / 1000) }

    /// NTP 32.32 of a time in µs since the Unix epoch.
    public static func ntp(micros: UInt64) -> UInt64 {
        let seconds = micros / 1_000_000 + MediaConstants.ntpUnixOffset
        return seconds << 32 | ((micros % 1_000_000) << 32) / 1_000_000
    }
}
