import LVBCore
import LVBCrypto
import NIOConcurrencyHelpers
import NIOPosix
import Testing
@testable import LVBTransport

/// The packet path's buffer reuse: the UDP driver opens every datagram in one
/// array it fills again, and seals straight into the sink's own buffer. Both
/// must authenticate and replay-check exactly as the copying path does.
@Suite struct BufferReuseTests {
    /// Keeps what the core sends; sealed datagrams are written over a buffer
    /// of garbage, so a byte the sealer forgot to write shows.
    final class GarbageSink: DatagramSink {
        var sent: [[UInt8]] = []
        var sealedInPlace = 0
        func send(_ datagram: [UInt8], to address: PeerAddress) { sent.append(datagram) }
        func send(count: Int, to address: PeerAddress, fill: (UnsafeMutableRawBufferPointer) -> Void) {
            var buffer = [UInt8](repeating: 0xA5, count: count)
            buffer.withUnsafeMutableBytes(fill)
            sealedInPlace += 1
            sent.append(buffer)
        }
    }

    static let aAddress = PeerAddress.ipv4(127, 0, 0, 1, port: 1)
    static let bAddress = PeerAddress.ipv4(127, 0, 0, 1, port: 2)

    /// Two cores with an IK session, set up in memory; `b` records its messages.
    static func session() throws -> (a: TransportCore, aSink: GarbageSink, b: TransportCore, bSink: GarbageSink, got: Box) {
        let aSink = GarbageSink(), bSink = GarbageSink()
        let a = TransportCore(identity: .generate(), clock: SystemClock.shared, random: SodiumRandom.shared, sink: aSink)
        let b = TransportCore(identity: .generate(), clock: SystemClock.shared, random: SodiumRandom.shared, sink: bSink)
        let got = Box()
        b.onEvent = { if case let .message(_, _, p) = $0 { got.payloads.append(p) } }
        a.connect(to: bAddress, expecting: b.nodeID)
        while !aSink.sent.isEmpty || !bSink.sent.isEmpty {
            let fromA = aSink.sent, fromB = bSink.sent
            aSink.sent.removeAll()
            bSink.sent.removeAll()
            for d in fromA { b.receive(d, from: aAddress) }
            for d in fromB { a.receive(d, from: bAddress) }
        }
        try #require(a.isEstablished(with: b.nodeID) && b.isEstablished(with: a.nodeID))
        got.payloads.removeAll()
        aSink.sent.removeAll()
        return (a, aSink, b, bSink, got)
    }

    /// Payload slices as the core emitted them (kept, as a consumer may).
    final class Box { var payloads: [ArraySlice<UInt8>] = [] }

    @Test func sealingInPlaceWritesEveryByteAndOpens() throws {
        let (a, aSink, b, _, got) = try Self.session()
        let before = aSink.sealedInPlace
        try a.send(Array("sealed where it is sent".utf8), channel: .gossip, to: b.nodeID)
        try a.send([], channel: .rtp, to: b.nodeID)
        #expect(aSink.sealedInPlace - before == 2)
        let datagrams = aSink.sent
        #expect(datagrams.count == 2)
        // Type 4, then three zero bytes, over the garbage the buffer held.
        for d in datagrams { #expect(Array(d[0..<4]) == [PacketType.transport.rawValue, 0, 0, 0]) }
        #expect(datagrams[0].count == MessageSize.transportOverhead + 1 + 23)
        for d in datagrams { b.receive(d, from: Self.aAddress) }
        #expect(got.payloads.map { Array($0) } == [Array("sealed where it is sent".utf8), []])
        #expect(b.stats.droppedTotal == 0)
    }

    @Test func aReusedReceiveBufferStillRejectsTamperedAndReplayedDatagrams() throws {
        let (a, aSink, b, _, got) = try Self.session()
        for text in ["first", "second", "third"] { try a.send(Array(text.utf8), channel: .gossip, to: b.nodeID) }
        let datagrams = aSink.sent
        var buffer = [UInt8]()
        buffer.reserveCapacity(2048)
        func deliver(_ d: [UInt8]) {
            buffer.removeAll(keepingCapacity: true)
            buffer.append(contentsOf: d)
            b.receive(reusing: &buffer, from: Self.aAddress)
        }

        deliver(datagrams[0])
        // A flipped bit in the ciphertext, the tag or the counter: dropped, nothing delivered.
        for index in [MessageSize.transportHeader + 1, datagrams[1].count - 1, 8] {
            var bad = datagrams[1]
            bad[index] ^= 0x40
            deliver(bad)
        }
        #expect(b.stats.droppedDecrypt == 3)
        // Replays of the first, whole and after the buffer held others: dropped.
        deliver(datagrams[0])
        #expect(b.stats.droppedReplay == 1)
        // The genuine second and third still open (the window did not move for forgeries).
        deliver(datagrams[1])
        deliver(datagrams[2])
        deliver(datagrams[2])
        #expect(b.stats.droppedReplay == 2)
        // The payloads kept from the shared buffer were not overwritten by later datagrams.
        #expect(got.payloads.map { String(decoding: $0, as: UTF8.self) } == ["first", "second", "third"])
    }

    /// The UDP driver keeps the socket addresses it made: a dual-stack node
    /// (IPv4 peers as ::ffff:a.b.c.d) and an IPv4 one talk both ways, again
    /// and again, through them.
    @Test func aDualStackNodeAndAnIPv4NodeTalkThroughKeptSocketAddresses() async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let got = NIOLockedValueBox<[String]>([])
        let host = try await UDPNode.start(identity: .generate(), listen: .anyDualStack(port: 0), group: group) { e in
            if case let .message(_, _, p) = e { got.withLockedValue { $0.append(String(decoding: p, as: UTF8.self)) } }
        }
        let echoes = NIOLockedValueBox(0)
        let viewer = try await UDPNode.start(identity: .generate(), listen: .ipv4(127, 0, 0, 1, port: 0), group: group) { e in
            if case .message = e { echoes.withLockedValue { $0 += 1 } }
        }
        let hostID = host.core.nodeID, viewerID = viewer.core.nodeID
        let hostAddress = PeerAddress.ipv4(127, 0, 0, 1, port: host.localAddress.port)
        viewer.execute { $0.connect(to: hostAddress, expecting: hostID) }
        #expect(await LoopbackSessionTests.eventually {
            (try? await host.submit { $0.isEstablished(with: viewerID) }) ?? false
        })
        for i in 0..<20 {
            try await viewer.submit { try $0.send(Array("to host \(i)".utf8), channel: .gossip, to: hostID) }
            try await host.submit { try $0.send(Array("to viewer \(i)".utf8), channel: .gossip, to: viewerID) }
        }
        #expect(await LoopbackSessionTests.eventually { got.withLockedValue { $0.count } == 20 && echoes.withLockedValue { $0 } == 20 })
        #expect(got.withLockedValue { $0 } == (0..<20).map { "to host \($0)" })
        await viewer.close()
        await host.close()
    }
}
