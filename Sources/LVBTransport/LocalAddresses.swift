import LVBCore

#if canImport(Glibc)
import Glibc
#endif

/// The addresses a node can put in its ticket when bound to a wildcard
/// address: every up interface's IPv4 address, loopback last. Read with
/// getifaddrs, which needs no name service.
public enum LocalAddresses {
    public static func advertised(for bound: PeerAddress) -> [PeerAddress] {
        if case .v4(let a) = bound.host, a != 0 { return [bound] }
        if case .v6(let b) = bound.host, b.contains(where: { $0 != 0 }) { return [bound] }
        var external = [PeerAddress](), loopback = [PeerAddress]()
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [.ipv4(127, 0, 0, 1, port: bound.port)] }
        defer { freeifaddrs(list) }
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let ifa = cursor {
            defer { cursor = ifa.pointee.ifa_next }
            guard let sa = ifa.pointee.ifa_addr, sa.pointee.sa_family == sa_family_t(AF_INET),
                  ifa.pointee.ifa_flags & UInt32(IFF_UP) != 0 else { continue }
            let v4 = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt32(bigEndian: $0.pointee.sin_addr.s_addr) }
            let address = PeerAddress(host: .v4(v4), port: bound.port)
            if v4 >> 24 == 127 { loopback.append(address) } else { external.append(address) }
        }
        return Array((external + (loopback.isEmpty ? [.ipv4(127, 0, 0, 1, port: bound.port)] : loopback)).prefix(JoinTicket.maxAddresses))
    }
}
