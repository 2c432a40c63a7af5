import LVBCore
import LVBCrypto
import LVBMedia
import LVBTransport

/// The relay's own work per datagram, without a socket or an event loop:
/// the parent's sealed RTP opened by the relay's core, passed through the
/// bench's `MediaRelay` stage and sealed again to one child. Only the
/// relay's calls are timed (thread CPU time); the parent seals outside the
/// timed part, and what the relay sends is written into one reused buffer,
/// as the UDP driver writes into its own.
enum RelayEngineLoop {
    /// Routes datagrams by destination while the sessions are set up, then
    /// (`discard`) only writes them, as a socket write would read them.
    final class Sink: DatagramSink {
        var queue: [([UInt8], PeerAddress)] = []
        var discard = false
        private var buffer = [UInt8](repeating: 0, count: 2048)
        func send(_ datagram: [UInt8], to address: PeerAddress) {
            if !discard { queue.append((datagram, address)) }
        }
        func send(count: Int, to address: PeerAddress, fill: (UnsafeMutableRawBufferPointer) -> Void) {
            guard discard else {
                var d = [UInt8](repeating: 0, count: count)
                d.withUnsafeMutableBytes(fill)
                return send(d, to: address)
            }
            buffer.withUnsafeMutableBytes { fill(UnsafeMutableRawBufferPointer(rebasing: $0[..<count])) }
        }
    }

    static let parentAddress = PeerAddress.ipv4(127, 0, 0, 1, port: 1)
    static let relayAddress = PeerAddress.ipv4(127, 0, 0, 1, port: 2)
    static let childAddress = PeerAddress.ipv4(127, 0, 0, 1, port: 3)

    /// Datagrams the relay forwarded per CPU second of its own work.
    static func run(seconds: Double, payloadSize: Int) throws -> Double {
        let parentSink = Sink(), relaySink = Sink(), childSink = Sink()
        func core(_ sink: Sink) -> TransportCore {
            TransportCore(identity: .generate(), clock: SystemClock.shared, random: SodiumRandom.shared, sink: sink)
        }
        let parent = core(parentSink), relay = core(relaySink), child = core(childSink)
        let stage = RelayBench.Stage()
        stage.attach(relay)
        relay.onEvent = { stage.handle($0) }
        let cores = [(parent, parentSink, parentAddress), (relay, relaySink, relayAddress), (child, childSink, childAddress)]
        func deliver() {
            var moved = true
            while moved {
                moved = false
                for (_, sink, from) in cores {
                    let queue = sink.queue
                    sink.queue.removeAll()
                    for (d, to) in queue {
                        moved = true
                        cores.first { $0.2 == to }?.0.receive(d, from: from)
                    }
                }
            }
        }
        parent.connect(to: relayAddress, expecting: relay.nodeID)
        child.connect(to: relayAddress, expecting: relay.nodeID)
        deliver()
        try child.send(RTCPPacket.receiverReport(try RTCPReceiverReport(ssrc: 1)).serialized(), channel: .rtcp, to: relay.nodeID)
        deliver()
        guard relay.isEstablished(with: parent.nodeID), stage.relay.childCount == 1 else { throw BenchError.handshake }

        relaySink.discard = true
        var rtp = RTPSource(size: payloadSize)
        var cpu = 0.0
        let forwarded0 = stage.forwarded
        while cpu < seconds {
            for _ in 0..<256 { try? parent.send(rtp.next(), channel: .rtp, to: relay.nodeID) }
            var batch = parentSink.queue
            parentSink.queue.removeAll(keepingCapacity: true)
            let t0 = threadCPUSeconds()
            for i in batch.indices {
                // Moved out, so the relay opens it in place with no copy on write.
                var d: [UInt8] = []
                swap(&d, &batch[i].0)
                relay.receive(d, from: parentAddress)
            }
            cpu += threadCPUSeconds() - t0
        }
        return Double(stage.forwarded - forwarded0) / cpu
    }
}
