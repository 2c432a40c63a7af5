import LVBCore
import LVBTransport
import NIOCore
import NIOPosix

/// The rendezvous's alternate STUN port (RFC 5780 §6.1 with one IP
/// address): a second UDP socket at the session port's IP, on the same
/// event loop as the session socket, that hands every datagram to the
/// service (STUN Binding only) and sends the answers it is given.
final class AlternatePort: @unchecked Sendable {
    let localAddress: PeerAddress
    private let channel: Channel
    private let mapsIPv4: Bool

    private init(channel: Channel, localAddress: PeerAddress) {
        self.channel = channel
        self.localAddress = localAddress
        mapsIPv4 = channel.localAddress?.protocol == .inet6
    }

    /// Binds `port` at `ip`'s address (a wildcard `[::]` is dual stack, as
    /// the session socket is) on `loop`; `deliver` runs there.
    static func bind(_ ip: PeerAddress, port: UInt16, on loop: EventLoop,
                     deliver: @escaping (ArraySlice<UInt8>, PeerAddress) -> Void) async throws -> AlternatePort {
        var bootstrap = DatagramBootstrap(group: loop)
        if ip.isIPv6Unspecified {
            bootstrap = bootstrap.channelOption(ChannelOptions.Types.SocketOption(level: .ipv6, name: .ipv6_v6only), value: 0)
        }
        let channel = try await bootstrap
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(AlternatePortHandler(deliver: deliver))
                }
            }
            .bind(to: PeerAddress(host: ip.host, port: port).socketAddress)
            .get()
        guard let bound = channel.localAddress.flatMap(PeerAddress.init) else {
            try? await channel.close()
            throw TransportError.malformed("alternate socket has no local address")
        }
        return AlternatePort(channel: channel, localAddress: bound)
    }

    /// Sends one answer (on the loop).
    func send(_ datagram: [UInt8], to address: PeerAddress) {
        guard mapsIPv4 || address.isIPv4 else { return }
        let target = mapsIPv4 ? address.ipv4Mapped.socketAddress : address.socketAddress
        channel.writeAndFlush(AddressedEnvelope(remoteAddress: target, data: channel.allocator.buffer(bytes: datagram)), promise: nil)
    }

    func close() async { try? await channel.close() }
}

/// Hands each datagram on the alternate port to the service.
private final class AlternatePortHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    private let deliver: (ArraySlice<UInt8>, PeerAddress) -> Void

    init(deliver: @escaping (ArraySlice<UInt8>, PeerAddress) -> Void) { self.deliver = deliver }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard let source = PeerAddress(envelope.remoteAddress) else { return }
        deliver(Array(envelope.data.readableBytesView)[...], source)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // ICMP port-unreachable and friends: UDP carries on.
    }
}
