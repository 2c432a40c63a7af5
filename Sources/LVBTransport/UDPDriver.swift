import LVBCore
import LVBCrypto
import NIOCore
import NIOPosix

/// Runs a `TransportCore` on a real UDP socket: one SwiftNIO datagram channel,
/// vectored reads, and the core's tick on the channel's event loop. All core
/// calls happen on that loop; use `execute` from elsewhere.
public final class UDPNode: @unchecked Sendable {
    public let core: TransportCore
    public let localAddress: PeerAddress
    public let eventLoop: EventLoop
    private let channel: Channel
    private var ticker: RepeatedTask?

    /// Binds `listen` and starts ticking. `onEvent` runs on the event loop.
    /// `[::]` (`PeerAddress.anyDualStack`) is one socket for IPv6 and IPv4
    /// peers alike; where the host has no IPv6 it falls back to 0.0.0.0.
    public static func start(identity: Identity, listen: PeerAddress, config: TransportConfig = TransportConfig(),
                             group: EventLoopGroup, clock: Clock = SystemClock.shared,
                             onEvent: @escaping (TransportEvent) -> Void) async throws -> UDPNode {
        let loop = group.next()
        let sink = ChannelSink()
        let core = TransportCore(identity: identity, clock: clock, random: SodiumRandom.shared, sink: sink, config: config)
        core.onEvent = onEvent
        let channel: Channel
        do {
            channel = try await bind(listen, on: loop, core: core, sink: sink)
        } catch let error as IOError where listen.isIPv6Unspecified && error.errnoCode == EAFNOSUPPORT {
            channel = try await bind(.ipv4(0, 0, 0, 0, port: listen.port), on: loop, core: core, sink: sink)
        }
        guard let bound = channel.localAddress.flatMap(PeerAddress.init) else {
            try? await channel.close()
            throw TransportError.malformed("socket has no local address")
        }
        // The address family first: sends start once the channel is set, and
        // the socket addresses made for them are kept.
        sink.mapsIPv4 = channel.localAddress?.protocol == .inet6
        sink.channel = channel
        if listen.port == 0 {
            // A port the system picked may be picked again (`AddressChange`).
            let again = PeerAddress(host: bound.host, port: 0)
            sink.rebinder = { [unowned sink] done in
                guard let old = sink.channel else { return false }
                sink.channel = nil
                bootstrap(again, on: loop, core: core, sink: sink).bind(to: again.socketAddress).whenComplete { result in
                    switch result {
                    case .success(let channel):
                        sink.channel = channel
                        // (Perhaps in the middle of the old one's read
                        // batch, whose end now never comes to flush.)
                        sink.batching = false
                        old.close(promise: nil)
                        done(channel.localAddress?.port.map { UInt16(truncatingIfNeeded: $0) })
                        sink.flushIfNeeded()
                    case .failure:
                        sink.channel = old
                        done(nil)
                    }
                }
                return true
            }
        }
        let node = UDPNode(core: core, channel: channel, localAddress: bound, eventLoop: loop)
        let interval = TimeAmount.nanoseconds(TransportConstants.tickInterval.nanosecondsClamped)
        node.ticker = loop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in core.tick() }
        return node
    }

    /// Bytes of the receive buffer per datagram of a vectored read.
    static let readSlot = 2048

    private static func bind(_ listen: PeerAddress, on loop: EventLoop, core: TransportCore, sink: ChannelSink) async throws -> Channel {
        try await bootstrap(listen, on: loop, core: core, sink: sink).bind(to: listen.socketAddress).get()
    }

    private static func bootstrap(_ listen: PeerAddress, on loop: EventLoop, core: TransportCore, sink: ChannelSink) -> DatagramBootstrap {
        // Vectored reads share one receive buffer among the batch: size it so
        // each slot holds a full datagram (a short slot would truncate it).
        let batch = 32
        var bootstrap = DatagramBootstrap(group: loop)
            // No SO_REUSEADDR: on UDP it would let a second node bind the same
            // port silently and steal its datagrams; "address in use" is right.
            .channelOption(.datagramVectorReadMessageCount, value: batch)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: batch * readSlot))
        if listen.isIPv6Unspecified {
            // Dual stack whatever net.ipv6.bindv6only says: IPv4 peers arrive
            // as ::ffff:a.b.c.d, which PeerAddress turns back into IPv4.
            bootstrap = bootstrap.channelOption(ChannelOptions.Types.SocketOption(level: .ipv6, name: .ipv6_v6only), value: 0)
        }
        return bootstrap.channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(DatagramHandler(core: core, sink: sink))
            }
        }
    }

    private init(core: TransportCore, channel: Channel, localAddress: PeerAddress, eventLoop: EventLoop) {
        self.core = core
        self.channel = channel
        self.localAddress = localAddress
        self.eventLoop = eventLoop
    }

    /// Runs `body` with the core on its event loop.
    public func execute(_ body: @escaping (TransportCore) -> Void) {
        let core = self.core
        eventLoop.execute { body(core) }
    }

    /// Runs `body` on the loop and returns its result.
    public func submit<T>(_ body: @escaping (TransportCore) throws -> T) async throws -> T {
        let core = self.core
        return try await eventLoop.submit { try body(core) }.get()
    }

    /// Closes the socket without a word to anyone (a node replaced by another
    /// process of the same identity must not end that process's sessions).
    public func abandon() async {
        ticker?.cancel()
        try? await channel.close()
    }

    /// Says bye to every peer, then closes the socket.
    public func close() async {
        let core = self.core
        try? await eventLoop.submit { core.close() }.get()
        ticker?.cancel()
        try? await channel.close()
    }
}

