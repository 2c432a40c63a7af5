import LVBCore
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Conversions between the protocol's `PeerAddress` and NIO's `SocketAddress`,
/// built from raw sockaddr structs so no name service is ever consulted.
public extension PeerAddress {
    init?(_ socketAddress: SocketAddress) {
        switch socketAddress {
        case let .v4(a):
            self.init(host: .v4(UInt32(bigEndian: a.address.sin_addr.s_addr)), port: UInt16(bigEndian: a.address.sin_port))
        case let .v6(a):
            var bytes = [UInt8](repeating: 0, count: 16)
            withUnsafeBytes(of: a.address.sin6_addr) { for i in 0..<16 { bytes[i] = $0[i] } }
            // An IPv4-mapped IPv6 address is the IPv4 peer it stands for.
            if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff {
                let v4 = UInt32(bytes[12]) << 24 | UInt32(bytes[13]) << 16 | UInt32(bytes[14]) << 8 | UInt32(bytes[15])
                self.init(host: .v4(v4), port: UInt16(bigEndian: a.address.sin6_port))
            } else {
                self.init(host: .v6(bytes), port: UInt16(bigEndian: a.address.sin6_port))
            }
        case .unixDomainSocket:
            return nil
        }
    }

    var socketAddress: SocketAddress {
        switch host {
        case let .v4(a):
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = port.bigEndian
            sin.sin_addr.s_addr = a.bigEndian
            return SocketAddress(sin, host: hostString)
        case let .v6(b):
            var sin6 = sockaddr_in6()
            sin6.sin6_family = sa_family_t(AF_INET6)
            sin6.sin6_port = port.bigEndian
            withUnsafeMutableBytes(of: &sin6.sin6_addr) { for i in 0..<16 { $0[i] = b[i] } }
            return SocketAddress(sin6, host: hostString)
        }
    }
}
