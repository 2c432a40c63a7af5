import NIOCore
import NIOHTTP1

/// Plain HTTP: the page's embedded files, to a request that names this
/// server and carries the token; anything else gets a short status page.
/// A WebSocket request whose upgrade was refused lands here too (403).
final class StudioHTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// Every response: scripts, styles and connections from this server
    /// only; nothing inline, no frames, no forms, no referrer.
    static let contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
        + "connect-src 'self'; media-src 'self' blob:; worker-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    private let server: StudioServer
    private var head: HTTPRequestHead?
    private var access: StudioAccess { server.access }

    init(server: StudioServer) {
        self.server = server
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let h): head = h
        case .body: break  // GET only: a body is read and dropped
        case .end:
            guard let head else { return }
            self.head = nil
            respond(to: head, context: context)
        }
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let host = head.headers.first(name: "host")
        let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? "/"
        guard access.hostAllowed(host) else {
            return send(.forbidden, text: "This studio answers only at its own address.\n", head: head, context: context)
        }
        guard head.method == .GET || head.method == .HEAD else {
            return send(.methodNotAllowed, text: "GET only.\n", head: head, context: context)
        }
        guard access.tokenPresented(uri: head.uri, cookie: head.headers["cookie"]) else {
            return send(.forbidden, text: "Open the studio with the URL the node printed (it carries the access token).\n",
                        head: head, context: context)
        }
        guard path != "/ws" else {
            // Here the upgrade was refused: another site's page (Origin), too many pages, or no upgrade at all.
            return send(.forbidden, text: "The studio's WebSocket serves only its own page.\n", head: head, context: context)
        }
        if let room = Self.thumbnailRoom(path) {
            // A listed room's thumbnail, as the node last had it (404 when it has none).
            guard let jpeg = server.thumbnail?(room) else {
                return send(.notFound, text: "No thumbnail for this room.\n", head: head, context: context)
            }
            return send(.ok, body: jpeg, headers: Self.commonHeaders(contentType: "image/jpeg"), head: head, context: context)
        }
        guard let file = StudioPage.file(at: path == "/" ? "/" + server.home : path) else {
            return send(.notFound, text: "No such file.\n", head: head, context: context)
        }
        var headers = Self.commonHeaders(contentType: file.contentType)
        if path == "/" || path == "/" + server.home {
            // The page's modules and styles load without the query: the token rides in a cookie only this server gets.
            headers.add(name: "Set-Cookie", value: "\(access.cookieName)=\(access.token); Path=/; HttpOnly; SameSite=Strict")
        }
        send(.ok, body: file.bytes, headers: headers, head: head, context: context)
    }

    /// The room id in `/thumbs/ROOM-ID.jpg` (26 characters of base32), else nil.
    static func thumbnailRoom(_ path: String) -> String? {
        let prefix = "/thumbs/", suffix = ".jpg"
        guard path.hasPrefix(prefix), path.hasSuffix(suffix) else { return nil }
        let id = path.dropFirst(prefix.count).dropLast(suffix.count)
        guard id.utf8.count == 26, id.utf8.allSatisfy({ ($0 >= 97 && $0 <= 122) || ($0 >= 50 && $0 <= 55) }) else { return nil }
        return String(id)
    }

    static func commonHeaders(contentType: String) -> HTTPHeaders {
        HTTPHeaders([
            ("Content-Type", contentType),
            ("Content-Security-Policy", contentSecurityPolicy),
            ("X-Content-Type-Options", "nosniff"),
            ("Referrer-Policy", "no-referrer"),
            ("Cache-Control", "no-store"),
            ("X-Frame-Options", "DENY"),
            ("Cross-Origin-Opener-Policy", "same-origin"),
        ])
    }

    private func send(_ status: HTTPResponseStatus, text: String, head: HTTPRequestHead, context: ChannelHandlerContext) {
        send(status, body: Array(text.utf8), headers: Self.commonHeaders(contentType: "text/plain; charset=utf-8"), head: head, context: context)
    }

    private func send(_ status: HTTPResponseStatus, body: [UInt8], headers: HTTPHeaders, head: HTTPRequestHead, context: ChannelHandlerContext) {
        var headers = headers
        headers.add(name: "Content-Length", value: String(body.count))
        let keepAlive = head.isKeepAlive && status == .ok
        headers.add(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        let response = HTTPResponseHead(version: head.version, status: status, headers: headers)
        context.write(wrapOutboundOut(.head(response)), promise: nil)
        if head.method != .HEAD {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        }
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive { done.whenComplete { _ in context.close(promise: nil) } }
    }
}
