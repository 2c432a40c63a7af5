import LVBCore
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// Serves the studio page and its WebSocket (`--web`) on the node's own event
/// loop, so the node's events and media reach the page without a thread hop
/// and a command from the page runs where the node runs. The page's files are
/// embedded (`StudioPage`); every response carries a strict
/// Content-Security-Policy; `StudioAccess` decides who may ask.
///
/// Media goes to each page only while its connection keeps up: a page that
/// falls behind (its socket's write buffer above the high-water mark) skips
/// video until the next keyframe, and audio until it drains, rather than
/// watching a growing delay.
public final class StudioServer: @unchecked Sendable {
    /// Set again once bound when asked for port 0 (any free port).
    public private(set) var access: StudioAccess
    public let loop: EventLoop
    /// Called on the loop when a page's WebSocket opens: returns the events
    /// it starts with (`hello`, `viewers`, …), as JSON texts.
    public var onConnect: (() -> [String])?
    /// A command from a page, on the loop.
    public var onCommand: ((StudioCommand) -> Void)?
    /// The page commands declared elsewhere (a room event kind's), by name:
    /// each checks its fields and throws what is wrong; a command that
    /// passes reaches `onCommand` as `.room(name, fields)`.
    public var roomCommands: [String: (JSONValue) throws(CommandFieldError) -> Void] = [:] {
        didSet { roomCommandNames = Set(roomCommands.keys) }
    }
    private var roomCommandNames: Set<String> = []
    /// A page's camera command (`camera`), with the page that sent it, on the loop.
    public var onCamera: ((Bool, StudioPageID) -> Void)?
    /// A media frame from a page (its own camera), on the loop: nil when
    /// taken, else why not (the page hears it once as an `error` event).
    public var onPageMedia: ((StudioMediaFrame, StudioPageID) -> String?)?
    /// A page's WebSocket closed, on the loop.
    public var onClosed: ((StudioPageID) -> Void)?
    /// The JPEG thumbnail of a listed room, by room id text (`GET /thumbs/ID.jpg`), on the loop; nil: none.
    public var thumbnail: ((String) -> [UInt8]?)?
    public private(set) var stats = StudioStats()

    private let bindHost: String
    public private(set) var port: Int
    private var listener: Channel?
    private var clients: [ObjectIdentifier: StudioClient] = [:]
    private let log = Log.logger("web")

    /// Pages connected at once at most (one person's browser tabs).
    public static let maxClients = 8
    /// Largest command accepted from a page.
    public static let maxMessage = 64 * 1024
    /// Largest media frame accepted from a page (a VP8 keyframe of its camera).
    public static let maxMediaMessage = 256 * 1024
    /// Larger messages than this close the socket (WebSocket 1009) rather
    /// than be read in: what is over `maxMediaMessage` and under it is
    /// read, counted and refused with the socket left open.
    static let maxSocketMessage = 1024 * 1024
    static let writeBuffer = WriteBufferWaterMark(low: 256 * 1024, high: 1024 * 1024)

    /// The file `/` serves: the studio (`index.html`), or another embedded page (the mesh's `mesh.html`).
    public let home: String

    public init(loop: EventLoop, token: String, host: String, port: Int, home: String = "index.html") {
        self.loop = loop
        self.home = home
        self.bindHost = host
        self.port = port
        access = StudioAccess(token: token, bound: host, port: port)
    }

