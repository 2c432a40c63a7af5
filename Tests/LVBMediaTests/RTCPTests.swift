import LVBCore
import TestAssertions
import Testing
@testable import LVBMedia

@Suite struct RTCPTests {
    // RFC 3550 §6.4.1: SR, RC 0, length 6; SSRC 01020304, NTP e1e2e3e4.f1f2f3f4, RTP 960, 10 packets, 1600 octets.
    static let sr = hex("80c80006" + "01020304" + "e1e2e3e4f1f2f3f4" + "000003c0" + "0000000a" + "00000640")
    // RFC 3550 §6.4.2: RR, RC 1, length 7; one block for 05060708: fraction 0x40, cumulative 3,
    // highest 0x00010064, jitter 16, LSR e3e4f1f2, DLSR 1 s.
    static let rr = hex("81c90007" + "01020304" + "05060708" + "40000003" + "00010064" + "00000010" + "e3e4f1f2" + "00010000")
    // RFC 4585 §6.2.1: lost {100, 101, 117} → (PID 100, BLP 0x0001), (PID 117, BLP 0).
    static let nack = hex("81cd0004" + "00000001" + "01020304" + "00640001" + "00750000")
    // RFC 4585 §6.3.1: PLI, FMT 1, PT 206, length 2.
    static let pli = hex("81ce0002" + "00000001" + "01020304")
    // RFC 3550 §6.7: APP, subtype 0, PT 204, length 2; SSRC 01020304, name "LVBK", no data.
    static let keyframesOnly = hex("80cc0002" + "01020304" + "4c56424b")
    // APP subtype 5, length 4, name "TEST", 8 bytes of data.
    static let appWithData = hex("85cc0004" + "01020304" + "54455354" + "0a0b0c0d0e0f1011")

    // RFC 3550 §6.6: BYE, SC 1, PT 203, length 1; SSRC 01020304.
    static let bye = hex("81cb0001" + "01020304")
    // BYE, SC 2, length 4: two sources and the reason "gone" (length 4, padded with 3 zero octets).
    static let byeWithReason = hex("82cb0004" + "01020304" + "05060708" + "04676f6e" + "65000000")

    static let block = RTCPReportBlock(ssrc: 0x0506_0708, fractionLost: 0x40, cumulativeLost: 3,
                                       extendedHighestSequence: 0x0001_0064, jitter: 16,
                                       lastSenderReport: 0xE3E4_F1F2, delaySinceLastSenderReport: 0x0001_0000)

    @Test func senderReport() throws {
        let expected = RTCPPacket.senderReport(try RTCPSenderReport(
            ssrc: 0x0102_0304, ntpTimestamp: 0xE1E2_E3E4_F1F2_F3F4, rtpTimestamp: 960, packetCount: 10, octetCount: 1600))
        #expect(try RTCPPacket.parseCompound(Self.sr) == [expected])
        #expect(expected.serialized() == Self.sr)
    }

    @Test func receiverReportWithOneBlock() throws {
        let expected = RTCPPacket.receiverReport(try RTCPReceiverReport(ssrc: 0x0102_0304, reportBlocks: [Self.block]))
        #expect(try RTCPPacket.parseCompound(Self.rr) == [expected])
        #expect(expected.serialized() == Self.rr)
    }

    @Test func negativeCumulativeLossIsSignExtended() throws {
        var bytes = Self.rr
        bytes[13...15] = [0xFF, 0xFF, 0xFF]
        guard case let .receiverReport(rr)? = try RTCPPacket.parseCompound(bytes).first else {
            Issue.record("no RR"); return
        }
        #expect(rr.reportBlocks.first?.cumulativeLost == -1)
        #expect(RTCPPacket.receiverReport(rr).serialized() == bytes)
    }

    @Test func nackBuildsAndExpands() throws {
        let built = try RTCPGenericNACK(senderSSRC: 1, mediaSSRC: 0x0102_0304, lost: [100, 101, 117])
        #expect(built.entries == [.init(packetID: 100, lostBitmask: 1), .init(packetID: 117, lostBitmask: 0)])
        #expect(RTCPPacket.nack(built).serialized() == Self.nack)
        #expect(try RTCPPacket.parseCompound(Self.nack) == [.nack(built)])
        #expect(built.lostSequenceNumbers == [100, 101, 117])
        expectError(.invalidParameter("NACK needs at least one lost sequence number")) { () throws(MediaError) in
            try RTCPGenericNACK(senderSSRC: 1, mediaSSRC: 2, lost: [])
        }
    }

