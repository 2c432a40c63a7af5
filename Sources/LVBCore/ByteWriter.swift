/// Appends big-endian integers and byte runs to a growable buffer.
public struct ByteWriter {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 64) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public var count: Int { bytes.count }

    public mutating func write(_ v: UInt8) { bytes.append(v) }
    public mutating func write(_ v: UInt16) { writeInteger(v) }
    public mutating func write(_ v: UInt32) { writeInteger(v) }
    public mutating func write(_ v: UInt64) { writeInteger(v) }
    public mutating func writeLE(_ v: UInt32) { writeInteger(v.byteSwapped) }
    public mutating func writeLE(_ v: UInt64) { writeInteger(v.byteSwapped) }

    public mutating func write<C: Collection>(bytes other: C) where C.Element == UInt8 {
        bytes.append(contentsOf: other)
    }

    /// A one-byte length prefix, then the bytes; the caller guarantees ≤ 255.
    public mutating func writeShortBytes<C: Collection>(_ other: C) where C.Element == UInt8 {
        precondition(other.count <= 255, "short byte run longer than 255")  // invariant: callers validate lengths first
        bytes.append(UInt8(other.count))
        bytes.append(contentsOf: other)
    }

    public mutating func writeZeros(_ n: Int) {
        bytes.append(contentsOf: repeatElement(0, count: n))
    }

    private mutating func writeInteger<T: FixedWidthInteger>(_ v: T) {
        withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) }
    }
}
