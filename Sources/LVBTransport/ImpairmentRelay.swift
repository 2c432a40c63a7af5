import LVBCore
import NIOCore
import NIOPosix

/// A UDP relay over real sockets that impairs traffic between clients and one
/// target (the kernel in CI has no netem), for loopback tests and demos.
///
/// Each client gets its own upstream socket, so the target sees every client as
/// a distinct address. All state lives on one event loop.
public final class ImpairmentRelay: Sendable {
    /// Most clients mapped at once; datagrams from further clients are dropped.
    public static let maxClients = 1024
    /// A client mapping with no traffic either way for this long is closed.
    public static let idleTimeout: Duration = .seconds(60)

    /// Limits, adjustable by tests.
    struct Limits: Sendable {
        var maxClients = ImpairmentRelay.maxClients
        var idleTimeout = ImpairmentRelay.idleTimeout
    }

    /// The address clients send to.
    public let localAddress: PeerAddress
    private let core: NIOLoopBound<RelayCore>

    private init(localAddress: PeerAddress, core: NIOLoopBound<RelayCore>) {
        self.localAddress = localAddress
        self.core = core
    }

    /// Binds `listen` (port 0 picks a free port; see `localAddress`) and relays
    /// its clients to `target`, impairing each direction as given.
    public static func start(
        listen: PeerAddress, target: PeerAddress, upstream: Impairment, downstream: Impairment,
        seed: UInt64, group: EventLoopGroup
    ) async throws -> ImpairmentRelay {
        try await start(
            listen: listen, target: target, upstream: upstream, downstream: downstream,
            seed: seed, group: group, limits: Limits())
    }

    static func start(
        listen: PeerAddress, target: PeerAddress, upstream: Impairment, downstream: Impairment,
        seed: UInt64, group: EventLoopGroup, limits: Limits
    ) async throws -> ImpairmentRelay {
        try upstream.validate()
        try downstream.validate()
        let loop = group.next()
        let core = try await loop.submit {
            NIOLoopBound(
                RelayCore(loop: loop, target: target, upstream: upstream, downstream: downstream,
                          seed: seed, limits: limits),
                eventLoop: loop)
        }.get()
        let channel = try await DatagramBootstrap(group: loop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    core.value.listen = channel
                    try channel.pipeline.syncOperations.addHandler(
                        RelayHandler { core.value.fromClient($0) })
                }
            }
            .bind(to: listen.socketAddress).get()
        guard let local = channel.localAddress.flatMap(PeerAddress.init) else {
            try? await channel.close()
            throw ChannelError.unknownLocalAddress
        }
        try await loop.submit { core.value.startSweeping() }.get()
        return ImpairmentRelay(localAddress: local, core: core)
    }

    /// Counters so far; zero once the event loop has shut down.
    public func stats() async -> RelayStats {
        let core = self.core
        return (try? await core.eventLoop.submit { core.value.stats }.get()) ?? RelayStats()
    }

    /// Closes the listen socket and every client mapping; datagrams still
    /// waiting out their delay are dropped.
    public func close() async throws {
        let core = self.core
        try await core.eventLoop.flatSubmit { core.value.close() }.get()
    }
}

/// One client's upstream socket and its recent activity.
private final class ClientLink {
    let client: SocketAddress
    var channel: Channel?
    /// Datagrams due upstream while the socket is still binding.
    var pending: [ByteBuffer] = []
    var lastActive: NIODeadline
    var closed = false

    init(client: SocketAddress, now: NIODeadline) {
        self.client = client
        self.lastActive = now
    }
}

/// The relay's state, confined to its event loop.
private final class RelayCore {
    /// Datagrams held for a client whose upstream socket is still binding.
    static let maxPending = 256
    /// Datagrams waiting out their delay, so a flood cannot grow memory without bound.
    static let maxInFlight = 65_536

    let loop: EventLoop
    let target: PeerAddress
    let targetAddress: SocketAddress
    let upstream: Impairment
    let downstream: Impairment
    let random: SeededRandom
    let limits: ImpairmentRelay.Limits
    var listen: Channel?
    var clients: [PeerAddress: ClientLink] = [:]
    var stats = RelayStats()
    var closed = false
    var sweep: RepeatedTask?
    var inFlight = 0

    init(loop: EventLoop, target: PeerAddress, upstream: Impairment, downstream: Impairment,
         seed: UInt64, limits: ImpairmentRelay.Limits) {
        self.loop = loop
        self.target = target
        self.targetAddress = target.socketAddress
        self.upstream = upstream
        self.downstream = downstream
        self.random = SeededRandom(seed: seed)
        self.limits = limits
    }

