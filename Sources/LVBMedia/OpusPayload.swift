/// Opus over RTP (RFC 7587): one Opus packet per RTP payload, no payload
/// header, and a 48 kHz RTP clock whatever the audio's real sample rate.
public enum OpusPayload {
    /// RFC 7587 §4.1: the RTP clock rate is always 48000.
    public static let clockRate = UInt32(MediaConstants.audioClockRate)
    /// RTP timestamp increment for one 20 ms frame: 960.
    public static let frameIncrement20ms: UInt32 = timestampIncrement(milliseconds: 20)

    /// RTP timestamp increment for a frame of the given duration at 48 kHz.
    public static func timestampIncrement(milliseconds: UInt32) -> UInt32 {
        clockRate / 1000 * milliseconds
    }

    /// The TOC byte (RFC 6716 §3.1) of an Opus RTP payload: config, stereo flag
    /// and frame count code. Empty payloads are rejected (RFC 7587 §4.2 carries
    /// exactly one Opus packet, and an Opus packet has at least its TOC byte);
    /// code 3 also needs its frame count byte.
    public static func toc(of payload: ArraySlice<UInt8>) throws(MediaError) -> (config: UInt8, stereo: Bool, frameCountCode: UInt8) {
        guard let first = payload.first else { throw .truncated("Opus payload") }
        let code = first & 0x03
        guard code != 3 || payload.count >= 2 else { throw .truncated("Opus frame count byte") }
        return (first >> 3, first & 0x04 != 0, code)
    }
}