    @Test func nackRoundTripsManyLossesAcrossWrap() throws {
        let lost: Set<UInt16> = [65530, 65535, 0, 3, 40, 41, 56, 57, 1000]
        let nack = try RTCPGenericNACK(senderSSRC: 9, mediaSSRC: 8, lost: lost)
        #expect(Set(nack.lostSequenceNumbers) == lost)
        #expect(nack.lostSequenceNumbers.count == lost.count)
        #expect(try RTCPPacket.parseCompound(RTCPPacket.nack(nack).serialized()) == [.nack(nack)])
    }

    @Test func pictureLossIndication() throws {
        let expected = RTCPPacket.pli(RTCPPictureLossIndication(senderSSRC: 1, mediaSSRC: 0x0102_0304))
        #expect(try RTCPPacket.parseCompound(Self.pli) == [expected])
        #expect(expected.serialized() == Self.pli)
    }

    @Test func appKeyframesOnlyRequest() throws {
        let expected = RTCPPacket.app(.keyframesOnly(ssrc: 0x0102_0304))
        #expect(try RTCPPacket.parseCompound(Self.keyframesOnly) == [expected])
        #expect(expected.serialized() == Self.keyframesOnly)
        #expect(RTCPApp.keyframesOnly(ssrc: 1).isKeyframesOnly)
        #expect(try RTCPApp(subtype: 0, ssrc: 1, name: Array("LVBK".utf8)) == .keyframesOnly(ssrc: 1))
        #expect(try !RTCPApp(subtype: 1, ssrc: 1, name: Array("LVBK".utf8)).isKeyframesOnly)
        #expect(try !RTCPApp(subtype: 0, ssrc: 1, name: Array("LVBX".utf8)).isKeyframesOnly)
    }

    @Test func appWithSubtypeAndDataRoundTrips() throws {
        let app = try RTCPApp(subtype: 5, ssrc: 0x0102_0304, name: Array("TEST".utf8),
                              data: [0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11])
        #expect(try RTCPPacket.parseCompound(Self.appWithData) == [.app(app)])
        #expect(RTCPPacket.app(app).serialized() == Self.appWithData)
        // In a compound after a receiver report, as a preview sends it; padding is not data.
        let padded = hex("a0cc0003" + "01020304" + "4c56424b" + "00000004")
        #expect(try RTCPPacket.parseCompound(Self.rr + padded) == [try RTCPPacket.parseCompound(Self.rr)[0], .app(.keyframesOnly(ssrc: 0x0102_0304))])
    }

    @Test func appParametersAreChecked() {
        expectError(.invalidParameter("APP subtype 32, at most 31")) { () throws(MediaError) in
            try RTCPApp(subtype: 32, ssrc: 1, name: Array("LVBK".utf8))
        }
        expectError(.invalidParameter("APP name must be 4 ASCII bytes")) { () throws(MediaError) in
            try RTCPApp(subtype: 0, ssrc: 1, name: Array("LVB".utf8))
        }
        expectError(.invalidParameter("APP name must be 4 ASCII bytes")) { () throws(MediaError) in
            try RTCPApp(subtype: 0, ssrc: 1, name: [0x4C, 0x56, 0x42, 0xCB])
        }
        expectError(.invalidParameter("APP data of 3 bytes: a multiple of 4, at most 262132")) { () throws(MediaError) in
            try RTCPApp(subtype: 0, ssrc: 1, name: Array("LVBK".utf8), data: [1, 2, 3])
        }
    }

    @Test func compoundKeepsOrderAndSkipsUnknownTypes() throws {
        let sdes = hex("81ca0002" + "01020304" + "00000000")  // SDES (202), unknown here
        let sli = hex("82ce0002" + "00000001" + "01020304")  // PSFB FMT 2 (SLI), not PLI
        let parsed = try RTCPPacket.parseCompound(Self.sr + sdes + Self.rr + sli + Self.nack + Self.pli)
        #expect(parsed.count == 4)
        #expect(RTCPPacket.serializeCompound(parsed) == Self.sr + Self.rr + Self.nack + Self.pli)
    }