/// Writes the core's datagrams to the channel; flushed once per read batch
/// or tick rather than per datagram when possible.
final class ChannelSink: DatagramSink {
    var channel: Channel?
    /// Binds a new socket for `rebind` (nil: the user chose the port).
    var rebinder: ((@escaping (UInt16?) -> Void) -> Bool)?

    func rebind(_ done: @escaping (UInt16?) -> Void) -> Bool { rebinder?(done) ?? false }
    /// The socket is IPv6 (dual stack): IPv4 peers are addressed as ::ffff:a.b.c.d.
    var mapsIPv4 = false {
        didSet { socketAddresses.removeAll() }
    }
    private var pendingFlush = false
    var batching = false

    /// NIO socket addresses by peer address: making one formats the host as
    /// text and boxes it, too slow to do again for every datagram. Bounded:
    /// replies to unauthenticated senders can name any number of addresses.
    private var socketAddresses: [PeerAddress: SocketAddress] = [:]

    private func socketAddress(_ address: PeerAddress) -> SocketAddress {
        if let known = socketAddresses[address] { return known }
        let made = mapsIPv4 ? address.ipv4Mapped.socketAddress : address.socketAddress
        if socketAddresses.count >= TransportConstants.socketAddressCacheSize { socketAddresses.removeAll(keepingCapacity: true) }
        socketAddresses[address] = made
        return made
    }

    func send(_ datagram: [UInt8], to address: PeerAddress) {
        guard let channel else { return }
        write(channel.allocator.buffer(bytes: datagram), to: address, on: channel)
    }

    /// Writes the datagram straight into the buffer that goes to the socket.
    func send(count: Int, to address: PeerAddress, fill: (UnsafeMutableRawBufferPointer) -> Void) {
        guard let channel else { return }
        var buffer = channel.allocator.buffer(capacity: count)
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { b in
            fill(UnsafeMutableRawBufferPointer(rebasing: b[..<count]))
            return count
        }
        write(buffer, to: address, on: channel)
    }

    private func write(_ buffer: ByteBuffer, to address: PeerAddress, on channel: Channel) {
        // An IPv4 socket cannot send to an IPv6 address (a peer's IPv6
        // candidate, now that nodes list theirs): skipped, as an unreachable
        // candidate is, not handed to the channel to fail.
        guard mapsIPv4 || address.isIPv4 else { return }
        let envelope = AddressedEnvelope(remoteAddress: socketAddress(address), data: buffer)
        if batching {
            channel.write(envelope, promise: nil)
            pendingFlush = true
        } else {
            channel.writeAndFlush(envelope, promise: nil)
        }
    }

    /// The hop limit for this one datagram (IPv4 TTL and IPv6 hop limit, as
    /// either may apply on a dual-stack socket), then back to the default.
    func send(_ datagram: [UInt8], to address: PeerAddress, hopLimit: Int) {
        guard let channel, let options = channel.syncOptions else { return send(datagram, to: address) }
        flushIfNeeded()
        let ttl = Self.ttl
        let hops = ChannelOptions.Types.SocketOption(level: NIOBSDSocket.OptionLevel(rawValue: CInt(IPPROTO_IPV6)),
                                                     name: NIOBSDSocket.Option(rawValue: CInt(IPV6_UNICAST_HOPS)))
        let limited = [ttl, hops].filter { (try? options.setOption($0, value: hopLimit)) != nil }
        let wasBatching = batching
        batching = false
        send(datagram, to: address)
        batching = wasBatching
        // -1: the system's default again.
        for option in limited where option == hops { try? options.setOption(option, value: -1) }
        for option in limited where option == ttl { try? options.setOption(option, value: TransportConstants.defaultTTL) }
    }

