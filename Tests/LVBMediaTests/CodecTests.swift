import Foundation
import LVBMedia
import TestAssertions
import Testing

@Suite("Codecs")
struct CodecTests {
    private static func isInvalidParameter(_ e: MediaError) -> Bool {
        if case .invalidParameter = e { return true } else { return false }
    }
    private static func isCodec(_ e: MediaError) -> Bool {
        if case .codec = e { return true } else { return false }
    }

    @Test("VP8 640x360 at 1000 kbit/s round-trips 30 frames above 30 dB with readable frame numbers")
    func vp8RoundTrip() throws {
        let source = try SyntheticVideo(width: 640, height: 360)
        let encoder = try VP8Encoder(width: 640, height: 360, fps: 30, bitrateKbps: 1000,
                                     keyframeInterval: 3000)
        let decoder = try VP8Decoder()
        var keyframes: [Int64] = []
        var decodedCount = 0
        var psnrs: [Double] = []
        for n in 0..<30 {
            let input = source.frame(number: n)
            #expect(SyntheticVideo.readFrameNumber(input) == n)
            let packets = try encoder.encode(input, pts: Int64(n), forceKeyframe: n == 20)
            for packet in packets {
                if packet.isKeyframe { keyframes.append(packet.pts) }
                guard let output = try decoder.decode(packet.data) else { continue }
                decodedCount += 1
                #expect(output.width == 640 && output.height == 360)
                let source = source.frame(number: Int(packet.pts))
                let psnr = output.psnr(to: source)
                psnrs.append(psnr)
                #expect(psnr > 30, "frame \(packet.pts): PSNR \(psnr) dB")
                #expect(SyntheticVideo.readFrameNumber(output) == Int(packet.pts))
            }
        }
        print("VP8 PSNR dB:", psnrs.map { String(format: "%.1f", $0) }.joined(separator: " "))
        #expect(decodedCount == 30)
        #expect(keyframes == [0, 20], "keyframes at \(keyframes)")
    }

    @Test("VP8 bitrate can be changed mid-stream")
    func vp8SetBitrate() throws {
        let source = try SyntheticVideo(width: 320, height: 240)
        let encoder = try VP8Encoder(width: 320, height: 240, fps: 30, bitrateKbps: 500,
                                     keyframeInterval: 60)
        _ = try encoder.encode(source.frame(number: 0), pts: 0, forceKeyframe: false)
        try encoder.setBitrate(kbps: 200)
        let packets = try encoder.encode(source.frame(number: 1), pts: 1, forceKeyframe: false)
        #expect(!packets.isEmpty)
        expectError("0 kbit/s", Self.isInvalidParameter) { () throws(MediaError) in
            try encoder.setBitrate(kbps: 0)
        }
    }

    @Test("VP8 rejects bad parameters with typed errors")
    func vp8InvalidParameters() throws {
        for (w, h, fps) in [(641, 360, 30), (0, 0, 30), (640, 0, 30), (640, 360, 0), (8, 8, 30), (640, 361, 30)] {
            expectError("\(w)x\(h)@\(fps)", Self.isInvalidParameter) { () throws(MediaError) in
                try VP8Encoder(width: w, height: h, fps: fps, bitrateKbps: 1000, keyframeInterval: 30)
            }
        }
        expectError("odd frame", Self.isInvalidParameter) { () throws(MediaError) in
            try I420Frame(width: 17, height: 16)
        }
        let encoder = try VP8Encoder(width: 320, height: 240, fps: 30, bitrateKbps: 300,
                                     keyframeInterval: 30)
        let wrongSize = try I420Frame(width: 160, height: 120)
        expectError("frame of the wrong size", Self.isInvalidParameter) { () throws(MediaError) in
            try encoder.encode(wrongSize, pts: 0, forceKeyframe: false)
        }
    }

    /// A typed refusal: the header check (malformed, truncated) or libvpx's own.
    static func isRejection(_ e: MediaError) -> Bool {
        switch e {
        case .codec, .malformed, .truncated: true
        case .invalidParameter, .file: false
        }
    }

    @Test("the pattern's capture-time strip survives VP8 at a modest bitrate")
    func captureTimeStrip() throws {
        let source = try SyntheticVideo(width: 320, height: 180)
        let encoder = try VP8Encoder(width: 320, height: 180, fps: 30, bitrateKbps: 300, keyframeInterval: 30)
        let decoder = try VP8Decoder()
        for n in 0..<10 {
            let ms = UInt64(1_795_000_000_000 + n * 33)
            let input = source.frame(number: n, captureMilliseconds: ms)
            #expect(SyntheticVideo.readCaptureMilliseconds(input) == Int(ms & 0xFFFF))
            for packet in try encoder.encode(input, pts: Int64(n)) {
                let output = try #require(try decoder.decode(packet.data))
                #expect(SyntheticVideo.readFrameNumber(output) == n)
                #expect(SyntheticVideo.readCaptureMilliseconds(output) == Int(ms & 0xFFFF))
            }
        }
        // Without a capture time the bottom strip is not drawn.
        #expect(SyntheticVideo.readCaptureMilliseconds(source.frame(number: 3)) == nil)
    }

