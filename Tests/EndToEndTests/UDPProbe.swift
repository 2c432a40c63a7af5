import Foundation
import LVBCore
import LVBCrypto
import LVBTransport

/// A plain UDP socket on 127.0.0.1 that sends datagrams a test crafted and
/// collects what comes back, so a test can talk to the binary like a second
/// implementation would (or an attacker).
final class UDPProbe {
    let fd: Int32
    let port: UInt16

    /// Bound to 127.0.0.1:`port` (0: any free port).
    init(port requested: UInt16 = 0) throws {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw ProbeError("socket: \(String(cString: strerror(errno)))") }
        var address = Self.loopback(port: requested)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { close(fd); throw ProbeError("bind: \(String(cString: strerror(errno)))") }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var local = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.fd = fd
        port = UInt16(bigEndian: local.sin_port)
    }

    deinit { close(fd) }

    static func loopback(port: UInt16) -> sockaddr_in {
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = port.bigEndian
        a.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return a
    }

    func send(_ datagram: [UInt8], toPort port: UInt16) {
        var to = Self.loopback(port: port)
        _ = datagram.withUnsafeBytes { bytes in
            withUnsafePointer(to: &to) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, bytes.baseAddress, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }

    /// Every datagram waiting on the socket now.
    func drain() -> [[UInt8]] {
        var out: [[UInt8]] = []
        var buffer = [UInt8](repeating: 0, count: 2048)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return out }
            out.append(Array(buffer[0..<n]))
        }
    }

    /// Waits up to `timeout` seconds for one datagram; with the port it came from.
    func receiveFrom(timeout: Double) -> (bytes: [UInt8], port: UInt16)? {
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 2048)
        while Date() < deadline {
            var from = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let n = buffer.withUnsafeMutableBytes { b in
                withUnsafeMutablePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, b.baseAddress, b.count, 0, $0, &length) }
                }
            }
            if n > 0 { return (Array(buffer[0..<n]), UInt16(bigEndian: from.sin_port)) }
            Thread.sleep(forTimeInterval: 0.002)
        }
        return nil
    }

    /// Waits up to `timeout` seconds for one datagram.
    func receive(timeout: Double) -> [UInt8]? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let d = drain().first { return d }
            Thread.sleep(forTimeInterval: 0.005)
        }
        return nil
    }
}

struct ProbeError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// A node made with the project's own transport code whose datagrams are
/// kept, for a test to send through a `UDPProbe`, instead of sent: the
/// first one after `connect` is a valid initiation.
final class CraftedNode {
    final class Capture: DatagramSink {
        var sent: [[UInt8]] = []
        func send(_ datagram: [UInt8], to address: PeerAddress) { sent.append(datagram) }
    }
    let capture = Capture()
    let core: TransportCore

    init(identity: Identity = Identity.generate()) {
        core = TransportCore(identity: identity, clock: SystemClock.shared, random: SodiumRandom.shared, sink: capture)
    }

    /// Datagrams made since the last call.
    func take() -> [[UInt8]] {
        defer { capture.sent.removeAll() }
        return capture.sent
    }

    /// A fresh IK initiation, from a new identity, to `host` at 127.0.0.1:`port`.
    static func ikInitiation(to host: NodeID, port: UInt16) -> [UInt8] {
        let node = CraftedNode()
        node.core.connect(to: .ipv4(127, 0, 0, 1, port: port), expecting: host)
        return node.take()[0]
    }
}

/// The little-endian 32-bit index at `offset` of a handshake datagram.
func index(at offset: Int, of datagram: [UInt8]) -> UInt32 {
    (0..<4).reduce(UInt32(0)) { $0 | UInt32(datagram[offset + $1]) << (8 * UInt32($1)) }
}
