import LVBCore

/// One encoded media frame ready to send: its RTP packets in order.
public struct EncodedMediaFrame: Sendable {
    public var packets: [RTPPacket]
    public var isKeyframe: Bool
    /// The encoded frame's size, as the codec produced it.
    public var bytes: Int

    public init(packets: [RTPPacket], isKeyframe: Bool, bytes: Int) {
        self.packets = packets
        self.isKeyframe = isKeyframe
        self.bytes = bytes
    }
}

extension EncodedMediaFrame {
    /// The VP8 frame put back together from its RTP packets, its capture
    /// time (Unix µs, 0 when unknown) and RTP timestamp; nil if a packet is
    /// not VP8 (nothing this node's encoders make).
    public var vp8Frame: (data: [UInt8], captureMicros: UInt64, rtpTimestamp: UInt32)? {
        guard let first = packets.first else { return nil }
        var data: [UInt8] = []
        data.reserveCapacity(bytes)
        for packet in packets {
            guard let (_, part) = try? VP8PayloadDescriptor.parse(packet.payload) else { return nil }
            data += part
        }
        return (data, NTPTime.unixMicros(first.captureTime), first.timestamp)
    }
}

/// Video source side: VP8 encoder → RFC 7741 packetizer → RTP packets with
/// the capture-time extension (ARCHITECTURE "Media, host side").
public final class VideoStreamEncoder {
    public let ssrc: UInt32
    public let fps: Int
    public private(set) var bitrateKbps: Int
    private let encoder: VP8Encoder
    private var packetizer: VP8Packetizer
    private var sequence: UInt16
    private let timestampBase: UInt32
    private var pts: Int64 = 0

    /// - Parameters:
    ///   - gopSeconds: longest time between keyframes.
    ///   - maxPacketSize: largest RTP packet (header included) the transport carries.
    public init(width: Int, height: Int, fps: Int, bitrateKbps: Int, gopSeconds: Double,
                ssrc: UInt32, maxPacketSize: Int, random: RandomSource) throws(MediaError) {
        guard gopSeconds > 0, gopSeconds <= 60 else { throw .invalidParameter("GOP of \(gopSeconds) s: use 0 < gop ≤ 60") }
        encoder = try VP8Encoder(width: width, height: height, fps: fps, bitrateKbps: bitrateKbps,
                                 keyframeInterval: max(1, Int((gopSeconds * Double(fps)).rounded())))
        packetizer = try VP8Packetizer(maxPayloadSize: maxPacketSize - MediaConstants.rtpOverhead,
                                       firstPacketReserve: MediaSeal.firstPacketReserve,
                                       firstPictureID: UInt16(truncatingIfNeeded: random.uint64()))
        self.ssrc = ssrc
        self.fps = fps
        self.bitrateKbps = bitrateKbps
        sequence = UInt16(truncatingIfNeeded: random.uint64())
        timestampBase = UInt32(truncatingIfNeeded: random.uint64())
    }

    /// Encodes one frame captured `mediaTime` after the stream started (wall
    /// clock `captureTime`, NTP format); nil when rate control dropped it.
    public func encode(_ frame: I420Frame, mediaTime: Duration, captureTime: UInt64,
                       forceKeyframe: Bool) throws(MediaError) -> EncodedMediaFrame? {
        let out = try encoder.encode(frame, pts: pts, forceKeyframe: forceKeyframe)
        pts += 1
        guard let encoded = out.first else { return nil }
        let timestamp = timestampBase &+ Self.ticks(mediaTime, rate: MediaConstants.videoClockRate)
        let packets = try packetizer.rtpPackets(encoded.data, timestamp: timestamp, ssrc: ssrc, sequence: &sequence,
                                                captureTime: captureTime)
        return EncodedMediaFrame(packets: packets, isKeyframe: encoded.isKeyframe, bytes: encoded.data.count)
    }

    /// Changes the target bitrate (rate control); ignores changes under 5 %.
    public func setBitrate(kbps: Int) throws(MediaError) {
        guard abs(kbps - bitrateKbps) * 20 >= bitrateKbps else { return }
        try encoder.setBitrate(kbps: kbps)
        bitrateKbps = kbps
    }

    /// `d` in ticks of a `rate` Hz clock, rounded: a 1/30 s frame slot is
    /// exactly 3000 ticks at 90 kHz, never 2999.
    static func ticks(_ d: Duration, rate: Int) -> UInt32 {
        let (high, low) = d.nanosecondsClamped.multipliedFullWidth(by: Int64(rate))
        let (q, r) = Int64(1_000_000_000).dividingFullWidth((high, low))
        return UInt32(truncatingIfNeeded: r >= 500_000_000 ? q + 1 : q)
    }
}

/// Audio source side: 20 ms mono PCM → Opus (in-band FEC) → one RTP packet (RFC 7587).
public final class AudioStreamEncoder {
    public let ssrc: UInt32
    private let encoder: OpusEncoder
    private var sequence: UInt16
    private let timestampBase: UInt32

    public init(ssrc: UInt32, bitrate: Int = MediaConstants.audioBitrate, random: RandomSource) throws(MediaError) {
        encoder = try OpusEncoder(channels: 1, bitrate: bitrate)
        self.ssrc = ssrc
        sequence = UInt16(truncatingIfNeeded: random.uint64())
        timestampBase = UInt32(truncatingIfNeeded: random.uint64())
    }

    /// Encodes 960 samples whose first was captured `mediaTime` after the stream started.
    public func encode(_ pcm: [Int16], mediaTime: Duration, captureTime: UInt64) throws(MediaError) -> RTPPacket {
        let data = try encoder.encode(pcm)
        // RFC 7587 §4.2: the timestamp counts 48 kHz samples; keep 20 ms steps exact.
        let frames = VideoStreamEncoder.ticks(mediaTime, rate: 50)
        var p = try RTPPacket(payloadType: MediaConstants.audioPayloadType, sequenceNumber: sequence,
                              timestamp: timestampBase &+ frames &* UInt32(MediaConstants.audioFrameSamples),
                              ssrc: ssrc, payload: data[...])
        p.setCaptureTime(captureTime)
        sequence &+= 1
        return p
    }
}
