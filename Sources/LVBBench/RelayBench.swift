#if canImport(Glibc)
import Glibc
#endif
import LVBCore
import LVBCrypto
import LVBMedia
import LVBTransport
import NIOCore
import NIOPosix

// Relay forwarding (issue 11): what one relay node passes on, over real UDP
// sockets on loopback. `LVBBench <seconds> relay` runs this alone.
//
// The relay is a `UDPNode` (TransportCore on the real UDP driver: one SwiftNIO
// datagram channel, vectored reads) on an event loop of one thread. Its parent
// sends it VP8 RTP over an lvbnode session (sealed, 1200-byte datagrams, a
// keyframe every 256 packets) as fast as its own event loop can, in batches
// (SwiftNIO writes them with sendmmsg); each datagram is opened and
// replay-checked, passed through a `MediaRelay` (dedupe, history, GOP cache)
// and sealed again to the one child subscribed to it, over another session.
// Reference, in the same run: a plain UDP forwarder on the same driver (the
// same channel options, one thread) writing each datagram it receives, as it
// is, to the child, fed by the same parent without the session. The child
// only reads at the end, to check that what it got opens as RTP.
// Figures: datagrams forwarded per second of wall time, and per CPU second of
// the forwarding thread (what one core does: the less noisy figure on a shared
// machine, and the one the goal is read on). Goal: relay ≥ 0.6 × plain. Also
// one open and one seal alone (in memory, CryptoLoop), which bound the ratio:
// plain's work plus the AEAD is the least a relay does. And the relay's work
// alone, in memory (RelayEngineLoop), so the output says where the time goes.
// Two rounds each, alternating; the better round of each counts.

enum RelayBench {
    static let goalRatio = 0.6
    static let warmup = 0.5
    static let rounds = 2

    /// One forwarder's run.
    struct Figures {
        var perSecond = 0.0      // forwarded / wall second
        var perCPUSecond = 0.0   // forwarded / CPU second of the forwarding thread
        var busy = 0.0           // that thread's CPU share of the wall time
        var offered = 0.0        // what the parent sent / second
        var verified = 0, checked = 0
        var dropped = 0          // relay only: datagrams the child's session refused
    }

    static func runAndPrint(seconds: Double) async {
        say("")
        say("relay forwarding: one relay node on one event-loop thread, loopback UDP, 1200-byte datagrams of VP8 RTP "
            + "(parent → relay → one child); reference: a plain UDP forwarder on the same driver, same run")
        var plain: [Figures] = [], relayed: [Figures] = []
        for _ in 0..<rounds {
            do { plain.append(try await runPlain(seconds: seconds)) } catch { say("  plain forwarder failed: \(error)") }
            do { relayed.append(try await runRelay(seconds: seconds)) } catch { say("  relay failed: \(error)") }
        }
        // What the session's AEAD alone costs per relayed packet (one open, one seal).
        let crypto = CryptoLoop.run(seconds: min(seconds, 2), payloadSize: rtpSize, clock: threadCPUSeconds)
        // The relay's own work without the driver: where a relayed datagram's time goes.
        let engine = (try? RelayEngineLoop.run(seconds: min(seconds, 2), payloadSize: rtpSize)) ?? 0
        guard let p = plain.max(by: { $0.perCPUSecond < $1.perCPUSecond }),
              let r = relayed.max(by: { $0.perCPUSecond < $1.perCPUSecond }) else { return }
        func figures(_ f: Figures) -> String {
            "\(fixed(f.perCPUSecond, 0)) /CPU s, \(fixed(f.perSecond, 0)) /s"
        }
        func note(_ f: Figures) -> String {
            "thread \(fixed(f.busy * 100, 0)) % busy, parent offered \(fixed(f.offered, 0)) /s"
        }
        row("plain UDP forwarder (reference)", figures(p), note: note(p))
        row("relay: open, MediaRelay, seal", figures(r), note: note(r))
        let ratio = p.perCPUSecond > 0 ? r.perCPUSecond / p.perCPUSecond : 0
        row("relay / plain, per CPU second", fixed(ratio, 2), goal: "≥ \(fixed(goalRatio, 1))", ok: ratio >= goalRatio)
        row("relay / plain, per wall second", p.perSecond > 0 ? fixed(r.perSecond / p.perSecond, 2) : "?",
            note: "(both saturated only if each thread is ~100 % busy)")
        // A relay does at least the plain forwarder's work plus one open and one seal.
        let ceiling = p.perCPUSecond > 0 && crypto > 0 ? (1 / p.perCPUSecond) / (1 / p.perCPUSecond + 1 / crypto) : 0
        row("seal + open alone, in memory", "\(fixed(crypto, 0)) /CPU s",
            note: "ceiling of relay / plain with this AEAD speed: \(fixed(ceiling, 2))")
        row("relay's work alone, in memory", "\(fixed(engine, 0)) /CPU s", note: "open, MediaRelay, seal; no socket, no event loop")
        if p.perCPUSecond > 0, r.perCPUSecond > 0, crypto > 0, engine > 0 {
            func us(_ perSecond: Double) -> String { fixed(1e6 / perSecond, 1) }
            say("  per datagram (µs of CPU): relay \(us(r.perCPUSecond)) = driver and sockets \(fixed(1e6 / r.perCPUSecond - 1e6 / engine, 1)) "
                + "(plain forwarder: \(us(p.perCPUSecond))) + relay's work \(us(engine)) (of it, seal + open with the session's "
                + "checks: \(us(crypto)))")
        }
        say("  child check: of the \(r.checked) datagrams it held, \(r.verified) opened as RTP, \(r.dropped) refused "
            + "(the rest: session control); plain: \(p.verified)/\(p.checked) of 1200 bytes")
    }

