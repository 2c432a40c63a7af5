import LVBCore
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
@testable import LVBTransport

/// A loopback UDP socket for tests: records what it receives and, as an echo
/// target, sends each datagram back to its sender.
private final class LoopbackPeer: Sendable {
    typealias Received = (from: PeerAddress, bytes: [UInt8])
    let channel: Channel
    let address: PeerAddress
    private let box: NIOLockedValueBox<[Received]>

    private init(channel: Channel, address: PeerAddress, box: NIOLockedValueBox<[Received]>) {
        self.channel = channel
        self.address = address
        self.box = box
    }

    static func bind(echo: Bool) async throws -> LoopbackPeer {
        let box = NIOLockedValueBox<[Received]>([])
        let channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Recorder(box: box, echo: echo))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        guard let address = channel.localAddress.flatMap(PeerAddress.init) else {
            throw ChannelError.unknownLocalAddress
        }
        return LoopbackPeer(channel: channel, address: address, box: box)
    }

    var received: [Received] { box.withLockedValue { $0 } }

    func send(_ bytes: [UInt8], to address: PeerAddress) async throws {
        try await channel.writeAndFlush(AddressedEnvelope(remoteAddress: address.socketAddress, data: ByteBuffer(bytes: bytes)))
    }

    func close() async { try? await channel.close() }

    private final class Recorder: ChannelInboundHandler {
        typealias InboundIn = AddressedEnvelope<ByteBuffer>
        typealias OutboundOut = AddressedEnvelope<ByteBuffer>
        let box: NIOLockedValueBox<[Received]>
        let echo: Bool
        init(box: NIOLockedValueBox<[Received]>, echo: Bool) {
            self.box = box
            self.echo = echo
        }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let envelope = unwrapInboundIn(data)
            guard let from = PeerAddress(envelope.remoteAddress) else { return }
            box.withLockedValue { $0.append((from, Array(envelope.data.readableBytesView))) }
            if echo { context.writeAndFlush(wrapOutboundOut(envelope), promise: nil) }
        }
        func errorCaught(context: ChannelHandlerContext, error: Error) {}
    }
}

/// Polls `condition` until it holds or `timeout` of real time passes.
private func eventually(timeout: Duration = .seconds(5), _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return await condition()
}

private let loopbackAny = PeerAddress.ipv4(127, 0, 0, 1, port: 0)

@Suite("ImpairmentRelay")
struct ImpairmentRelayTests {
    @Test("20% loss each way passes about 64% of round trips")
    func lossBothWays() async throws {
        let target = try await LoopbackPeer.bind(echo: true)
        let client = try await LoopbackPeer.bind(echo: false)
        let relay = try await ImpairmentRelay.start(
            listen: loopbackAny, target: target.address, upstream: Impairment(loss: 0.2),
            downstream: Impairment(loss: 0.2), seed: 7, group: MultiThreadedEventLoopGroup.singleton)
        // Paced in batches so no socket buffer overflows and only the relay loses datagrams.
        var sent = 0
        for batch in 0..<20 {
            for i in 0..<50 {
                try await client.send([UInt8(batch), UInt8(i)], to: relay.localAddress)
                sent += 1
            }
            let expected = sent
            #expect(await eventually { await relay.stats().upstream.received == expected })
        }
        let settled = await eventually {
            let s = await relay.stats()
            return s.downstream.received == s.upstream.forwarded && client.received.count == s.downstream.forwarded
        }
        #expect(settled)
        let stats = await relay.stats()
        let ratio = Double(client.received.count) / 1000
        #expect(abs(ratio - 0.64) < 0.07, "round-trip ratio \(ratio)")
        #expect(abs(Double(stats.upstream.dropped) / 1000 - 0.2) < 0.05)
        #expect(stats.upstream.forwarded + stats.upstream.dropped == 1000)
        #expect(stats.clients == 1)
        #expect(Set(client.received.map(\.from)) == [relay.localAddress])
        try await relay.close()
        await client.close()
        await target.close()
    }

