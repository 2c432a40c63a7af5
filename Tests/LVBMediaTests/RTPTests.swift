import LVBCore
import TestAssertions
import Testing
@testable import LVBMedia

func hex(_ s: String) -> [UInt8] { (try? Hex.decode(s)) ?? [] }

@Suite struct RTPTests {
    // RFC 3550 §5.1: V=2, PT 96, seq 0x1234, ts 0x11223344, SSRC 0xaabbccdd, payload 010203.
    static let minimal = hex("8060123411223344aabbccdd010203")
    // V=2 P X CC=1, M PT 111, seq 1, ts 960, SSRC 01020304, CSRC 0a0b0c0d,
    // 0xBEDE block of 3 words: id 1 L=7 (capture time 0001020304050607) + 3 pad bytes,
    // payload aabb, 3 padding octets.
    static let full = hex("b1ef0001000003c0010203040a0b0c0d" + "bede0003170001020304050607000000" + "aabb000003")

    @Test func minimalHeaderParsesAndRoundTrips() throws {
        let p = try RTPPacket.parse(Self.minimal)
        #expect(!p.marker && p.payloadType == 96 && p.sequenceNumber == 0x1234)
        #expect(p.timestamp == 0x1122_3344 && p.ssrc == 0xAABB_CCDD && p.csrcs.isEmpty && p.extensions.isEmpty)
        #expect(Array(p.payload) == [1, 2, 3] && p.paddingLength == 0)
        #expect(p.serialized() == Self.minimal)
        let built = try RTPPacket(payloadType: 96, sequenceNumber: 0x1234, timestamp: 0x1122_3344,
                                  ssrc: 0xAABB_CCDD, payload: [1, 2, 3])
        #expect(Hex.encode(built.serialized()) == "8060123411223344aabbccdd010203")
    }

    @Test func csrcExtensionAndPaddingParseAndRoundTrip() throws {
        let p = try RTPPacket.parse(Self.full)
        #expect(p.marker && p.payloadType == 111 && p.sequenceNumber == 1 && p.timestamp == 960)
        #expect(p.csrcs == [0x0A0B_0C0D])
        #expect(p.extensions == [1: [0, 1, 2, 3, 4, 5, 6, 7]])
        #expect(p.captureTime == 0x0001_0203_0405_0607)
        #expect(Array(p.payload) == [0xAA, 0xBB] && p.paddingLength == 3)
        #expect(p.serialized() == Self.full)

        var built = try RTPPacket(marker: true, payloadType: 111, sequenceNumber: 1, timestamp: 960, ssrc: 0x0102_0304,
                                  csrcs: [0x0A0B_0C0D], payload: [0xAA, 0xBB], paddingLength: 3)
        built.setCaptureTime(0x0001_0203_0405_0607)
        #expect(built.serialized() == Self.full)
    }

    @Test func everyTruncationFails() {
        for n in 0..<MediaConstants.RTP.fixedHeaderSize {
            expectError(.truncated("RTP header")) { () throws(MediaError) in try RTPPacket.parse(Array(Self.minimal.prefix(n))) }
        }
        // Padding makes the full vector self-delimiting: no prefix of it is a packet.
        for n in 0..<Self.full.count {
            #expect(throws: MediaError.self) { try RTPPacket.parse(Array(Self.full.prefix(n))) }
        }
        expectError(.truncated("RTP CSRC list")) { () throws(MediaError) in try RTPPacket.parse(Array(Self.full.prefix(14))) }
        expectError(.truncated("RTP header extension")) { () throws(MediaError) in try RTPPacket.parse(Array(Self.full.prefix(20))) }
        expectError(.malformed("RTP padding longer than payload")) { () throws(MediaError) in
            try RTPPacket.parse(Array(Self.full.prefix(Self.full.count - 3)))
        }
    }

    @Test func malformedValuesRaiseTheirError() {
        expectError(.malformed("RTP version 1")) { () throws(MediaError) in try RTPPacket.parse(hex("4060123411223344aabbccdd010203")) }
        expectError(.malformed("RTP padding longer than payload")) { () throws(MediaError) in
            try RTPPacket.parse(hex("a060123411223344aabbccdd010210"))
        }
        expectError(.malformed("RTP padding count 0")) { () throws(MediaError) in
            try RTPPacket.parse(hex("a060123411223344aabbccdd010200"))
        }
        expectError(.truncated("RTP header extension")) { () throws(MediaError) in
            try RTPPacket.parse(hex("9060123411223344aabbccdd" + "bede0002" + "10ff0000"))
        }
        // Element id 3 claims 16 bytes inside a one-word block.
        expectError(.malformed("RTP extension element longer than its block")) { () throws(MediaError) in
            try RTPPacket.parse(hex("9060123411223344aabbccdd" + "bede0001" + "3f000000"))
        }
    }

