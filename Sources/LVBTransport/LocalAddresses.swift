import LVBCore

#if canImport(Glibc)
import Glibc
#endif

/// The addresses a node can put in its ticket when bound to a wildcard
/// address: every up interface's IPv4 address and, on a dual-stack socket
/// ([::]), every IPv6 address of global scope (global unicast and unique
/// local; never link-local, loopback, multicast or IPv4-mapped), IPv6
/// first (preferred where both work, as happy eyeballs does), loopback
/// last. Read with getifaddrs, which needs no name service.
public enum LocalAddresses {
    public static func advertised(for bound: PeerAddress) -> [PeerAddress] {
        if case .v4(let a) = bound.host, a != 0 { return [bound] }
        if case .v6(let b) = bound.host, b.contains(where: { $0 != 0 }) { return [bound] }
        guard let found = interfaceHosts() else { return [.ipv4(127, 0, 0, 1, port: bound.port)] }
        return candidates(found, port: bound.port, dualStack: !bound.isIPv4)
    }

    /// Every up interface's IPv4 and IPv6 address, unfiltered (nil when
    /// getifaddrs fails).
    public static func interfaceHosts() -> [PeerAddress.Host]? {
        var found = [PeerAddress.Host]()
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return nil }
        defer { freeifaddrs(list) }
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let ifa = cursor {
            defer { cursor = ifa.pointee.ifa_next }
            guard let sa = ifa.pointee.ifa_addr, ifa.pointee.ifa_flags & UInt32(IFF_UP) != 0 else { continue }
            if sa.pointee.sa_family == sa_family_t(AF_INET) {
                found.append(.v4(sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt32(bigEndian: $0.pointee.sin_addr.s_addr) }))
            } else if sa.pointee.sa_family == sa_family_t(AF_INET6) {
                found.append(.v6(sa.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { s in
                    withUnsafeBytes(of: s.pointee.sin6_addr) { Array($0) }
                }))
            }
        }
        return found
    }

    /// Of the interfaces' addresses, those a ticket lists, in its order
    /// (at most `JoinTicket.maxAddresses`): global IPv6 when the socket is
    /// dual stack, then IPv4, then IPv4 loopback (127.0.0.1 when none).
    public static func candidates(_ hosts: [PeerAddress.Host], port: UInt16, dualStack: Bool) -> [PeerAddress] {
        var v6 = [PeerAddress](), v4 = [PeerAddress](), loopback = [PeerAddress]()
        for host in hosts {
            switch host {
            case let .v4(a):
                if a >> 24 == 127 { loopback.append(PeerAddress(host: host, port: port)) } else { v4.append(PeerAddress(host: host, port: port)) }
            case let .v6(b):
                // Global unicast or unique local (fc00::/7): what Linux calls scope global.
                let address = PeerAddress(host: host, port: port)
                if dualStack, address.isGlobalIPv6 || b.first.map({ $0 & 0xFE == 0xFC }) == true { v6.append(address) }
            }
        }
        let all = v6 + v4 + (loopback.isEmpty ? [.ipv4(127, 0, 0, 1, port: port)] : loopback)
        return Array(all.uniqued(limit: JoinTicket.maxAddresses))
    }

}
