import LVBCore
import Testing

/// Every read from untrusted bytes is bounds-checked: a read past the end
/// throws `.truncated` naming what it needed and what was left, and consumes nothing.
@Suite struct ByteReaderTests {
    @Test func readsBigEndianIntegersInOrder() throws {
        var r = ByteReader([0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F])
        #expect(try r.readUInt8() == 0x01)
        #expect(try r.readUInt16() == 0x0203)
        #expect(try r.readUInt32() == 0x0405_0607)
        #expect(try r.readUInt64() == 0x0809_0A0B_0C0D_0E0F)
        #expect(r.isAtEnd)
        #expect(r.remaining == 0)
        try r.expectEnd()
    }

    @Test func readsLittleEndianIntegers() throws {
        var r = ByteReader([0x04, 0x03, 0x02, 0x01, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01])
        #expect(try r.readUInt32LE() == 0x0102_0304)
        #expect(try r.readUInt64LE() == 0x0102_0304_0506_0708)
        try r.expectEnd()
    }

    @Test func readsByteRunsAndTheRest() throws {
        var r = ByteReader([3, 0xAA, 0xBB, 0xCC, 0x01, 0x02, 0x03])
        #expect(Array(try r.readShortBytes()) == [0xAA, 0xBB, 0xCC])
        #expect(Array(try r.readBytes(1)) == [0x01])
        #expect(Array(try r.readBytes(0)) == [])
        #expect(Array(r.readRest()) == [0x02, 0x03])
        #expect(Array(r.readRest()) == [])
        try r.expectEnd()
    }

    @Test func zeroLengthShortRunIsEmpty() throws {
        var r = ByteReader([0])
        #expect(try r.readShortBytes().isEmpty)
        try r.expectEnd()
    }

    /// A reader over a slice that does not start at index 0 (as `Packet.parse` gets).
    @Test func readsFromASliceWithNonZeroStartIndex() throws {
        let whole: [UInt8] = [0xFF, 0xFF, 0x12, 0x34, 0x56]
        var r = ByteReader(whole[2...])
        #expect(r.remaining == 3)
        #expect(try r.readUInt16() == 0x1234)
        #expect(throws: CoreError.truncated(needed: 2, remaining: 1)) { try r.readUInt16() }
        #expect(try r.readUInt8() == 0x56)
        try r.expectEnd()
    }

    @Test func readUInt8PastTheEnd() {
        var r = ByteReader([UInt8]())
        #expect(throws: CoreError.truncated(needed: 1, remaining: 0)) { try r.readUInt8() }
        #expect(r.remaining == 0)
    }

    @Test(arguments: 0...1)
    func readUInt16PastTheEnd(_ available: Int) {
        var r = ByteReader([UInt8](repeating: 7, count: available))
        #expect(throws: CoreError.truncated(needed: 2, remaining: available)) { try r.readUInt16() }
        #expect(r.remaining == available)
    }

    @Test(arguments: 0...3)
    func readUInt32PastTheEnd(_ available: Int) {
        var r = ByteReader([UInt8](repeating: 7, count: available))
        #expect(throws: CoreError.truncated(needed: 4, remaining: available)) { try r.readUInt32() }
        #expect(throws: CoreError.truncated(needed: 4, remaining: available)) { try r.readUInt32LE() }
        #expect(r.remaining == available)
    }

    @Test(arguments: 0...7)
    func readUInt64PastTheEnd(_ available: Int) {
        var r = ByteReader([UInt8](repeating: 7, count: available))
        #expect(throws: CoreError.truncated(needed: 8, remaining: available)) { try r.readUInt64() }
        #expect(throws: CoreError.truncated(needed: 8, remaining: available)) { try r.readUInt64LE() }
        #expect(r.remaining == available)
    }

    @Test func readBytesPastTheEnd() {
        var r = ByteReader([1, 2, 3, 4])
        #expect(throws: CoreError.truncated(needed: 5, remaining: 4)) { try r.readBytes(5) }
        #expect(throws: CoreError.truncated(needed: Int.max, remaining: 4)) { try r.readBytes(Int.max) }
        #expect(r.remaining == 4)
    }

    @Test func negativeLengthIsRejected() {
        var r = ByteReader([1, 2, 3, 4])
        #expect(throws: CoreError.self) { try r.readBytes(-1) }
        #expect(r.remaining == 4)
    }

    /// The length byte is consumed; the run it announces is not there.
    @Test func shortBytesWithALyingLength() {
        var r = ByteReader([5, 0xAA, 0xBB])
        #expect(throws: CoreError.truncated(needed: 5, remaining: 2)) { try r.readShortBytes() }
        var empty = ByteReader([UInt8]())
        #expect(throws: CoreError.truncated(needed: 1, remaining: 0)) { try empty.readShortBytes() }
    }

    @Test func failedReadLeavesTheRestReadable() throws {
        var r = ByteReader([0xAB, 0xCD, 0xEF])
        #expect(throws: CoreError.truncated(needed: 4, remaining: 3)) { try r.readUInt32() }
        #expect(try r.readUInt16() == 0xABCD)
        #expect(throws: CoreError.truncated(needed: 2, remaining: 1)) { try r.readUInt16() }
        #expect(try r.readUInt8() == 0xEF)
        #expect(throws: CoreError.truncated(needed: 1, remaining: 0)) { try r.readUInt8() }
    }

    @Test func expectEndReportsTrailingBytes() throws {
        var r = ByteReader([1, 2, 3])
        #expect(throws: CoreError.trailingBytes(3)) { try r.expectEnd() }
        _ = try r.readUInt8()
        #expect(throws: CoreError.trailingBytes(2)) { try r.expectEnd() }
        _ = try r.readUInt16()
        #expect(throws: Never.self) { try r.expectEnd() }
        try ByteReader([UInt8]()).expectEnd()
    }
}

@Suite struct ByteReaderSliceTests {
    @Test func aSliceKeepsItsIndices() throws {
        let buffer: [UInt8] = [9, 9, 1, 2, 3, 4]
        var r = ByteReader(buffer[2...])
        let run = try r.readBytes(2)
        #expect(run.startIndex == 2)
        #expect(Array(buffer[run.startIndex..<run.endIndex]) == [1, 2])
        #expect(r.readRest().startIndex == 4)
    }
}
