import LVBCore
import TestAssertions
import Testing
@testable import LVBMedia

@Suite struct VP8PayloadTests {
    // RFC 7741 §4.2: X S PID 0 | I | M=0 PictureID 5 | data aa
    static let short = hex("908005aa")
    // X S | I | M=1 PictureID 0x0123 | data bb
    static let long = hex("90808123bb")
    // X N S | I L T K | PictureID 0x7fff | TL0PICIDX 7 | TID 2 Y KEYIDX 5 | data cc
    static let all = hex("b0f0ffff07a5cc")

    @Test func descriptorsParseAndRoundTrip() throws {
        let (d7, data7) = try VP8PayloadDescriptor.parse(Self.short[...])
        #expect(d7 == VP8PayloadDescriptor(startOfPartition: true, pictureID: .short(5)) && Array(data7) == [0xAA])
        #expect(d7.serialized() + data7 == Self.short)
        let (d15, data15) = try VP8PayloadDescriptor.parse(Self.long[...])
        #expect(d15.pictureID == .long(0x0123) && d15.pictureID?.value == 0x0123 && Array(data15) == [0xBB])
        #expect(d15.serialized() + data15 == Self.long)
        let (d, data) = try VP8PayloadDescriptor.parse(Self.all[...])
        #expect(d.nonReference && d.startOfPartition && d.partitionIndex == 0)
        #expect(d.pictureID == .long(0x7FFF) && d.tl0PicIndex == 7 && d.keyIndex == 5)
        #expect(d.temporalLayer?.id == 2 && d.temporalLayer?.layerSync == true)
        #expect(d.serialized() + data == Self.all)
        // No optional field: a one-byte descriptor.
        #expect(VP8PayloadDescriptor(startOfPartition: false, partitionIndex: 3).serialized() == [0x03])
    }

    @Test func everyTruncationFails() {
        for vector in [Self.short, Self.long, Self.all] {
            for n in 0..<vector.count {
                #expect(throws: MediaError.self) { try VP8PayloadDescriptor.parse(vector.prefix(n)) }
            }
        }
        expectError(.truncated("VP8 payload descriptor")) { () throws(MediaError) in try VP8PayloadDescriptor.parse(Self.long.prefix(3)) }
        expectError(.truncated("VP8 payload data")) { () throws(MediaError) in try VP8PayloadDescriptor.parse(Self.long.prefix(4)) }
    }

    static func fakeFrame(_ count: Int, keyframe: Bool, seed: UInt8) -> [UInt8] {
        var frame = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31) ^ seed }
        frame[0] = keyframe ? frame[0] & 0xFE : frame[0] | 0x01
        return frame
    }

    static func packets(_ payloads: [[UInt8]], firstSeq: UInt16, timestamp: UInt32) throws -> [RTPPacket] {
        try payloads.enumerated().map { i, payload in
            try RTPPacket(marker: i == payloads.count - 1, payloadType: 96, sequenceNumber: firstSeq &+ UInt16(i),
                          timestamp: timestamp, ssrc: 7, payload: payload[...])
        }
    }

    @Test func packetizerFitsMaxSizeAndNumbersPictures() throws {
        var packetizer = try VP8Packetizer(maxPayloadSize: 1100, firstPictureID: 0x7FFF)
        let payloads = try packetizer.packetize(Self.fakeFrame(5000, keyframe: true, seed: 1))
        #expect(payloads.count == 5 && payloads.allSatisfy { $0.count <= 1100 })
        #expect(Hex.encode(payloads[0].prefix(4)) == "9080ffff" && Hex.encode(payloads[1].prefix(4)) == "8080ffff")
        let next = try packetizer.packetize([0x01])
        #expect(Hex.encode(next[0]) == "9080800001")  // PictureID wrapped to 0
        expectError(.invalidParameter("empty VP8 frame")) { () throws(MediaError) in try packetizer.packetize([]) }
        #expect(throws: MediaError.self) { try VP8Packetizer(maxPayloadSize: 4) }
    }

    @Test func shuffledPacketsReassembleTheFrame() throws {
        var packetizer = try VP8Packetizer(maxPayloadSize: 1100, firstPictureID: 42)
        let frame = Self.fakeFrame(5000, keyframe: true, seed: 9)
        var generator = SystemRandomNumberGenerator()
        for firstSeq: UInt16 in [1000, 65533] {  // the second run wraps the sequence number
            var packets = try Self.packets(try packetizer.packetize(frame), firstSeq: firstSeq, timestamp: UInt32(firstSeq))
            packets.shuffle(using: &generator)
            var assembler = VP8FrameAssembler()
            var outputs: [VP8AssemblerOutput] = []
            for p in packets { outputs += try assembler.insert(p) }
            outputs += try assembler.insert(packets[0])  // a late duplicate changes nothing
            guard outputs.count == 1, case let .frame(out) = outputs[0] else {
                Issue.record("expected one frame, got \(outputs)"); continue
            }
            #expect(out.data == frame && out.isKeyframe && out.timestamp == UInt32(firstSeq))
            #expect(assembler.flush().isEmpty)
        }
    }

    @Test func lostMiddlePacketReportsIncompleteFrame() throws {
        var packetizer = try VP8Packetizer(maxPayloadSize: 1100)
        let first = try Self.packets(try packetizer.packetize(Self.fakeFrame(5000, keyframe: true, seed: 2)),
                                     firstSeq: 100, timestamp: 3000)
        let second = try Self.packets(try packetizer.packetize(Self.fakeFrame(900, keyframe: false, seed: 3)),
                                      firstSeq: 105, timestamp: 6000)
        var assembler = VP8FrameAssembler()
        var outputs: [VP8AssemblerOutput] = []
        for p in first where p.sequenceNumber != 102 { outputs += try assembler.insert(p) }
        #expect(outputs.isEmpty)
        for p in second { outputs += try assembler.insert(p) }
        #expect(outputs.count == 2)
        #expect(outputs.first == .incomplete(VP8IncompleteFrame(timestamp: 3000, missing: [102], hasStart: true, hasEnd: true)))
        guard case let .frame(delivered)? = outputs.last else { Issue.record("no frame"); return }
        #expect(delivered.timestamp == 6000 && !delivered.isKeyframe && delivered.pictureID == 1)
        // The lost packet arriving late is ignored: its frame is gone.
        #expect(try assembler.insert(first[2]).isEmpty)
    }

    @Test func flushReportsWaitingFramesAndBadPayloadsThrow() throws {
        var assembler = VP8FrameAssembler()
        var packetizer = try VP8Packetizer(maxPayloadSize: 100)
        let packets = try Self.packets(try packetizer.packetize(Self.fakeFrame(300, keyframe: true, seed: 4)),
                                       firstSeq: 10, timestamp: 1)
        _ = try assembler.insert(packets[1])
        #expect(assembler.flush() == [.incomplete(VP8IncompleteFrame(timestamp: 1, missing: [], hasStart: false, hasEnd: false))])
        let empty = try RTPPacket(payloadType: 96, sequenceNumber: 1, timestamp: 1, ssrc: 1, payload: [])
        expectError(.truncated("VP8 payload descriptor")) { () throws(MediaError) in try assembler.insert(empty) }
    }
}
