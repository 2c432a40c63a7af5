import LVBCore

/// MAPPED-ADDRESS and XOR-MAPPED-ADDRESS values (RFC 8489 §14.1, §14.2):
///
///     0 0 0 0 0 0 0 0 |    Family     |         (X-)Port              |
///     (X-)Address (32 bits for IPv4, 128 bits for IPv6)
///
/// XOR-MAPPED-ADDRESS hides the address from middleboxes that rewrite it:
/// the port is XORed with the cookie's top 16 bits, an IPv4 address with
/// the cookie, an IPv6 address with the cookie followed by the transaction id.
public enum STUNAddress {
    public static func encodeXOR(_ address: PeerAddress, transactionID: [UInt8]) -> [UInt8] {
        let key = mask(transactionID)
        var w = ByteWriter(capacity: 20)
        w.write(UInt8(0))
        w.write(address.isIPv4 ? RendezvousConstants.familyIPv4 : RendezvousConstants.familyIPv6)
        w.write(address.port ^ UInt16(RendezvousConstants.magicCookie >> 16))
        w.write(bytes: zip(addressBytes(address), key).map { $0 ^ $1 })
        return w.bytes
    }

    public static func decodeXOR(_ value: [UInt8], transactionID: [UInt8]) throws(STUNError) -> PeerAddress {
        let plain = try decode(value)
        let key = mask(transactionID)
        let port = plain.port ^ UInt16(RendezvousConstants.magicCookie >> 16)
        let bytes = zip(addressBytes(plain), key).map { $0 ^ $1 }
        return make(bytes, port: port)
    }

    /// A plain MAPPED-ADDRESS value (also OTHER-ADDRESS's, RFC 5780 §7.4).
    public static func encode(_ address: PeerAddress) -> [UInt8] {
        var w = ByteWriter(capacity: 20)
        w.write(UInt8(0))
        w.write(address.isIPv4 ? RendezvousConstants.familyIPv4 : RendezvousConstants.familyIPv6)
        w.write(address.port)
        w.write(bytes: addressBytes(address))
        return w.bytes
    }

    /// A plain MAPPED-ADDRESS value.
    public static func decode(_ value: [UInt8]) throws(STUNError) -> PeerAddress {
        guard value.count >= 4 else { throw .badAddress }
        let port = UInt16(value[2]) << 8 | UInt16(value[3])
        switch value[1] {
        case RendezvousConstants.familyIPv4 where value.count == 8: return make(Array(value[4..<8]), port: port)
        case RendezvousConstants.familyIPv6 where value.count == 20: return make(Array(value[4..<20]), port: port)
        default: throw .badAddress
        }
    }

    private static func mask(_ transactionID: [UInt8]) -> [UInt8] {
        let c = RendezvousConstants.magicCookie
        return [UInt8(c >> 24), UInt8(c >> 16 & 0xFF), UInt8(c >> 8 & 0xFF), UInt8(c & 0xFF)] + transactionID
    }

    private static func addressBytes(_ a: PeerAddress) -> [UInt8] {
        switch a.host {
        case .v4(let ip): [UInt8(ip >> 24), UInt8(ip >> 16 & 0xFF), UInt8(ip >> 8 & 0xFF), UInt8(ip & 0xFF)]
        case .v6(let bytes): bytes
        }
    }

    private static func make(_ bytes: [UInt8], port: UInt16) -> PeerAddress {
        if bytes.count == 4 {
            return .ipv4(bytes[0], bytes[1], bytes[2], bytes[3], port: port)
        }
        return PeerAddress(host: .v6(bytes), port: port)
    }
}