    func flush() { flushIfNeeded() }

    // MARK: Spare sockets (birthday punching)

    /// Spare IPv4 sockets by number, and the socket address each last sent to.
    private var spares: [UInt32: (channel: Channel, to: PeerAddress?, address: SocketAddress?)] = [:]
    private var nextSpare: UInt32 = 0

    func openSpares(count: Int, receive: @escaping (inout [UInt8], PeerAddress) -> Void,
                    _ done: @escaping ([UInt32]) -> Void) -> Bool {
        guard let channel else { return false }
        let loop = channel.eventLoop
        let any = PeerAddress.ipv4(0, 0, 0, 0, port: 0).socketAddress
        let opening = (0..<count).map { _ -> EventLoopFuture<(UInt32, Channel)> in
            nextSpare &+= 1
            let number = nextSpare
            return DatagramBootstrap(group: loop)
                .channelInitializer { spare in
                    spare.eventLoop.makeCompletedFuture {
                        try spare.pipeline.syncOperations.addHandler(SpareHandler(number: number, sink: self, receive: receive))
                    }
                }
                .bind(to: any).map { (number, $0) }
        }
        EventLoopFuture.whenAllComplete(opening, on: loop).whenSuccess { results in
            var opened = [UInt32]()
            for case .success(let (number, spare)) in results {
                self.spares[number] = (spare, nil, nil)
                opened.append(number)
            }
            done(opened)
        }
        return true
    }

    func sparePort(_ spare: UInt32) -> UInt16? {
        (spares[spare]?.channel.localAddress?.port).map { UInt16(truncatingIfNeeded: $0) }
    }

    func sendSpare(_ datagram: [UInt8], spare number: UInt32, to address: PeerAddress, hopLimit: Int?) {
        guard var spare = spares[number], address.isIPv4 else { return }
        if spare.to != address {
            spare.to = address
            spare.address = address.socketAddress
            spares[number] = spare
        }
        guard let socketAddress = spare.address else { return }
        let envelope = AddressedEnvelope(remoteAddress: socketAddress, data: spare.channel.allocator.buffer(bytes: datagram))
        guard let hopLimit, let options = spare.channel.syncOptions else {
            spare.channel.writeAndFlush(envelope, promise: nil)
            return
        }
        try? options.setOption(Self.ttl, value: hopLimit)
        spare.channel.writeAndFlush(envelope, promise: nil)
        try? options.setOption(Self.ttl, value: TransportConstants.defaultTTL)
    }

    func closeSpares(_ numbers: [UInt32]) {
        for number in numbers { spares.removeValue(forKey: number)?.channel.close(promise: nil) }
    }

    static let ttl = ChannelOptions.Types.SocketOption(level: NIOBSDSocket.OptionLevel(rawValue: CInt(IPPROTO_IP)),
                                                       name: NIOBSDSocket.Option(rawValue: CInt(IP_TTL)))

    func flushIfNeeded() {
        if pendingFlush {
            pendingFlush = false
            channel?.flush()
        }
    }
}

/// Hands each received datagram to the core.
final class DatagramHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    private let core: TransportCore
    private let sink: ChannelSink
    /// Each datagram is copied here and opened in place: the same memory
    /// every time, unless whoever got the last one kept part of it (then
    /// the array is copied on write, as any array would be).
    private var scratch: [UInt8] = []

    init(core: TransportCore, sink: ChannelSink) {
        self.core = core
        self.sink = sink
        scratch.reserveCapacity(UDPNode.readSlot)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard let source = PeerAddress(envelope.remoteAddress) else { return }
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: envelope.data.readableBytesView)
        sink.batching = true
        core.receive(reusing: &scratch, from: source)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        sink.batching = false
        sink.flushIfNeeded()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // ICMP port-unreachable and friends surface here; UDP carries on.
    }
}

/// Hands what arrives on a spare socket to the core, as from the spare's path.
final class SpareHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    private let number: UInt32
    private unowned let sink: ChannelSink
    private let receive: (inout [UInt8], PeerAddress) -> Void
    private var scratch: [UInt8] = []

    init(number: UInt32, sink: ChannelSink, receive: @escaping (inout [UInt8], PeerAddress) -> Void) {
        self.number = number
        self.sink = sink
        self.receive = receive
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard let source = PeerAddress(envelope.remoteAddress), let path = SparePath.address(spare: number, remote: source) else { return }
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: envelope.data.readableBytesView)
        sink.batching = true
        receive(&scratch, path)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        sink.batching = false
        sink.flushIfNeeded()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {}
}
