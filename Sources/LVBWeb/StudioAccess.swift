/// Who may use the studio: the page and its WebSocket are for the browser on
/// this machine that was given the URL. Every request must carry the random
/// token (the URL's `token` query parameter, or the cookie the page response
/// sets so the page's own modules load without it); its `Host` must name
/// this server (a page on another site resolving its own name to 127.0.0.1,
/// DNS rebinding, is refused); a WebSocket's `Origin` must be this server.
public struct StudioAccess: Sendable {
    public let token: String
    /// `Host` header values that name this server (lowercased).
    public let hosts: Set<String>

    /// The cookie that carries the token: named after the port, since a
    /// browser sends a host's cookies to every port of it (RFC 6265 §8.5),
    /// and two nodes' pages open in one browser on 127.0.0.1 would otherwise
    /// overwrite each other's token.
    public let cookieName: String

    /// - Parameters:
    ///   - bound: the address text the server listens on (`127.0.0.1`, `::1`, `192.168.1.5`).
    public init(token: String, bound: String, port: Int) {
        self.token = token
        cookieName = "lvbnode_token_\(port)"
        var names = ["127.0.0.1", "localhost", "[::1]"]
        names.append(bound.contains(":") ? "[\(bound)]" : bound)
        hosts = Set(names.map { "\($0.lowercased()):\(port)" })
    }

    public func hostAllowed(_ host: String?) -> Bool {
        guard let host else { return false }
        return hosts.contains(host.lowercased())
    }

    /// The `Origin` of a page this server served: `http://` and its own Host.
    public func originAllowed(_ origin: String?, host: String?) -> Bool {
        guard let origin, hostAllowed(host), let host else { return false }
        return origin.lowercased() == "http://" + host.lowercased()
    }

    /// Whether the request carries the token, in its query or its cookie.
    public func tokenPresented(uri: String, cookie: [String]) -> Bool {
        if let query = uri.split(separator: "?", maxSplits: 1).dropFirst().first {
            for pair in query.split(separator: "&") {
                let kv = pair.split(separator: "=", maxSplits: 1)
                if kv.count == 2, kv[0] == "token", Self.equal(String(kv[1]), token) { return true }
            }
        }
        for header in cookie {
            for item in header.split(separator: ";") {
                let kv = item.split(separator: "=", maxSplits: 1)
                if kv.count == 2, kv[0].trimmingSpaces == cookieName, Self.equal(kv[1].trimmingSpaces, token) { return true }
            }
        }
        return false
    }

    /// Compares without stopping at the first difference (the token is a secret).
    static func equal(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var diff: UInt8 = 0
        for i in x.indices { diff |= x[i] ^ y[i] }
        return diff == 0
    }
}

extension Substring {
    var trimmingSpaces: String {
        var s = self
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}
