import LVBCore
import LVBCrypto
import LVBTransport

/// Forwards to whichever sink is current (memory for the handshake, then a socket).
final class RedirectSink: DatagramSink {
    var target: DatagramSink
    init(_ target: DatagramSink) { self.target = target }
    func send(_ datagram: [UInt8], to address: PeerAddress) { target.send(datagram, to: address) }
}

struct EstablishedPair {
    let sender: TransportCore
    let receiver: TransportCore
    let senderSink: RedirectSink
}

let senderAddress = PeerAddress.ipv4(127, 0, 0, 1, port: 1)
let receiverAddress = PeerAddress.ipv4(127, 0, 0, 1, port: 2)

/// Delivers queued datagrams between two in-memory cores until both are quiet.
func pump(_ a: TransportCore, _ aSink: MemorySink, _ b: TransportCore, _ bSink: MemorySink) {
    while !aSink.queue.isEmpty || !bSink.queue.isEmpty {
        let fromA = aSink.queue; aSink.queue.removeAll()
        for (d, _) in fromA { b.receive(d, from: senderAddress) }
        let fromB = bSink.queue; bSink.queue.removeAll()
        for (d, _) in fromB { a.receive(d, from: receiverAddress) }
    }
}

/// Two cores with an IK session, set up entirely in memory.
func establishedPair() throws -> EstablishedPair {
    let aMemory = MemorySink(), bMemory = MemorySink()
    let aSink = RedirectSink(aMemory)
    let sender = TransportCore(identity: .generate(), clock: SystemClock.shared, random: SodiumRandom.shared, sink: aSink)
    let receiver = TransportCore(identity: .generate(), clock: SystemClock.shared, random: SodiumRandom.shared, sink: bMemory)
    sender.connect(to: receiverAddress, expecting: receiver.nodeID)
    pump(sender, aMemory, receiver, bMemory)
    guard sender.isEstablished(with: receiver.nodeID), receiver.isEstablished(with: sender.nodeID) else { throw BenchError.handshake }
    return EstablishedPair(sender: sender, receiver: receiver, senderSink: aSink)
}

/// Full IK handshakes between fresh pairs of cores in memory (both sides' work).
enum HandshakeLoop {
    static func run(seconds: Double) -> Double {
        let aMemory = MemorySink(), bMemory = MemorySink()
        // Measure the handshake itself, not the cookie defence that a real
        // flood of this rate would (rightly) trigger.
        var config = TransportConfig()
        config.underLoadThreshold = .max
        let a = TransportCore(identity: .generate(), clock: SystemClock.shared, random: SodiumRandom.shared, sink: aMemory, config: config)
        let b = TransportCore(identity: .generate(), clock: SystemClock.shared, random: SodiumRandom.shared, sink: bMemory, config: config)
        var count = 0
        let start = now()
        while now() - start < seconds {
            a.connect(to: receiverAddress, expecting: b.nodeID)
            pump(a, aMemory, b, bMemory)
            if a.isEstablished(with: b.nodeID) { count += 1 }
            a.disconnect(b.nodeID)
            pump(a, aMemory, b, bMemory)
        }
        return Double(count) / (now() - start)
    }
}

/// Seal then open of full-size payloads under one session, no sockets.
/// `clock` is wall time by default; the relay bench passes the thread's CPU
/// time, as its other figures are per CPU second.
enum CryptoLoop {
    static func run(seconds: Double, payloadSize: Int, clock: () -> Double = now) -> Double {
        guard let pair = try? establishedPair() else { return 0 }
        let capture = MemorySink()
        pair.senderSink.target = capture
        var opened = 0
        pair.receiver.onEvent = { e in if case .message = e { opened += 1 } }
        let payload = [UInt8](repeating: 0x5A, count: payloadSize)
        let id = pair.receiver.nodeID
        let start = clock()
        while clock() - start < seconds {
            for _ in 0..<256 {
                try? pair.sender.send(payload, channel: .rtp, to: id)
            }
            for (d, _) in capture.queue { pair.receiver.receive(d, from: senderAddress) }
            capture.queue.removeAll(keepingCapacity: true)
        }
        return Double(opened) / (clock() - start)
    }
}
