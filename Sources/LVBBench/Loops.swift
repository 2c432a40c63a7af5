import LVBCore
import LVBCrypto
import LVBTransport

#if canImport(Glibc)
import Glibc
#endif

/// A sink that queues datagrams in memory, for in-process handshakes.
final class MemorySink: DatagramSink {
    var queue: [([UInt8], PeerAddress)] = []
    func send(_ datagram: [UInt8], to address: PeerAddress) { queue.append((datagram, address)) }
}

/// A sink that writes straight to a non-blocking UDP socket (no event loop),
/// so the benchmark measures the engine, not a scheduler.
final class SocketSink: DatagramSink {
    let fd: Int32
    var target = sockaddr_in()
    init(fd: Int32) { self.fd = fd }
    func send(_ datagram: [UInt8], to address: PeerAddress) {
        _ = datagram.withUnsafeBytes { b in
            withUnsafePointer(to: &target) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, b.baseAddress, b.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
    }
}

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func udpSocket() throws -> (Int32, sockaddr_in) {
    let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    guard fd >= 0 else { throw BenchError.socket }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    addr.sin_port = 0
    var size = 4 << 20
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int>.size))
    let rc = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    guard rc == 0 else { throw BenchError.socket }
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
    return (fd, addr)
}

enum BenchError: Error { case socket, handshake }

/// Two endpoints on loopback in one thread: send a burst of 32, receive them,
/// repeat. With `encrypted`, the datagrams go through two TransportCores with
/// an established session (seal, header, index lookup, open, replay window).
enum UDPLoop {
    static func run(seconds: Double, datagramSize: Int, encrypted: Bool) throws -> Double {
        let (a, _) = try udpSocket()
        let (b, bAddr) = try udpSocket()
        defer { close(a); close(b) }
        let bPeer = PeerAddress(host: .v4(UInt32(bigEndian: bAddr.sin_addr.s_addr)), port: UInt16(bigEndian: bAddr.sin_port))
        var receivedCount = 0
        var sendOne: () -> Void
        var receiveOne: ([UInt8]) -> Void
        if encrypted {
            let pair = try establishedPair()
            let socketSink = SocketSink(fd: a)
            socketSink.target = bAddr
            pair.senderSink.target = socketSink
            let payload = [UInt8](repeating: 0xAB, count: datagramSize - MessageSize.transportOverhead - 1)
            let receiverID = pair.receiver.nodeID
            sendOne = { try? pair.sender.send(payload, channel: .rtp, to: receiverID) }
            pair.receiver.onEvent = { e in if case .message = e { receivedCount += 1 } }
            receiveOne = { d in pair.receiver.receive(d, from: bPeer) }
        } else {
            var target = bAddr
            let payload = [UInt8](repeating: 0xAB, count: datagramSize)
            sendOne = {
                _ = payload.withUnsafeBytes { p in
                    withUnsafePointer(to: &target) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(a, p.baseAddress, p.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
                }
            }
            receiveOne = { _ in receivedCount += 1 }
        }
        var buffer = [UInt8](repeating: 0, count: 2048)
        let start = now()
        var elapsed = 0.0
        while elapsed < seconds {
            for _ in 0..<32 { sendOne() }
            for _ in 0..<32 {
                let n = buffer.withUnsafeMutableBytes { recv(b, $0.baseAddress, $0.count, 0) }
                if n > 0 { receiveOne(Array(buffer[0..<n])) }
            }
            elapsed = now() - start
        }
        return Double(receivedCount) / elapsed
    }
}