    func startSweeping() {
        let interval = TimeAmount.nanoseconds(max(1_000_000, limits.idleTimeout.nanosecondsClamped / 4))
        let bound = NIOLoopBound(self, eventLoop: loop)
        sweep = loop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
            bound.value.expireIdle()
        }
    }

    func fromClient(_ envelope: AddressedEnvelope<ByteBuffer>) {
        stats.upstream.received += 1
        guard !closed, let peer = PeerAddress(envelope.remoteAddress) else {
            stats.upstream.rejected += 1
            return
        }
        let link: ClientLink
        if let existing = clients[peer] {
            link = existing
        } else {
            guard clients.count < limits.maxClients else {
                stats.upstream.rejected += 1
                return
            }
            link = open(peer: peer, client: envelope.remoteAddress)
        }
        link.lastActive = .now()
        relay(envelope.data, impairment: upstream, counters: \.upstream) { [weak self] data in
            self?.sendUpstream(data, link: link)
        }
    }

    private func fromTarget(_ envelope: AddressedEnvelope<ByteBuffer>, link: ClientLink) {
        stats.downstream.received += 1
        guard !closed, !link.closed, PeerAddress(envelope.remoteAddress) == target else {
            stats.downstream.rejected += 1
            return
        }
        link.lastActive = .now()
        relay(envelope.data, impairment: downstream, counters: \.downstream) { [weak self] data in
            guard let self, !self.closed, !link.closed, let listen = self.listen else { return }
            listen.writeAndFlush(AddressedEnvelope(remoteAddress: link.client, data: data), promise: nil)
        }
    }

    /// Applies `impairment` to one datagram and sends each surviving copy when due.
    private func relay(_ data: ByteBuffer, impairment: Impairment,
                       counters: WritableKeyPath<RelayStats, RelayStats.Direction>,
                       send: @escaping (ByteBuffer) -> Void) {
        let delays = impairment.plan(random: random)
        guard !delays.isEmpty else {
            stats[keyPath: counters].dropped += 1
            return
        }
        stats[keyPath: counters].forwarded += 1
        stats[keyPath: counters].duplicated += delays.count - 1
        let bound = NIOLoopBound((self, send), eventLoop: loop)
        for delay in delays {
            if delay <= .zero {
                send(data)
            } else if inFlight < Self.maxInFlight {
                inFlight += 1
                loop.scheduleTask(in: .nanoseconds(delay.nanosecondsClamped)) {
                    let (core, send) = bound.value
                    core.inFlight -= 1
                    send(data)
                }
            } else {
                stats[keyPath: counters].rejected += 1
            }
        }
    }

    private func sendUpstream(_ data: ByteBuffer, link: ClientLink) {
        guard !closed, !link.closed else { return }
        if let channel = link.channel {
            channel.writeAndFlush(AddressedEnvelope(remoteAddress: targetAddress, data: data), promise: nil)
        } else if link.pending.count < Self.maxPending {
            link.pending.append(data)
        } else {
            stats.upstream.rejected += 1
        }
    }

    /// Opens an upstream socket for a new client on the target's family, on
    /// loopback when the target is loopback.
    private func open(peer: PeerAddress, client: SocketAddress) -> ClientLink {
        let link = ClientLink(client: client, now: .now())
        clients[peer] = link
        stats.clients = clients.count
        stats.clientsOpened += 1
        let bound = NIOLoopBound((self, link), eventLoop: loop)
        DatagramBootstrap(group: loop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        RelayHandler { bound.value.0.fromTarget($0, link: bound.value.1) })
                }
            }
            .bind(to: upstreamBindAddress().socketAddress)
            .whenComplete { result in
                let (core, link) = bound.value
                switch result {
                case let .success(channel):
                    guard !core.closed, !link.closed else {
                        channel.close(promise: nil)
                        return
                    }
                    link.channel = channel
                    for data in link.pending {
                        channel.write(AddressedEnvelope(remoteAddress: core.targetAddress, data: data), promise: nil)
                    }
                    link.pending = []
                    channel.flush()
                case .failure:
                    core.stats.upstream.rejected += link.pending.count
                    core.drop(peer: peer, link: link)
                }
            }
        return link
    }

    private func upstreamBindAddress() -> PeerAddress {
        switch target.host {
        case let .v4(a):
            return PeerAddress(host: .v4(a >> 24 == 127 ? 0x7F00_0001 : 0), port: 0)
        case let .v6(b):
            let loopback = [UInt8](repeating: 0, count: 15) + [1]
            return PeerAddress(host: .v6(b == loopback ? loopback : [UInt8](repeating: 0, count: 16)), port: 0)
        }
    }

    private func drop(peer: PeerAddress, link: ClientLink) {
        link.closed = true
        link.pending = []
        link.channel?.close(promise: nil)
        if clients[peer] === link { clients[peer] = nil }
        stats.clients = clients.count
    }

    func expireIdle() {
        let cutoff = NIODeadline.now() - .nanoseconds(limits.idleTimeout.nanosecondsClamped)
        for (peer, link) in clients where link.lastActive < cutoff {
            drop(peer: peer, link: link)
            stats.clientsExpired += 1
        }
    }

    func close() -> EventLoopFuture<Void> {
        closed = true
        sweep?.cancel()
        sweep = nil
        var closing: [EventLoopFuture<Void>] = []
        for link in clients.values {
            link.closed = true
            link.pending = []
            if let channel = link.channel { closing.append(channel.close()) }
        }
        clients = [:]
        stats.clients = 0
        if let listen { closing.append(listen.close()) }
        listen = nil
        return EventLoopFuture.andAllComplete(closing, on: loop)
    }
}

/// Hands each datagram a socket reads to a closure; read errors (such as an
/// ICMP port-unreachable report) are ignored so the socket stays open.
private final class RelayHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    private let onRead: (AddressedEnvelope<ByteBuffer>) -> Void

    init(onRead: @escaping (AddressedEnvelope<ByteBuffer>) -> Void) { self.onRead = onRead }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        onRead(unwrapInboundIn(data))
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {}
}
