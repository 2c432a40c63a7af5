import LVBCore

/// A path to a peer through a relay that forwards sealed datagrams (the
/// rendezvous's capped relay): named by an address in the discard-only
/// prefix 100::/64 (RFC 6666), which no real datagram ever comes from or
/// goes to, so the session layer treats the relay as one more endpoint.
/// Datagrams the transport sends there go to `TransportCore.relaySend`; the
/// relay's owner feeds what arrives through it to `receive(_:from:)` with
/// the same address.
public enum RelayPath {
    /// The address of relay path number `index`.
    public static func address(_ index: UInt32) -> PeerAddress {
        var bytes = [UInt8](repeating: 0, count: 16)
        bytes[0] = 0x01
        for i in 0..<4 { bytes[12 + i] = UInt8(truncatingIfNeeded: index >> (24 - 8 * i)) }
        return PeerAddress(host: .v6(bytes), port: 1)
    }

    /// The path number, when `address` names a relay path.
    public static func index(of address: PeerAddress) -> UInt32? {
        guard case .v6(let b) = address.host, b.count == 16, b[0] == 0x01, b[1..<8].allSatisfy({ $0 == 0 }) else { return nil }
        return b[12..<16].reduce(0) { $0 << 8 | UInt32($1) }
    }

    public static func isRelay(_ address: PeerAddress) -> Bool { index(of: address) != nil }
}
