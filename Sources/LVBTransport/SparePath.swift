import LVBCore

/// A path to a peer through one of this node's spare sockets (birthday
/// punching's hard side, `Birthday`): named, like a relay path, by an
/// address in the discard-only prefix 100::/64 (RFC 6666) that no real
/// datagram comes from, so the session layer treats it as one more
/// endpoint. Bytes 0–7 are 0100:0000:0000:0002 (a relay path's are
/// 0100::0), bytes 8–11 the spare's number, 12–15 the peer's IPv4
/// address, and the port the peer's port.
public enum SparePath {
    /// The path to `remote` (IPv4) through spare socket `spare`.
    public static func address(spare: UInt32, remote: PeerAddress) -> PeerAddress? {
        guard case .v4(let a) = remote.host else { return nil }
        var bytes = [UInt8](repeating: 0, count: 16)
        bytes[0] = 0x01
        bytes[7] = 0x02
        for i in 0..<4 {
            bytes[8 + i] = UInt8(truncatingIfNeeded: spare >> (24 - 8 * i))
            bytes[12 + i] = UInt8(truncatingIfNeeded: a >> (24 - 8 * i))
        }
        return PeerAddress(host: .v6(bytes), port: remote.port)
    }

    /// The spare's number and the peer's real address, when `address` names a spare path.
    public static func parse(_ address: PeerAddress) -> (spare: UInt32, remote: PeerAddress)? {
        guard case .v6(let b) = address.host, b.count == 16, b[0] == 0x01, b[7] == 0x02,
              b[1..<7].allSatisfy({ $0 == 0 }) else { return nil }
        let spare = b[8..<12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let a = b[12..<16].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return (spare, PeerAddress(host: .v4(a), port: address.port))
    }

    public static func isSpare(_ address: PeerAddress) -> Bool { parse(address) != nil }

    /// Where datagrams on `address` really go: the peer's own address for
    /// a spare path, `address` itself otherwise.
    public static func outside(_ address: PeerAddress) -> PeerAddress { parse(address)?.remote ?? address }
}