    @Test("two clients through one relay reach the target from two addresses")
    func distinctClients() async throws {
        let target = try await LoopbackPeer.bind(echo: true)
        let alice = try await LoopbackPeer.bind(echo: false)
        let bob = try await LoopbackPeer.bind(echo: false)
        let relay = try await ImpairmentRelay.start(
            listen: loopbackAny, target: target.address, upstream: .none, downstream: .none,
            seed: 1, group: MultiThreadedEventLoopGroup.singleton)
        for i in 0..<5 {
            try await alice.send([0xA, UInt8(i)], to: relay.localAddress)
            try await bob.send([0xB, UInt8(i)], to: relay.localAddress)
        }
        #expect(await eventually { alice.received.count == 5 && bob.received.count == 5 })
        let sources = Dictionary(grouping: target.received, by: { $0.bytes[0] }).mapValues { Set($0.map(\.from)) }
        #expect(sources[0xA]?.count == 1 && sources[0xB]?.count == 1)
        #expect(sources[0xA] != sources[0xB])
        #expect(sources[0xA]?.contains(relay.localAddress) == false)
        // Each client hears only its own echoes.
        #expect(alice.received.allSatisfy { $0.bytes[0] == 0xA })
        #expect(bob.received.allSatisfy { $0.bytes[0] == 0xB })
        #expect(await relay.stats().clients == 2)
        try await relay.close()
        for peer in [target, alice, bob] { await peer.close() }
    }

    @Test("delays are applied in both directions")
    func delays() async throws {
        let target = try await LoopbackPeer.bind(echo: true)
        let client = try await LoopbackPeer.bind(echo: false)
        let relay = try await ImpairmentRelay.start(
            listen: loopbackAny, target: target.address, upstream: Impairment(delay: .milliseconds(150)),
            downstream: Impairment(delay: .milliseconds(100), jitter: .milliseconds(20)),
            seed: 3, group: MultiThreadedEventLoopGroup.singleton)
        let start = ContinuousClock.now
        try await client.send([42], to: relay.localAddress)
        #expect(await eventually { client.received.count == 1 })
        let rtt = ContinuousClock.now - start
        #expect(rtt >= .milliseconds(250), "round trip took \(rtt)")
        #expect(client.received.first?.bytes == [42])
        try await relay.close()
        await client.close()
        await target.close()
    }

    @Test("empty datagrams pass; the client cap and strangers are refused")
    func capAndStrangers() async throws {
        let target = try await LoopbackPeer.bind(echo: true)
        let client = try await LoopbackPeer.bind(echo: false)
        let other = try await LoopbackPeer.bind(echo: false)
        let relay = try await ImpairmentRelay.start(
            listen: loopbackAny, target: target.address, upstream: .none, downstream: .none,
            seed: 5, group: MultiThreadedEventLoopGroup.singleton, limits: .init(maxClients: 1))
        try await client.send([], to: relay.localAddress)
        #expect(await eventually { client.received.count == 1 })
        #expect(client.received.first?.bytes == [])
        // A second client is over the cap.
        try await other.send([1], to: relay.localAddress)
        #expect(await eventually { await relay.stats().upstream.rejected == 1 })
        // A stranger writing to the client's upstream socket is not relayed.
        let upstreamSocket = try #require(target.received.first?.from)
        try await other.send([2], to: upstreamSocket)
        #expect(await eventually { await relay.stats().downstream.rejected == 1 })
        #expect(client.received.count == 1 && other.received.isEmpty)
        try await relay.close()
        for peer in [target, client, other] { await peer.close() }
    }

    @Test("an idle client mapping expires and is reopened on new traffic")
    func idleExpiry() async throws {
        let target = try await LoopbackPeer.bind(echo: true)
        let client = try await LoopbackPeer.bind(echo: false)
        let relay = try await ImpairmentRelay.start(
            listen: loopbackAny, target: target.address, upstream: .none, downstream: .none,
            seed: 5, group: MultiThreadedEventLoopGroup.singleton, limits: .init(idleTimeout: .milliseconds(400)))
        try await client.send([1], to: relay.localAddress)
        #expect(await eventually { client.received.count == 1 })
        #expect(await eventually { await relay.stats().clientsExpired == 1 })
        #expect(await relay.stats().clients == 0)
        try await client.send([2], to: relay.localAddress)
        #expect(await eventually { client.received.count == 2 })
        #expect(await relay.stats().clientsOpened == 2)
        try await relay.close()
        for peer in [target, client] { await peer.close() }
    }

    @Test("an invalid impairment is refused at start")
    func invalidImpairment() async throws {
        await #expect(throws: ImpairmentError.self) {
            _ = try await ImpairmentRelay.start(
                listen: loopbackAny, target: loopbackAny, upstream: Impairment(loss: 2), downstream: .none,
                seed: 1, group: MultiThreadedEventLoopGroup.singleton)
        }
    }
}