    // MARK: The relay node

    /// The relay's media side, on the node's loop: RTP from the parent into
    /// the relay, RTCP from children into it, its output sealed to them.
    /// Used on the node's loop only (hence unchecked).
    final class Stage: @unchecked Sendable {
        let relay = MediaRelay<NodeID>(clock: SystemClock.shared, repairBudgetKbps: 4000, maxChildren: 4)
        var forwarded = 0

        func attach(_ core: TransportCore) {
            relay.send = { [unowned self, unowned core] child, channel, bytes in
                try? core.send(bytes, channel: channel == .rtp ? .rtp : .rtcp, to: child)
                if channel == .rtp { forwarded += 1 }
            }
        }

        func handle(_ event: TransportEvent) {
            switch event {
            case .message(_, .rtp, let payload): relay.receiveRTP(payload)
            case .message(let from, .rtcp, let payload): relay.receiveRTCP(payload, from: from)
            default: break
            }
        }
    }

    /// RTP that fills a 1200-byte datagram once sealed (channel byte, header, tag).
    static let rtpSize = CoreConstants.maxDatagram - MessageSize.transportOverhead - 1

    static func runRelay(seconds: Double) async throws -> Figures {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let stage = Stage()
        let node = try await UDPNode.start(identity: .generate(), listen: .ipv4(127, 0, 0, 1, port: 0), group: group) {
            stage.handle($0)
        }
        try await node.submit { stage.attach($0) }
        let ticker = node.eventLoop.scheduleRepeatedTask(initialDelay: .milliseconds(100), delay: .milliseconds(100)) { _ in
            stage.relay.tick()
        }
        let relayAddress = node.localAddress, relayID = node.core.nodeID
        let parentGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let (source, parentChannel) = try await startSource(to: relayAddress, packetSize: rtpSize, group: parentGroup)
        let parentLoop = parentChannel.eventLoop
        let (childFD, _) = try udpSocket()
        defer { close(childFD) }
        let childSink = SocketSink(fd: childFD)
        childSink.target = sockaddrIn(relayAddress)
        let child = TransportCore(identity: .generate(), clock: SystemClock.shared, random: SodiumRandom.shared, sink: childSink)
        var opened = 0
        child.onEvent = { if case .message(_, .rtp, let p) = $0, (try? RTPPacket.parse(p)) != nil { opened += 1 } }

        // Sessions: the parent (on its loop) and the child both dial the relay (IK).
        try await parentLoop.submit {
            let parent = TransportCore(identity: .generate(), clock: SystemClock.shared, random: SodiumRandom.shared, sink: source)
            source.core = parent
            source.relay = relayID
            parent.connect(to: relayAddress, expecting: relayID)
            parentChannel.flush()
        }.get()
        child.connect(to: relayAddress, expecting: relayID)
        let deadline = now() + 5
        while true {
            drain(childFD) { child.receive($0, from: relayAddress) }
            let parentReady = try await parentLoop.submit { source.core?.isEstablished(with: relayID) ?? false }.get()
            if parentReady && child.isEstablished(with: relayID) { break }
            guard now() < deadline else { throw BenchError.handshake }
            try await Task.sleep(for: .milliseconds(1))
        }
        // The child subscribes with a receiver report, as a viewer does, and
        // keeps it up; the parent's first packets establish its session on the relay.
        let rr = RTCPPacket.receiverReport(try RTCPReceiverReport(ssrc: 1)).serialized()
        try child.send(rr, channel: .rtcp, to: relayID)
        while try await node.submit({ _ in stage.relay.childCount }) == 0 {
            guard now() < deadline else { throw BenchError.handshake }
            try await Task.sleep(for: .milliseconds(1))
        }

        parentLoop.execute { source.start() }
        var f = try await measure(seconds: seconds, forwarder: node.eventLoop, count: { stage.forwarded },
                                  source: parentLoop, sent: { source.sent }) {
            try? child.send(rr, channel: .rtcp, to: relayID)
        }
        try await parentLoop.submit { source.stop() }.get()
        // What the child holds: the first datagrams after it stopped reading.
        let droppedBefore = child.stats.droppedTotal
        drain(childFD, limit: 4096) { d in
            f.checked += 1
            child.receive(d, from: relayAddress)
        }
        f.verified = opened
        f.dropped = child.stats.droppedTotal - droppedBefore
        ticker.cancel()
        await node.abandon()
        try? await parentChannel.close()
        try? await parentGroup.shutdownGracefully()
        try? await group.shutdownGracefully()
        return f
    }