    /// Starts listening; fails with the system's error (port taken, address not local).
    public func start() -> EventLoopFuture<Void> {
        let bootstrap = ServerBootstrap(group: loop)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.writeBufferWaterMark, value: Self.writeBuffer)
            .childChannelInitializer { [unowned self] channel in
                channel.eventLoop.makeCompletedFuture { try self.configure(channel) }
            }
        // A numeric address, parsed as such: bind(host:) would ask getaddrinfo, which a static binary must not (NSS).
        let address: SocketAddress
        do { address = try SocketAddress(ipAddress: bindHost, port: port) } catch { return loop.makeFailedFuture(error) }
        return bootstrap.bind(to: address).map { [unowned self] channel in
            listener = channel
            if port == 0, let bound = channel.localAddress?.port {
                port = bound
                access = StudioAccess(token: access.token, bound: bindHost, port: bound)
            }
        }
    }

    /// The page's address with its token.
    public var url: String {
        let host = bindHost.contains(":") ? "[\(bindHost)]" : bindHost
        return "http://\(host):\(port)/?token=\(access.token)"
    }

    public func close() -> EventLoopFuture<Void> {
        let all = clients.values.map { $0.channel.close() }
        clients.removeAll()
        let listening = listener?.close() ?? loop.makeSucceededVoidFuture()
        return EventLoopFuture.andAllComplete(all + [listening], on: loop)
    }

    // MARK: Sending

    /// A JSON event to every page (any thread).
    public func broadcast(_ text: String) {
        onLoop { [self] in
            guard let first = clients.values.first else { return }
            // One buffer for every page: each write shares it rather than copying.
            let buffer = first.channel.allocator.buffer(string: text)
            for client in clients.values { client.send(text: buffer) }
        }
    }

    /// A media frame to every page that keeps up (any thread).
    public func broadcast(_ frame: StudioMediaFrame) {
        onLoop { [self] in
            guard let first = clients.values.first else { return }
            var buffer = first.channel.allocator.buffer(capacity: StudioMediaFrame.headerSize + frame.payload.count)
            buffer.writeBytes(frame.header)
            buffer.writeBytes(frame.payload)
            for client in clients.values {
                if client.send(media: buffer, kind: frame.kind, keyframe: frame.isKeyframe) {
                    stats.mediaSent += 1
                } else {
                    stats.mediaSkipped += 1
                }
            }
        }
    }

    private func onLoop(_ body: @escaping () -> Void) {
        if loop.inEventLoop { body() } else { loop.execute(body) }
    }

    // MARK: Connections

    private func configure(_ channel: Channel) throws {
        let http = StudioHTTPHandler(server: self)
        let upgrader = NIOWebSocketServerUpgrader(
            maxFrameSize: Self.maxSocketMessage,
            shouldUpgrade: { [unowned self] channel, head in
                channel.eventLoop.makeSucceededFuture(mayUpgrade(head) ? HTTPHeaders() : nil)
            },
            upgradePipelineHandler: { [unowned self] channel, _ in
                channel.eventLoop.makeCompletedFuture {
                    let client = StudioClient(channel: channel)
                    try channel.pipeline.syncOperations.addHandlers([
                        NIOWebSocketFrameAggregator(minNonFinalFragmentSize: 1, maxAccumulatedFrameCount: 64,
                                                    maxAccumulatedFrameSize: Self.maxSocketMessage),
                        StudioSocketHandler(server: self, client: client),
                    ])
                }
            })
        try channel.pipeline.syncOperations.configureHTTPServerPipeline(
            withServerUpgrade: (upgraders: [upgrader], completionHandler: { context in
                context.pipeline.syncOperations.removeHandler(http, promise: nil)
            }))
        try channel.pipeline.syncOperations.addHandler(http)
    }

    private func mayUpgrade(_ head: HTTPRequestHead) -> Bool {
        let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
        let host = head.headers.first(name: "host")
        let allowed = path == "/ws" && access.hostAllowed(host)
            && access.originAllowed(head.headers.first(name: "origin"), host: host)
            && access.tokenPresented(uri: head.uri, cookie: head.headers["cookie"])
            && clients.count < Self.maxClients
        if !allowed { stats.refused += 1 }
        return allowed
    }

    func opened(_ client: StudioClient) {
        clients[ObjectIdentifier(client)] = client
        stats.connections += 1
        for text in onConnect?() ?? [] { client.send(text: text) }
    }

    func closed(_ client: StudioClient) {
        guard clients.removeValue(forKey: ObjectIdentifier(client)) != nil else { return }
        onClosed?(client.id)
    }

    func received(_ message: ByteBuffer, from client: StudioClient) {
        guard message.readableBytes <= Self.maxMessage else {
            return malformed("command of \(message.readableBytes) bytes, more than \(Self.maxMessage)", from: client)
        }
        do {
            let command = try StudioCommand.parse(message.readableBytesView, roomCommands: roomCommandNames)
            if case let .room(name, fields) = command { try roomCommands[name]?(fields) }
            stats.commands += 1
            if case .camera(let on) = command { onCamera?(on, client.id) } else { onCommand?(command) }
        } catch {
            malformed("\(error)", from: client)
        }
    }

    /// A binary message: a media frame of the page's own camera, taken
    /// only while the node wants it (`onPageMedia`).
    func receivedMedia(_ message: ByteBuffer, from client: StudioClient) {
        guard message.readableBytes <= Self.maxMediaMessage else {
            return malformed("media frame of \(message.readableBytes) bytes, more than \(Self.maxMediaMessage)", from: client)
        }
        let frame: StudioMediaFrame
        do { frame = try StudioMediaFrame.parse(message.readableBytesView) } catch {
            return malformed("\(error)", from: client)
        }
        let refusal = onPageMedia.map { $0(frame, client.id) } ?? "this node takes no media from its page"
        if let refusal {
            stats.pageMediaRefused += 1
            // Once until one is taken again: frames in flight when the stage ended are no news.
            if !client.refusalTold {
                client.refusalTold = true
                client.send(text: Self.errorEvent(refusal))
            }
        } else {
            stats.pageMedia += 1
            client.refusalTold = false
        }
    }

    private func malformed(_ why: String, from client: StudioClient) {
        stats.malformed += 1
        log.debug("studio page sent a bad message: \(why)")
        client.send(text: Self.errorEvent(why))
    }

    /// `{"event":"error","message":…}`: what a page hears when it asked for something wrong.
    public static func errorEvent(_ message: String) -> String {
        #"{"event":"error","message":\#(JSONValue.quote(message))}"#
    }

    /// A JSON event to one page, if it is still open (on the loop).
    public func send(_ text: String, to page: StudioPageID) {
        clients[page.raw]?.send(text: text)
    }

    public var clientCount: Int { clients.count }
}

