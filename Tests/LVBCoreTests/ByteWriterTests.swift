import LVBCore
import Testing

/// What `ByteWriter` writes, `ByteReader` reads back unchanged, byte for byte.
@Suite struct ByteWriterTests {
    @Test func writesBigAndLittleEndianLayouts() {
        var w = ByteWriter()
        w.write(UInt8(0x01))
        w.write(UInt16(0x0203))
        w.write(UInt32(0x0405_0607))
        w.write(UInt64(0x0809_0A0B_0C0D_0E0F))
        w.writeLE(UInt32(0x1314_1516))
        w.writeLE(UInt64(0x1718_191A_1B1C_1D1E))
        #expect(w.bytes == [
            0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F,
            0x16, 0x15, 0x14, 0x13, 0x1E, 0x1D, 0x1C, 0x1B, 0x1A, 0x19, 0x18, 0x17,
        ])
        #expect(w.count == 27)
    }

    @Test func writesRunsPrefixesAndZeros() {
        var w = ByteWriter(capacity: 0)
        w.write(bytes: [9, 8])
        w.writeShortBytes([7, 6, 5])
        w.writeShortBytes([UInt8]())
        w.writeZeros(3)
        w.writeZeros(0)
        #expect(w.bytes == [9, 8, 3, 7, 6, 5, 0, 0, 0, 0])
    }

    @Test func longestShortRunHas255Bytes() throws {
        let run = [UInt8](repeating: 0x5A, count: 255)
        var w = ByteWriter()
        w.writeShortBytes(run)
        #expect(w.count == 256)
        var r = ByteReader(w.bytes)
        #expect(Array(try r.readShortBytes()) == run)
        try r.expectEnd()
    }

    @Test func extremeValuesRoundTrip() throws {
        var w = ByteWriter()
        for v: UInt64 in [0, 1, UInt64.max, UInt64.max - 1, 1 << 63] {
            w.write(v)
            w.writeLE(v)
        }
        for v: UInt32 in [0, UInt32.max, 1 << 31] {
            w.write(v)
            w.writeLE(v)
        }
        var r = ByteReader(w.bytes)
        for v: UInt64 in [0, 1, UInt64.max, UInt64.max - 1, 1 << 63] {
            #expect(try r.readUInt64() == v)
            #expect(try r.readUInt64LE() == v)
        }
        for v: UInt32 in [0, UInt32.max, 1 << 31] {
            #expect(try r.readUInt32() == v)
            #expect(try r.readUInt32LE() == v)
        }
        try r.expectEnd()
    }

    /// Random sequences of every field kind, written then read back in order.
    @Test(arguments: [1, 2, 3, 42, 1000] as [UInt64])
    func randomSequencesRoundTrip(seed: UInt64) throws {
        enum Field: Equatable {
            case u8(UInt8), u16(UInt16), u32(UInt32), u64(UInt64), u32le(UInt32), u64le(UInt64)
            case run([UInt8]), short([UInt8])
        }
        let random = SeededRandom(seed: seed)
        var fields = [Field]()
        for _ in 0..<200 {
            let v = random.next()
            switch v % 8 {
            case 0: fields.append(.u8(UInt8(truncatingIfNeeded: v >> 8)))
            case 1: fields.append(.u16(UInt16(truncatingIfNeeded: v >> 8)))
            case 2: fields.append(.u32(UInt32(truncatingIfNeeded: v >> 8)))
            case 3: fields.append(.u64(random.next()))
            case 4: fields.append(.u32le(UInt32(truncatingIfNeeded: v >> 8)))
            case 5: fields.append(.u64le(random.next()))
            case 6: fields.append(.run(random.bytes(Int((v >> 8) % 40))))
            default: fields.append(.short(random.bytes(Int((v >> 8) % 256))))
            }
        }
        var w = ByteWriter()
        for f in fields {
            switch f {
            case let .u8(x): w.write(x)
            case let .u16(x): w.write(x)
            case let .u32(x): w.write(x)
            case let .u64(x): w.write(x)
            case let .u32le(x): w.writeLE(x)
            case let .u64le(x): w.writeLE(x)
            case let .run(b): w.write(bytes: b)
            case let .short(b): w.writeShortBytes(b)
            }
        }
        var r = ByteReader(w.bytes)
        var read = [Field]()
        for f in fields {
            switch f {
            case .u8: read.append(.u8(try r.readUInt8()))
            case .u16: read.append(.u16(try r.readUInt16()))
            case .u32: read.append(.u32(try r.readUInt32()))
            case .u64: read.append(.u64(try r.readUInt64()))
            case .u32le: read.append(.u32le(try r.readUInt32LE()))
            case .u64le: read.append(.u64le(try r.readUInt64LE()))
            case let .run(b): read.append(.run(Array(try r.readBytes(b.count))))
            case .short: read.append(.short(Array(try r.readShortBytes())))
            }
        }
        #expect(read == fields)
        try r.expectEnd()
    }
}
