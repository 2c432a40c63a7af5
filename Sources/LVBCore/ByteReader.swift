/// Reads big-endian integers and byte runs from untrusted input; every read is
/// checked against what remains and fails with `CoreError.truncated`.
public struct ByteReader {
    public let bytes: ArraySlice<UInt8>
    public private(set) var offset: Int

    public init<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        self.bytes = ArraySlice(bytes)
        self.offset = self.bytes.startIndex
    }

    /// Reads a slice in place: no copy, and slices it returns keep the
    /// indices of the original buffer (so they can be used against it).
    public init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        self.offset = bytes.startIndex
    }

    public var remaining: Int { bytes.endIndex - offset }
    public var isAtEnd: Bool { offset == bytes.endIndex }

    public mutating func readUInt8() throws(CoreError) -> UInt8 {
        guard remaining >= 1 else { throw .truncated(needed: 1, remaining: remaining) }
        defer { offset += 1 }
        return bytes[offset]
    }

    public mutating func readUInt16() throws(CoreError) -> UInt16 {
        try readInteger(UInt16.self)
    }

    public mutating func readUInt32() throws(CoreError) -> UInt32 {
        try readInteger(UInt32.self)
    }

    public mutating func readUInt64() throws(CoreError) -> UInt64 {
        try readInteger(UInt64.self)
    }

    /// Little-endian variant, for formats (WireGuard-style headers) that use it.
    public mutating func readUInt32LE() throws(CoreError) -> UInt32 {
        try readInteger(UInt32.self).byteSwapped
    }

    public mutating func readUInt64LE() throws(CoreError) -> UInt64 {
        try readInteger(UInt64.self).byteSwapped
    }

    public mutating func readBytes(_ count: Int) throws(CoreError) -> ArraySlice<UInt8> {
        guard count >= 0, remaining >= count else { throw .truncated(needed: count, remaining: remaining) }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    /// A length-prefixed (one byte) run.
    public mutating func readShortBytes() throws(CoreError) -> ArraySlice<UInt8> {
        let n = Int(try readUInt8())
        return try readBytes(n)
    }

    public mutating func readRest() -> ArraySlice<UInt8> {
        defer { offset = bytes.endIndex }
        return bytes[offset...]
    }

    /// Fails unless the whole input was consumed: trailing bytes are an error.
    public func expectEnd() throws(CoreError) {
        guard isAtEnd else { throw .trailingBytes(remaining) }
    }

    private mutating func readInteger<T: FixedWidthInteger>(_: T.Type) throws(CoreError) -> T {
        let size = MemoryLayout<T>.size
        guard remaining >= size else { throw .truncated(needed: size, remaining: remaining) }
        var value: T = 0
        for i in 0..<size { value = (value << 8) | T(bytes[offset + i]) }
        offset += size
        return value
    }
}
