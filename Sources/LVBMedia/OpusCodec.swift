import COpus

/// Opus sample rates libopus accepts; every frame is 20 ms.
private let opusRates: Set<Int> = [8000, 12000, 16000, 24000, 48000]

private func opusMessage(_ call: String, _ code: Int32) -> String {
    "\(call): \(opus_strerror(code).map { String(cString: $0) } ?? "error \(code)")"
}

private func validate(sampleRate: Int, channels: Int) throws(MediaError) {
    guard opusRates.contains(sampleRate) else {
        throw .invalidParameter("Opus sample rate \(sampleRate) Hz: use 8000, 12000, 16000, 24000 or 48000")
    }
    guard channels == 1 || channels == 2 else {
        throw .invalidParameter("Opus channel count \(channels): use 1 or 2")
    }
}

/// An Opus encoder for 20 ms frames with in-band FEC; owns one libopus `OpusEncoder`.
public final class OpusEncoder {
    public let sampleRate: Int
    public let channels: Int
    /// Samples per channel in one 20 ms frame.
    public var frameSize: Int { sampleRate / 50 }
    private let state: OpaquePointer
    /// Reused output buffer; 1275 bytes is the largest single Opus frame, 4000 the libopus advice.
    private var buffer = [UInt8](repeating: 0, count: 4000)

    public init(sampleRate: Int = 48000, channels: Int, bitrate: Int) throws(MediaError) {
        try validate(sampleRate: sampleRate, channels: channels)
        guard (6000...510_000).contains(bitrate) else {
            throw .invalidParameter("Opus bitrate \(bitrate) bit/s: use 6000...510000")
        }
        var err: Int32 = 0
        guard let state = opus_encoder_create(Int32(sampleRate), Int32(channels),
                                              OPUS_APPLICATION_AUDIO, &err), err == OPUS_OK else {
            throw .codec(opusMessage("opus_encoder_create", err))
        }
        // FEC only fires when the encoder expects loss; 10 % is a typical live-room figure.
        let settings: [(String, Int32)] = [
            ("OPUS_SET_BITRATE", lvb_opus_set_bitrate(state, Int32(bitrate))),
            ("OPUS_SET_INBAND_FEC", lvb_opus_set_inband_fec(state, 1)),
            ("OPUS_SET_PACKET_LOSS_PERC", lvb_opus_set_packet_loss_perc(state, 10)),
        ]
        if let (name, code) = settings.first(where: { $0.1 != OPUS_OK }) {
            opus_encoder_destroy(state)
            throw .codec(opusMessage(name, code))
        }
        self.sampleRate = sampleRate
        self.channels = channels
        self.state = state
    }

    deinit { opus_encoder_destroy(state) }

    /// Encodes exactly 20 ms of interleaved PCM (`frameSize * channels` samples).
    public func encode(_ pcm: [Int16]) throws(MediaError) -> [UInt8] {
        guard pcm.count == frameSize * channels else {
            throw .invalidParameter(
                "Opus frame has \(pcm.count) samples; 20 ms needs \(frameSize * channels) (\(frameSize) per channel)")
        }
        // Both buffers are non-empty, so their base addresses exist.
        let n = pcm.withUnsafeBufferPointer { input in
            buffer.withUnsafeMutableBufferPointer { out in
                opus_encode(state, input.baseAddress!, Int32(frameSize), out.baseAddress!, Int32(out.count))
            }
        }
        guard n > 0 else { throw .codec(opusMessage("opus_encode", n)) }
        return Array(buffer[0..<Int(n)])
    }
}

/// An Opus decoder with loss concealment and FEC recovery; owns one libopus `OpusDecoder`.
public final class OpusDecoder {
    public let sampleRate: Int
    public let channels: Int
    /// Samples per channel in one 20 ms frame.
    public var frameSize: Int { sampleRate / 50 }
    private let state: OpaquePointer
    /// Room for the longest Opus packet (120 ms) so a peer's odd packet does not fail.
    private var buffer: [Int16]

    public init(sampleRate: Int = 48000, channels: Int) throws(MediaError) {
        try validate(sampleRate: sampleRate, channels: channels)
        var err: Int32 = 0
        guard let state = opus_decoder_create(Int32(sampleRate), Int32(channels), &err),
              err == OPUS_OK else {
            throw .codec(opusMessage("opus_decoder_create", err))
        }
        self.sampleRate = sampleRate
        self.channels = channels
        self.state = state
        self.buffer = [Int16](repeating: 0, count: sampleRate * 120 / 1000 * channels)
    }

    deinit { opus_decoder_destroy(state) }

    /// Decodes one packet to interleaved PCM; `nil` means the packet was lost
    /// and returns 20 ms of concealment.
    public func decode(_ packet: [UInt8]?) throws(MediaError) -> [Int16] {
        guard let packet else { return try run(nil, maxSamples: frameSize, fec: false) }
        guard !packet.isEmpty else { throw .truncated("Opus packet (0 bytes)") }
        return try run(packet, maxSamples: buffer.count / channels, fec: false)
    }

    /// Recovers the 20 ms lost just before `nextPacket` from its in-band FEC
    /// (concealment when the packet carries none). Decode `nextPacket` normally afterwards.
    public func decodeFEC(_ nextPacket: [UInt8]) throws(MediaError) -> [Int16] {
        guard !nextPacket.isEmpty else { throw .truncated("Opus packet (0 bytes)") }
        return try run(nextPacket, maxSamples: frameSize, fec: true)
    }

    private func run(_ packet: [UInt8]?, maxSamples: Int, fec: Bool) throws(MediaError) -> [Int16] {
        // 48 frames of 1275 bytes is the largest legal packet; anything longer is not Opus.
        if let packet, packet.count > 48 * 1275 { throw .malformed("Opus packet of \(packet.count) bytes") }
        let n: Int32 = buffer.withUnsafeMutableBufferPointer { out in
            if let packet {
                return packet.withUnsafeBufferPointer { p in
                    opus_decode(state, p.baseAddress, Int32(p.count), out.baseAddress!,
                                Int32(maxSamples), fec ? 1 : 0)
                }
            }
            return opus_decode(state, nil, 0, out.baseAddress!, Int32(maxSamples), 0)
        }
        guard n >= 0 else { throw .codec(opusMessage("opus_decode", n)) }
        return Array(buffer[0..<Int(n) * channels])
    }
}