    @Test func extensionPaddingStopIdAndOtherProfiles() throws {
        // Zero bytes are padding; id 15 ends parsing even with bytes after it.
        let p = try RTPPacket.parse(hex("9060123411223344aabbccdd" + "bede0002" + "002042f0ffffffff" + "99"))
        #expect(p.extensions == [2: [0x42]])
        #expect(Array(p.payload) == [0x99])
        // A byte of id 0 is one byte of padding even with length bits set (fuzzing
        // found it read as element 0, which no form writes back).
        let z = try RTPPacket.parse(hex("9060123411223344aabbccdd" + "bede0001" + "0f204200" + "99"))
        #expect(z.extensions == [2: [0x42]] && Array(z.payload) == [0x99])
        #expect(try RTPPacket.parse(z.serialized()) == z)
        // Two-byte form (0x100X): id, length (0 allowed), data, zero padding between elements.
        let q = try RTPPacket.parse(hex("9060123411223344aabbccdd" + "10000002" + "010142" + "00" + "110000" + "00" + "99"))
        #expect(q.extensions == [1: [0x42], 0x11: []] && Array(q.payload) == [0x99])
        // Another profile is skipped, not misread.
        let r = try RTPPacket.parse(hex("9060123411223344aabbccdd" + "abcd0001" + "01014200" + "99"))
        #expect(r.extensions.isEmpty && Array(r.payload) == [0x99])
        expectError(.malformed("RTP extension element longer than its block")) { () throws(MediaError) in
            try RTPPacket.parse(hex("9060123411223344aabbccdd" + "10000001" + "0105aaaa"))
        }
    }

    @Test func twoByteFormWhenAnElementNeedsIt() throws {
        var p = try RTPPacket(payloadType: 96, sequenceNumber: 7, timestamp: 9, ssrc: 3, payload: [0xEE])
        p.setCaptureTime(0x0102_0304_0506_0708)
        #expect(Array(p.serialized()[12..<16]) == [0xBE, 0xDE, 0, 3])
        let long = [UInt8](repeating: 0xAB, count: 70)
        try p.setExtension(id: 17, long)
        let bytes = p.serialized()
        // 2 + 8 + 2 + 70 = 82 bytes of elements, padded to 84: 21 words.
        #expect(Array(bytes[12..<16]) == [0x10, 0x00, 0, 21])
        #expect(Array(bytes[16..<18]) == [1, 8] && Array(bytes[26..<28]) == [17, 70])
        let back = try RTPPacket.parse(bytes)
        #expect(back == p && back.captureTime == 0x0102_0304_0506_0708)
        p.removeExtension(id: 17)
        #expect(Array(p.serialized()[12..<14]) == [0xBE, 0xDE])
    }

    @Test func invalidParametersAreRejected() throws {
        expectError(.invalidParameter("RTP payload type 128 above 127")) { () throws(MediaError) in
            try RTPPacket(payloadType: 128, sequenceNumber: 0, timestamp: 0, ssrc: 0, payload: [])
        }
        var p = try RTPPacket(payloadType: 96, sequenceNumber: 0, timestamp: 0, ssrc: 0, payload: [])
        expectError(.invalidParameter("extension id 0 is padding")) { () throws(MediaError) in try p.setExtension(id: 0, [1]) }
        expectError(.invalidParameter("extension element of 256 bytes, two-byte form carries at most 255")) { () throws(MediaError) in
            try p.setExtension(id: 2, Array(repeating: 0, count: 256))
        }
    }

    @Test func opusPayloadHelpers() throws {
        #expect(OpusPayload.frameIncrement20ms == 960)
        #expect(OpusPayload.timestampIncrement(milliseconds: 60) == 2880)
        expectError(.truncated("Opus payload")) { () throws(MediaError) in try OpusPayload.toc(of: []) }
        expectError(.truncated("Opus frame count byte")) { () throws(MediaError) in try OpusPayload.toc(of: [0xFB]) }
        let toc = try OpusPayload.toc(of: [0xFC, 0x01])  // config 31, stereo, code 0
        #expect(toc.config == 31 && toc.stereo && toc.frameCountCode == 0)
    }
}
