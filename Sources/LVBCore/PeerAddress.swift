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

    public var hostString: String {
        switch host {
        case let .v4(a): return "\(a >> 24).\((a >> 16) & 255).\((a >> 8) & 255).\(a & 255)"
        case let .v6(b):
            var groups = [String]()
            for i in stride(from: 0, to: 16, by: 2) {
                groups.append(String(UInt16(b[i]) << 8 | UInt16(b[i + 1]), radix: 16))
            }
            return groups.joined(separator: ":")
        }
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
        func groups(_ part: Substring) -> [UInt16]? {
            if part.isEmpty { return [] }
            var out = [UInt16]()
            for g in part.split(separator: ":", omittingEmptySubsequences: false) {
                guard !g.isEmpty, g.count <= 4, g.allSatisfy({ $0.isASCII && $0.isHexDigit }), let n = UInt16(g, radix: 16) else { return nil }
                out.append(n)
            }
            return out
        }
        guard let head = groups(Substring(halves[0])) else { return nil }
        var all: [UInt16]
        if halves.count == 2 {
            guard let tail = groups(Substring(halves[1])), head.count + tail.count <= 7 else { return nil }
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
