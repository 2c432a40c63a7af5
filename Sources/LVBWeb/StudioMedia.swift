import LVBMedia

/// A media frame as the node hands it to the page (one binary WebSocket
/// message): already repaired by the jitter buffer, still encoded, for the
/// page's WebCodecs decoders. A co-host's page sends its own camera and
/// microphone the other way in the same layout, encoded by its WebCodecs
/// encoders, capture time on the node's clock, RTP timestamp 0 (the node
/// numbers the stream). Layout (lvbnode(1), WEB STUDIO):
///
///     0      kind: 1 VP8 video frame, 2 Opus packet
///     1      flags: bit 0 keyframe, bit 1 frames were lost just before this one,
///            bit 2 decode but do not show (a replay's frames on the way to a seek's target)
///     2..9   capture time, µs since the Unix epoch, big-endian (0: unknown)
///     10..13 RTP timestamp, big-endian (video 90 kHz, audio 48 kHz)
///     14..   the frame
public struct StudioMediaFrame: Equatable, Sendable {
    public enum Kind: UInt8, Sendable {
        case video = 1
        case audio = 2
    }

    public var kind: Kind
    public var isKeyframe: Bool
    public var captureMicros: UInt64
    public var rtpTimestamp: UInt32
    public var payload: [UInt8]
    /// Frames were lost just before this one (video: skipped by the jitter buffer, never decoded).
    public var afterLoss = false
    /// To be decoded but not shown (a replay's frames from a keyframe to a seek's target).
    public var catchUp = false

    public static let headerSize = 14

    public init(kind: Kind, isKeyframe: Bool, captureMicros: UInt64, rtpTimestamp: UInt32, payload: [UInt8]) {
        self.kind = kind
        self.isKeyframe = isKeyframe
        self.captureMicros = captureMicros
        self.rtpTimestamp = rtpTimestamp
        self.payload = payload
    }

    /// Microseconds since the Unix epoch of an NTP 32.32 timestamp (0 for none).
    public static func micros(ntp: UInt64?) -> UInt64 { NTPTime.unixMicros(ntp) }

    /// The 14 bytes before the payload.
    public var header: [UInt8] {
        var out: [UInt8] = [kind.rawValue, (isKeyframe ? 1 : 0) | (afterLoss ? 2 : 0) | (catchUp ? 4 : 0)]
        out.reserveCapacity(Self.headerSize)
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: captureMicros >> UInt64(shift))) }
        for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: rtpTimestamp >> UInt32(shift))) }
        return out
    }

    public var serialized: [UInt8] { header + payload }

    /// Why a binary message from a page is not a media frame.
    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case short(Int)
        case kind(UInt8)
        case flags(UInt8)

        public var description: String {
            switch self {
            case .short(let n): "media frame of \(n) bytes: the header is \(StudioMediaFrame.headerSize) and a frame follows"
            case .kind(let k): "media frame of unknown kind \(k) (1 VP8, 2 Opus)"
            case .flags(let f): "media frame flags \(f): only bit 0 (keyframe, video only) is defined"
            }
        }
    }

    /// Parses one binary message of a page (every length checked).
    public static func parse(_ bytes: some Collection<UInt8>) throws(ParseError) -> StudioMediaFrame {
        let b = Array(bytes)
        guard b.count > headerSize else { throw .short(b.count) }
        guard let kind = Kind(rawValue: b[0]) else { throw .kind(b[0]) }
        guard b[1] & ~1 == 0, kind == .video || b[1] == 0 else { throw .flags(b[1]) }
        let capture = b[2..<10].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let rtp = b[10..<14].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return StudioMediaFrame(kind: kind, isKeyframe: b[1] & 1 == 1, captureMicros: capture, rtpTimestamp: rtp,
                                payload: Array(b[headerSize...]))
    }
}

extension StudioMediaFrame {
    /// A decoded-and-shown frame of the stream this node receives, as it left the jitter buffer.
    public init(_ frame: ReceivedVideoFrame) {
        self.init(kind: .video, isKeyframe: frame.isKeyframe, captureMicros: Self.micros(ntp: frame.captureTime),
                  rtpTimestamp: frame.rtpTimestamp, payload: frame.encoded)
        afterLoss = frame.afterLoss
    }

    /// An Opus packet of the stream; nil for concealed audio (nothing was received to hand on).
    public init?(_ frame: ReceivedAudioFrame) {
        guard let encoded = frame.encoded else { return nil }
        self.init(kind: .audio, isKeyframe: false, captureMicros: Self.micros(ntp: frame.captureTime),
                  rtpTimestamp: frame.rtpTimestamp, payload: encoded)
    }
}

extension StudioMediaFrame {
    /// A frame this node publishes (a host's own picture on its page): the
    /// VP8 frame put back together from its RTP packets; nil if a packet is
    /// not VP8 (nothing this node's encoder makes).
    public init?(published frame: EncodedMediaFrame) {
        guard let vp8 = frame.vp8Frame else { return nil }
        self.init(kind: .video, isKeyframe: frame.isKeyframe, captureMicros: vp8.captureMicros,
                  rtpTimestamp: vp8.rtpTimestamp, payload: vp8.data)
    }
}
