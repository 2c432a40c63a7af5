import LVBCore
import LVBCrypto

/// `ByteReader` with the errors of the room event format: running out is
/// `truncated`, bytes left over are `trailingBytes`, a bad value says which.
/// Event kinds read their bodies with it.
public struct RoomEventReader {
    private var inner: ByteReader

    init(_ bytes: ArraySlice<UInt8>) { inner = ByteReader(bytes) }

    public var isAtEnd: Bool { inner.isAtEnd }

    public mutating func uint8() throws(EventError) -> UInt8 {
        guard let v = try? inner.readUInt8() else { throw .truncated }
        return v
    }

    public mutating func uint16() throws(EventError) -> UInt16 {
        guard let v = try? inner.readUInt16() else { throw .truncated }
        return v
    }

    public mutating func uint32() throws(EventError) -> UInt32 {
        guard let v = try? inner.readUInt32() else { throw .truncated }
        return v
    }

    public mutating func uint64() throws(EventError) -> UInt64 {
        guard let v = try? inner.readUInt64() else { throw .truncated }
        return v
    }

    public mutating func bytes(_ count: Int) throws(EventError) -> ArraySlice<UInt8> {
        guard let v = try? inner.readBytes(count) else { throw .truncated }
        return v
    }

    public mutating func rest() -> ArraySlice<UInt8> { inner.readRest() }

    /// A flag byte that must be 0 or 1, named in the error.
    public mutating func flag(_ what: String) throws(EventError) -> Bool {
        switch try uint8() {
        case 0: return false
        case 1: return true
        case let v: throw .badValue("\(what) flag \(v) is not 0 or 1")
        }
    }

    /// A node id: 32 bytes that must be a valid node key.
    public mutating func nodeID() throws(EventError) -> NodeID {
        let key = try bytes(RoomEventFormat.authorLength)
        guard let id = try? NodeID(publicKey: Array(key)) else { throw .badValue("target is not a valid node key") }
        return id
    }

    public mutating func address() throws(EventError) -> PeerAddress {
        do { return try inner.readAddress() } catch {
            if case .badAddress(let why) = error { throw .badValue("relay address: \(why)") }
            throw .truncated
        }
    }

    /// The TLV fields filling the rest (type(1) ‖ len(1) ‖ value): in strictly
    /// increasing type order (so each at most once), none of an unknown type;
    /// none empty is the kind's check. Exactly one encoding per value.
    public mutating func fields(of what: String, types: ClosedRange<UInt8>) throws(EventError) -> [(UInt8, ArraySlice<UInt8>)] {
        var out: [(UInt8, ArraySlice<UInt8>)] = []
        var last: UInt8 = 0
        while !isAtEnd {
            let type = try uint8()
            guard types.contains(type) else { throw .badValue("\(what) field type \(type) is unknown") }
            guard type > last else { throw .badValue("\(what) fields out of order or repeated (type \(type) after \(last))") }
            last = type
            out.append((type, try bytes(Int(try uint8()))))
        }
        return out
    }

    func expectEnd() throws(EventError) {
        guard inner.isAtEnd else { throw .trailingBytes }
    }
}

extension ByteWriter {
    /// One TLV field (type ‖ len(1) ‖ value), left out when `value` is nil.
    public mutating func writeField(_ type: UInt8, _ value: [UInt8]?) {
        guard let value else { return }
        write(type)
        writeShortBytes(value)
    }
}
