// The one wire form of an address, shared by join tickets and gossip
// membership messages: family(1: 4 or 6) ‖ address(4 or 16) ‖ port(2), big-endian.

public extension ByteWriter {
    mutating func write(address: PeerAddress) {
        switch address.host {
        case let .v4(a): write(UInt8(4)); write(a)
        case let .v6(b): write(UInt8(6)); write(bytes: b)
        }
        write(address.port)
    }
}

public extension ByteReader {
    /// Reads an address; an unknown family is `.badAddress("family N")`.
    mutating func readAddress() throws(CoreError) -> PeerAddress {
        let host: PeerAddress.Host
        switch try readUInt8() {
        case 4: host = .v4(try readUInt32())
        case 6: host = .v6(Array(try readBytes(16)))
        case let family: throw .badAddress("family \(family)")
        }
        return PeerAddress(host: host, port: try readUInt16())
    }
}