/// What the studio server did (the node's `stats`).
public struct StudioStats: Sendable, Equatable {
    /// WebSockets opened, and upgrade requests refused (token, origin, host, too many).
    public var connections = 0
    public var refused = 0
    public var commands = 0
    /// Messages from a page that were not a command or media frame, or too
    /// long (answered with an `error` event).
    public var malformed = 0
    /// Media frames of a page's own camera taken, and refused (not on stage, another page's camera).
    public var pageMedia = 0
    public var pageMediaRefused = 0
    /// Media frames handed to pages, and skipped for a page that fell behind.
    public var mediaSent = 0
    public var mediaSkipped = 0
}

/// Which page: a connection, for as long as it stays open.
public struct StudioPageID: Hashable, Sendable {
    let raw: ObjectIdentifier
}

/// One page's WebSocket.
final class StudioClient {
    let channel: Channel
    /// A refused media frame was answered with an error; the next ones are not, until one is taken.
    var refusalTold = false
    var id: StudioPageID { StudioPageID(raw: ObjectIdentifier(self)) }
    /// Behind on video: the next frame it gets is a keyframe.
    private var waitingForKeyframe = true

    init(channel: Channel) {
        self.channel = channel
    }

    func send(text: String) {
        send(text: channel.allocator.buffer(string: text))
    }

    func send(text buffer: ByteBuffer) {
        channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, data: buffer), promise: nil)
    }

    /// Sends unless the page is behind; returns whether it went.
    func send(media buffer: ByteBuffer, kind: StudioMediaFrame.Kind, keyframe: Bool) -> Bool {
        guard channel.isWritable else {
            if kind == .video { waitingForKeyframe = true }
            return false
        }
        if kind == .video {
            if waitingForKeyframe && !keyframe { return false }
            waitingForKeyframe = false
        }
        channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .binary, data: buffer), promise: nil)
        return true
    }
}

/// The WebSocket side of a page: commands in, pings answered, close honoured.
final class StudioSocketHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let server: StudioServer
    private let client: StudioClient

    init(server: StudioServer, client: StudioClient) {
        self.server = server
        self.client = client
    }

    func handlerAdded(context: ChannelHandlerContext) {
        server.opened(client)
    }

    func channelInactive(context: ChannelHandlerContext) {
        server.closed(client)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            server.received(frame.unmaskedData, from: client)
        case .binary:
            server.receivedMedia(frame.unmaskedData, from: client)
        case .ping:
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        case .connectionClose:
            var data = frame.unmaskedData
            let code = data.readSlice(length: 2) ?? ByteBuffer()
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: code))).whenComplete { _ in
                context.close(promise: nil)
            }
        default:
            break  // pongs need nothing
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}