    @Test func everyTruncationFails() {
        for vector in [Self.sr, Self.rr, Self.nack, Self.pli, Self.keyframesOnly, Self.appWithData] {
            for n in 0..<vector.count {
                #expect(throws: MediaError.self) { try RTCPPacket.parseCompound(Array(vector.prefix(n))) }
            }
        }
        expectError(.truncated("RTCP packet")) { () throws(MediaError) in try RTCPPacket.parseCompound([UInt8]()) }
        expectError(.truncated("RTCP header")) { () throws(MediaError) in try RTCPPacket.parseCompound(Array(Self.pli.prefix(3))) }
        expectError(.truncated("RTCP packet")) { () throws(MediaError) in try RTCPPacket.parseCompound(Array(Self.pli.prefix(11))) }
        // A whole packet followed by a cut one fails the whole datagram.
        expectError(.truncated("RTCP header")) { () throws(MediaError) in try RTCPPacket.parseCompound(Self.pli + [0x81]) }
    }

    @Test func malformedValuesRaiseTheirError() {
        expectError(.malformed("RTCP version 1")) { () throws(MediaError) in
            try RTCPPacket.parseCompound(hex("41ce0002" + "00000001" + "01020304"))
        }
        expectError(.malformed("generic NACK length must cover whole FCI entries")) { () throws(MediaError) in
            try RTCPPacket.parseCompound(hex("81cd0002" + "00000001" + "01020304"))
        }
        expectError(.malformed("PLI length must be 2")) { () throws(MediaError) in
            try RTCPPacket.parseCompound(hex("81ce0003" + "00000001" + "01020304" + "00000000"))
        }
        // RC 2 but room for one block.
        expectError(.malformed("RR length does not cover its report blocks")) { () throws(MediaError) in
            var bytes = Self.rr
            bytes[0] = 0x82
            return try RTCPPacket.parseCompound(bytes)
        }
        expectError(.malformed("SR length does not cover its report blocks")) { () throws(MediaError) in
            var bytes = Self.sr
            bytes[0] = 0x81
            return try RTCPPacket.parseCompound(bytes)
        }
        // APP: SSRC without a name; data not in whole words (3 bytes left after 1 of padding); a non-ASCII name.
        expectError(.malformed("APP length must cover SSRC, name and whole data words")) { () throws(MediaError) in
            try RTCPPacket.parseCompound(hex("80cc0001" + "01020304"))
        }
        expectError(.malformed("APP length must cover SSRC, name and whole data words")) { () throws(MediaError) in
            try RTCPPacket.parseCompound(hex("a0cc0003" + "01020304" + "4c56424b" + "00000001"))
        }
        expectError(.malformed("APP name not ASCII")) { () throws(MediaError) in
            try RTCPPacket.parseCompound(hex("80cc0002" + "01020304" + "4c5642cb"))
        }
        expectError(.malformed("RTCP padding longer than packet")) { () throws(MediaError) in
            try RTCPPacket.parseCompound(hex("a1ce0002" + "00000001" + "010203ff"))
        }
    }

    @Test func goodbyeParsesWithOrWithoutAReasonAndSerializesWithout() throws {
        let one = RTCPPacket.bye(try RTCPBye(ssrcs: [0x0102_0304]))
        #expect(try RTCPPacket.parseCompound(Self.bye) == [one])
        #expect(one.serialized() == Self.bye)
        let two = RTCPPacket.bye(try RTCPBye(ssrcs: [0x0102_0304, 0x0506_0708]))
        #expect(try RTCPPacket.parseCompound(Self.byeWithReason) == [two])
        #expect(try RTCPPacket.parseCompound(two.serialized()) == [two])
        // A reason longer than what is left, and sources the length does not cover, fail.
        expectError(.malformed("BYE reason longer than packet")) { () throws(MediaError) in
            try RTCPPacket.parseCompound(hex("81cb0002" + "01020304" + "09000000"))
        }
        expectError(.malformed("BYE length does not cover its sources")) { () throws(MediaError) in
            try RTCPPacket.parseCompound(hex("82cb0001" + "01020304"))
        }
        expectError(.malformed("BYE lists at most 31 sources")) { () throws(MediaError) in
            try RTCPBye(ssrcs: Array(0..<32))
        }
    }
}
