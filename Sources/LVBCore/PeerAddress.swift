/// A UDP endpoint: IPv4 or IPv6 address bytes and a port. A plain value so the
/// protocol core stays independent of sockets (the NIO driver converts it).
public struct PeerAddress: Hashable, Sendable, CustomStringConvertible {
    public enum Host: Hashable, Sendable {
        case v4(UInt32)
        case v6([UInt8])  // 16 bytes
    }
    public var host: Host
    public var port: UInt16

    public init(host: Host, port: UInt16) {
        self.host = host
        self.port = port
    }

    public static func ipv4(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8, port: UInt16) -> PeerAddress {
        PeerAddress(host: .v4(UInt32(a) << 24 | UInt32(b) << 16 | UInt32(c) << 8 | UInt32(d)), port: port)
    }

    /// Parses `ip:port`, `[ipv6]:port` or `localhost:port` without any name
    /// service lookup (the static binary must not use NSS).
    public init(parsing text: String) throws(CoreError) {
        let s = text.trimmingSpaces()
        var hostPart: Substring
        var portPart: Substring
        if s.hasPrefix("[") {
            guard let close = s.firstIndex(of: "]") else { throw .badAddress(text) }
            hostPart = s[s.index(after: s.startIndex)..<close]
            let rest = s[s.index(after: close)...]
            guard rest.hasPrefix(":") else { throw .badAddress(text) }
            portPart = rest.dropFirst()
        } else {
            guard let colon = s.lastIndex(of: ":"), s.firstIndex(of: ":") == colon else { throw .badAddress(text) }
            hostPart = s[..<colon]
            portPart = s[s.index(after: colon)...]
        }
        // Digits only: Swift's integer parsing would also take a leading sign.
        guard !portPart.isEmpty, portPart.count <= 5, portPart.allSatisfy(\.isASCIIDigit), let port = UInt16(portPart) else {
            throw .badAddress(text)
        }
        self.port = port
        let bracketed = s.hasPrefix("[")
        if !bracketed, hostPart.lowercased() == "localhost" {
            host = .v4(0x7F00_0001)
        } else if !bracketed, let v4 = PeerAddress.parseIPv4(hostPart) {
            host = .v4(v4)
        } else if bracketed, let v6 = PeerAddress.parseIPv6(hostPart) {
            host = .v6(v6)
        } else {
            throw .badAddress(text)
        }
    }

    public var isIPv4: Bool { if case .v4 = host { true } else { false } }

    /// `[::]:port`: every address of both families, on a dual-stack socket.
    public static func anyDualStack(port: UInt16) -> PeerAddress {
        PeerAddress(host: .v6([UInt8](repeating: 0, count: 16)), port: port)
    }

    public var isIPv6Unspecified: Bool {
        if case .v6(let b) = host { return b.allSatisfy { $0 == 0 } }
        return false
    }

    /// A global unicast IPv6 address (2000::/3).
    public var isGlobalIPv6: Bool {
        if case .v6(let b) = host { return b[0] & 0xE0 == 0x20 }
        return false
    }

    /// What a coordinator passes on of the addresses a node claims for
    /// itself: local-scope ones (its LAN's) and global IPv6 ones. IPv6 has
    /// no NAT to show a node's address from outside, and a home's stateful
    /// firewall opens only to a peer the node sent to first, so both sides
    /// must know each other's to send at once (ICE's host candidates). A
    /// claim aimed at a stranger costs that stranger the few paced,
    /// hop-limited-first initiations of one punch, asked for over a
    /// session whose requests are rate limited.
    public var isClaimable: Bool { isLocalScope || isGlobalIPv6 }

    /// An address only its own network can reach: loopback, private
    /// (RFC 1918, RFC 4193), shared (RFC 6598) or link-local. A rendezvous
    /// passes on only such addresses that a node claims for itself, plus the
    /// one it sees the node at, so nobody can aim handshakes at a stranger.
    public var isLocalScope: Bool {
        switch host {
        case let .v4(a):
            let b0 = a >> 24, b1 = (a >> 16) & 0xFF
            return b0 == 127 || b0 == 10 || (b0 == 172 && (16...31).contains(b1)) || (b0 == 192 && b1 == 168)
                || (b0 == 169 && b1 == 254) || (b0 == 100 && (64...127).contains(b1))
        case let .v6(b):
            if b[0..<15].allSatisfy({ $0 == 0 }) && b[15] == 1 { return true }  // ::1
            if b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xFF && b[11] == 0xFF {  // ::ffff:a.b.c.d
                let v4 = UInt32(b[12]) << 24 | UInt32(b[13]) << 16 | UInt32(b[14]) << 8 | UInt32(b[15])
                return PeerAddress(host: .v4(v4), port: port).isLocalScope
            }
            return b[0] & 0xFE == 0xFC || (b[0] == 0xFE && b[1] & 0xC0 == 0x80)
        }
    }