    @Test("VP8 decoder rejects garbage without crashing")
    func vp8Garbage() throws {
        let decoder = try VP8Decoder()
        // Fixed pseudo-random bytes (xorshift) so a failure reproduces.
        var state: UInt32 = 0x2545_F491
        for length in [1, 3, 10, 100, 1000] {
            let garbage = (0..<length).map { _ -> UInt8 in
                state ^= state << 13; state ^= state >> 17; state ^= state << 5
                return UInt8(truncatingIfNeeded: state)
            }
            expectError("\(length) random bytes", Self.isRejection) { () throws(MediaError) in
                try decoder.decode(garbage)
            }
        }
        // A keyframe start code with a truncated body.
        expectError("truncated keyframe", Self.isRejection) { () throws(MediaError) in
            try decoder.decode([0x10, 0x02, 0x00, 0x9d, 0x01, 0x2a, 0x80, 0x02])
        }
        // The decoder still works after garbage.
        let source = try SyntheticVideo(width: 320, height: 240)
        let encoder = try VP8Encoder(width: 320, height: 240, fps: 30, bitrateKbps: 500,
                                     keyframeInterval: 30)
        let packet = try #require(try encoder.encode(source.frame(number: 7), pts: 0, forceKeyframe: true).first)
        let frame = try #require(try decoder.decode(packet.data))
        #expect(SyntheticVideo.readFrameNumber(frame) == 7)
    }

    @Test("Opus round-trips one second of a 440 Hz tone")
    func opusRoundTrip() throws {
        var audio = try SyntheticAudio(sampleRate: 48000, channels: 1)
        let encoder = try OpusEncoder(sampleRate: 48000, channels: 1, bitrate: 32000)
        let decoder = try OpusDecoder(sampleRate: 48000, channels: 1)
        var decoded: [Int16] = []
        for _ in 0..<50 {
            let packet = try encoder.encode(audio.next20ms())
            #expect(!packet.isEmpty && packet.count <= 1275)
            decoded += try decoder.decode(packet)
        }
        #expect(decoded.count == 48000)
        // Skip the 1 kHz beep and the codec's start-up.
        let tail = Array(decoded[9600...])
        let at440 = toneLevel(tail, at: 440)
        let at1000 = toneLevel(tail, at: 1000)
        let at3000 = toneLevel(tail, at: 3000)
        // A 0.3 × full-scale sine is at -10.5 dBFS.
        #expect(at440 > -14, "440 Hz at \(at440) dB")
        #expect(at440 > at1000 + 20 && at440 > at3000 + 20)

        let concealed = try decoder.decode(nil)
        #expect(concealed.count == 960)
    }

    @Test("Opus FEC recovers a lost frame from the next packet")
    func opusFEC() throws {
        var audio = try SyntheticAudio(sampleRate: 48000, channels: 2)
        let encoder = try OpusEncoder(sampleRate: 48000, channels: 2, bitrate: 64000)
        let decoder = try OpusDecoder(sampleRate: 48000, channels: 2)
        var packets: [[UInt8]] = []
        for _ in 0..<20 { packets.append(try encoder.encode(audio.next20ms())) }
        for packet in packets[0..<10] { _ = try decoder.decode(packet) }
        // Packet 10 is lost; packet 11 carries it.
        let recovered = try decoder.decodeFEC(packets[11])
        #expect(recovered.count == 960 * 2)
        #expect(recovered.contains { abs(Int($0)) > 1000 }, "FEC frame is not silence")
        #expect(try decoder.decode(packets[11]).count == 960 * 2)
    }

    @Test("Opus rejects bad parameters with typed errors")
    func opusInvalidParameters() throws {
        let encoder = try OpusEncoder(sampleRate: 48000, channels: 1, bitrate: 32000)
        for count in [0, 959, 961, 1920] {
            expectError("\(count) samples", Self.isInvalidParameter) { () throws(MediaError) in
                try encoder.encode([Int16](repeating: 0, count: count))
            }
        }
        expectError("3 channels", Self.isInvalidParameter) { () throws(MediaError) in
            try OpusEncoder(sampleRate: 48000, channels: 3, bitrate: 32000)
        }
        expectError("44.1 kHz", Self.isInvalidParameter) { () throws(MediaError) in
            try OpusDecoder(sampleRate: 44100, channels: 1)
        }
        let decoder = try OpusDecoder(sampleRate: 48000, channels: 1)
        // TOC code 3 with a frame count of 0 is invalid (RFC 6716 §3.2.5).
        expectError("bad packet", Self.isCodec) { () throws(MediaError) in
            try decoder.decode([0x03, 0x00])
        }
    }
}

@Suite struct VP8DecoderHardeningTests {
    @Test func aKeyframeClaimingAHugePictureIsRefusedBeforeDecoding() throws {
        // Frame tag (keyframe), start code, then 16383 x 16383.
        let hostile: [UInt8] = [0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A, 0xFF, 0x3F, 0xFF, 0x3F] + [UInt8](repeating: 0, count: 64)
        let decoder = try VP8Decoder()
        #expect(throws: MediaError.malformed("VP8 keyframe of 16383x16383 is outside 16...4096")) { try decoder.decode(hostile) }
        #expect(throws: MediaError.truncated("VP8 keyframe header")) { try decoder.decode([0x10, 0x02, 0x00]) }
    }
}