    // MARK: The plain forwarder

    static func runPlain(seconds: Double) async throws -> Figures {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let (childFD, childAddress) = try udpSocket()
        defer { close(childFD) }
        let child = try SocketAddress(ipAddress: "127.0.0.1", port: Int(UInt16(bigEndian: childAddress.sin_port)))
        let handler = PlainForwarder(child: child)
        let channel = try await DatagramBootstrap(group: group)
            .channelOption(.datagramVectorReadMessageCount, value: 32)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 32 * 2048))
            .channelInitializer { ch in
                ch.eventLoop.makeCompletedFuture { try ch.pipeline.syncOperations.addHandler(handler) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        guard let port = channel.localAddress?.port else { throw BenchError.socket }
        let parentGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let (source, parentChannel) = try await startSource(to: .ipv4(127, 0, 0, 1, port: UInt16(port)),
                                                            packetSize: CoreConstants.maxDatagram, group: parentGroup)
        parentChannel.eventLoop.execute { source.start() }
        var f = try await measure(seconds: seconds, forwarder: channel.eventLoop, count: { handler.forwarded },
                                  source: parentChannel.eventLoop, sent: { source.sent }) {}
        try await parentChannel.eventLoop.submit { source.stop() }.get()
        drain(childFD, limit: 4096) { d in
            f.checked += 1
            if d.count == CoreConstants.maxDatagram { f.verified += 1 }
        }
        try? await channel.close()
        try? await parentChannel.close()
        try? await parentGroup.shutdownGracefully()
        try? await group.shutdownGracefully()
        return f
    }

    /// The parent: a datagram channel of its own on `group`, its handler the stream source.
    static func startSource(to target: PeerAddress, packetSize: Int,
                            group: EventLoopGroup) async throws -> (StreamSource, Channel) {
        let source = try StreamSource(target: target, packetSize: packetSize)
        let channel = try await DatagramBootstrap(group: group)
            .channelOption(.socketOption(.so_sndbuf), value: 4 << 20)
            .channelInitializer { ch in
                ch.eventLoop.makeCompletedFuture { try ch.pipeline.syncOperations.addHandler(source) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        try await channel.eventLoop.submit { source.channel = channel }.get()
        return (source, channel)
    }

    // MARK: Shared

    /// After the warm-up, the forwarder's count and its thread's CPU time
    /// over `seconds` (read on its loop), and what the parent sent (on its
    /// own); `everySecond` runs on this task.
    static func measure(seconds: Double, forwarder loop: EventLoop, count: @escaping () -> Int,
                        source: EventLoop, sent: @escaping () -> Int, everySecond: () -> Void) async throws -> Figures {
        try await Task.sleep(for: .milliseconds(Int(warmup * 1000)))
        let s0 = try await source.submit { sent() }.get()
        let (c0, cpu0) = try await loop.submit { (count(), threadCPUSeconds()) }.get()
        let start = now()
        var left = seconds
        while left > 0 {
            try await Task.sleep(for: .milliseconds(Int(min(1, left) * 1000)))
            left -= 1
            everySecond()
        }
        let (c1, cpu1) = try await loop.submit { (count(), threadCPUSeconds()) }.get()
        let s1 = try await source.submit { sent() }.get()
        let wall = now() - start, cpu = cpu1 - cpu0
        var f = Figures()
        f.offered = Double(s1 - s0) / wall
        f.perSecond = Double(c1 - c0) / wall
        f.perCPUSecond = cpu > 0 ? Double(c1 - c0) / cpu : 0
        f.busy = cpu / wall
        return f
    }

    /// Reads what waits on `fd` without blocking (at most `limit` datagrams).
    static func drain(_ fd: Int32, limit: Int = .max, _ body: ([UInt8]) -> Void) {
        var buffer = [UInt8](repeating: 0, count: 2048)
        var n = 0
        while n < limit {
            let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            guard got > 0 else { return }
            body(Array(buffer[0..<got]))
            n += 1
        }
    }

    static func row(_ label: String, _ value: String, goal: String? = nil, ok: Bool = false, note: String? = nil) {
        MediaBench.row(label, value, goal: goal, ok: ok, note: note)
    }

    static func say(_ line: String) { MediaBench.say(line) }
    static func fixed(_ v: Double, _ decimals: Int) -> String { MediaBench.fixed(v, decimals) }
}