    /// The same endpoint as an IPv6 socket names it: an IPv4 address becomes
    /// ::ffff:a.b.c.d (RFC 4291 §2.5.5.2); an IPv6 one is unchanged.
    public var ipv4Mapped: PeerAddress {
        guard case .v4(let a) = host else { return self }
        let bytes = [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF, UInt8(a >> 24), UInt8((a >> 16) & 255), UInt8((a >> 8) & 255), UInt8(a & 255)]
        return PeerAddress(host: .v6(bytes), port: port)
    }

    public var hostString: String {
        switch host {
        case let .v4(a): return "\(a >> 24).\((a >> 16) & 255).\((a >> 8) & 255).\(a & 255)"
        case let .v6(b): return PeerAddress.canonicalIPv6(b)
        }
    }

    /// RFC 5952 §4 text of 16 address bytes: lowercase hex without leading
    /// zeros, the longest run of two or more zero groups (the first of equal
    /// runs) as "::", and (§5) an IPv4-mapped address as ::ffff:a.b.c.d.
    static func canonicalIPv6(_ b: [UInt8]) -> String {
        let groups = (0..<8).map { UInt16(b[2 * $0]) << 8 | UInt16(b[2 * $0 + 1]) }
        if groups[0..<5].allSatisfy({ $0 == 0 }), groups[5] == 0xFFFF {
            return "::ffff:\(b[12]).\(b[13]).\(b[14]).\(b[15])"
        }
        var bestStart = -1, bestLength = 1, runStart = -1
        for i in 0...8 {
            if i < 8 && groups[i] == 0 {
                if runStart < 0 { runStart = i }
            } else if runStart >= 0 {
                if i - runStart > bestLength { bestStart = runStart; bestLength = i - runStart }
                runStart = -1
            }
        }
        func hex(_ range: Range<Int>) -> String {
            groups[range].map { String($0, radix: 16) }.joined(separator: ":")
        }
        guard bestStart >= 0 else { return hex(0..<8) }
        return hex(0..<bestStart) + "::" + hex((bestStart + bestLength)..<8)
    }

    public var description: String {
        isIPv4 ? "\(hostString):\(port)" : "[\(hostString)]:\(port)"
    }

    static func parseIPv4(_ s: Substring) -> UInt32? {
        let parts = s.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var v: UInt32 = 0
        for p in parts {
            guard !p.isEmpty, p.count <= 3, p.allSatisfy(\.isASCIIDigit), let n = UInt8(p) else { return nil }
            v = v << 8 | UInt32(n)
        }
        return v
    }

    static func parseIPv6(_ s: Substring) -> [UInt8]? {
        let halves = s.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        // RFC 4291 §2.2: the last 32 bits may be written as an IPv4 address
        // (::ffff:192.0.2.1), the form RFC 5952 §5 prints mapped addresses in.
        let last = halves.count - 1
        func groups(_ part: Substring, mayEndInIPv4: Bool) -> [UInt16]? {
            if part.isEmpty { return [] }
            var out = [UInt16]()
            var texts = part.split(separator: ":", omittingEmptySubsequences: false)
            var tail = [UInt16]()
            if mayEndInIPv4, let final = texts.last, final.contains(".") {
                guard let v4 = parseIPv4(final) else { return nil }
                tail = [UInt16(v4 >> 16), UInt16(v4 & 0xFFFF)]
                texts.removeLast()
            }
            for g in texts {
                guard !g.isEmpty, g.count <= 4, g.allSatisfy({ $0.isASCII && $0.isHexDigit }), let n = UInt16(g, radix: 16) else { return nil }
                out.append(n)
            }
            return out + tail
        }
        guard let head = groups(Substring(halves[0]), mayEndInIPv4: last == 0) else { return nil }
        var all: [UInt16]
        if halves.count == 2 {
            guard let tail = groups(Substring(halves[1]), mayEndInIPv4: true), head.count + tail.count <= 7 else { return nil }
            all = head + [UInt16](repeating: 0, count: 8 - head.count - tail.count) + tail
        } else {
            guard head.count == 8 else { return nil }
            all = head
        }
        return all.flatMap { [UInt8($0 >> 8), UInt8($0 & 255)] }
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}

extension Substring {
    func components(separatedBy sep: String) -> [String] {
        var out = [String]()
        var rest = self[...]
        while let r = rest.range(of: sep) {
            out.append(String(rest[..<r.lowerBound]))
            rest = rest[r.upperBound...]
        }
        out.append(String(rest))
        return out
    }

    func range(of needle: String) -> Range<Index>? {
        let n = Array(needle)
        guard !n.isEmpty else { return nil }
        var i = startIndex
        while i < endIndex {
            var j = i, k = 0
            while k < n.count, j < endIndex, self[j] == n[k] { j = index(after: j); k += 1 }
            if k == n.count { return i..<j }
            i = index(after: i)
        }
        return nil
    }
}

extension String {
    func trimmingSpaces() -> Substring {
        var s = self[...]
        while let f = s.first, f.isWhitespace { s = s.dropFirst() }
        while let l = s.last, l.isWhitespace { s = s.dropLast() }
        return s
    }
}
