#if canImport(Glibc)
import Glibc
#endif
import LVBCore

/// `--rtp-out`: the host's RTP packets, unchanged, to a local UDP port (video)
/// and the port two above it (audio), with an SDP file describing them
/// (RFC 8866; payload formats RFC 7741 and RFC 7587), so ffplay, ffmpeg,
/// GStreamer or VLC can play the room. Sends never block: a full socket
/// buffer drops the packet and counts it.
public final class RTPForwarder {
    private let socket: EgressSocket
    private let video: PeerAddress
    private let audio: PeerAddress
    public private(set) var sent = 0
    public private(set) var dropped = 0

    public init(target: PeerAddress) throws(MediaError) {
        video = target
        audio = PeerAddress(host: target.host, port: target.port + 2)
        socket = try EgressSocket(for: target, option: "--rtp-out")
    }

    public func forward(_ packet: RTPPacket, _ bytes: ArraySlice<UInt8>) {
        if socket.send(bytes, to: packet.payloadType == MediaConstants.videoPayloadType ? video : audio) { sent += 1 } else { dropped += 1 }
    }

    /// The SDP text for this target (both media, fixed payload types).
    public static func sdp(for target: PeerAddress) -> String {
        let (family, ip): (String, String) = switch target.host {
        case .v4: ("IP4", hostText(target))
        case .v6: ("IP6", hostText(target))
        }
        return """
            v=0
            o=- 0 0 IN \(family) \(ip)
            s=lvbnode live room
            c=IN \(family) \(ip)
            t=0 0
            m=video \(target.port) RTP/AVP \(MediaConstants.videoPayloadType)
            a=rtpmap:\(MediaConstants.videoPayloadType) VP8/90000
            a=recvonly
            m=audio \(target.port + 2) RTP/AVP \(MediaConstants.audioPayloadType)
            a=rtpmap:\(MediaConstants.audioPayloadType) opus/48000/2
            a=fmtp:\(MediaConstants.audioPayloadType) useinbandfec=1
            a=recvonly

            """
    }

    private static func hostText(_ a: PeerAddress) -> String {
        let d = a.description
        // PeerAddress prints IP:PORT or [IPv6]:PORT.
        guard let colon = d.lastIndex(of: ":") else { return d }
        return String(d[..<colon]).trimmingCharacters(in: "[]")
    }
}

private extension String {
    func trimmingCharacters(in set: String) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s = s.dropFirst() }
        while let l = s.last, set.contains(l) { s = s.dropLast() }
        return String(s)
    }
}

/// Calls `body` with `address` as a sockaddr.
func withSockaddr<T>(_ address: PeerAddress, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
    switch address.host {
    case .v4(let ip):
        var sa = sockaddr_in()
        sa.sin_family = sa_family_t(AF_INET)
        sa.sin_port = address.port.bigEndian
        sa.sin_addr = in_addr(s_addr: ip.bigEndian)
        return withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    case .v6(let bytes):
        var sa = sockaddr_in6()
        sa.sin6_family = sa_family_t(AF_INET6)
        sa.sin6_port = address.port.bigEndian
        withUnsafeMutableBytes(of: &sa.sin6_addr) { raw in
            for (i, b) in bytes.prefix(16).enumerated() { raw[i] = b }
        }
        return withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
    }
}

/// The socket of `--rtp-out` and `--egress`: one unconnected, non-blocking
/// UDP socket. `--egress` sends the stream and its sender reports to the
/// server's ports and takes the server's feedback, which comes back to the
/// address the reports came from (Janus latches onto it). Sends and reads
/// never block: a full buffer drops the datagram; `receive` drains what is queued.
public final class EgressSocket {
    private let fd: Int32
    /// One receive buffer, reused by every `receive` (called each tick).
    private var buffer = [UInt8](repeating: 0, count: 2048)

    /// `option`: the command-line option it serves, for the error line.
    public init(for target: PeerAddress, option: String = "--egress") throws(MediaError) {
        let family: Int32 = if case .v4 = target.host { AF_INET } else { AF_INET6 }
        fd = socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .file("\(option): cannot open a UDP socket (\(String(cString: strerror(errno))))") }
    }

    deinit { close(fd) }

    /// False when the socket refused it (a full buffer: dropped).
    public func send<Bytes: Collection<UInt8>>(_ bytes: Bytes, to address: PeerAddress) -> Bool {
        bytes.withContiguousStorageIfAvailable { b in
            withSockaddr(address) { sa, len in sendto(fd, b.baseAddress, b.count, Int32(MSG_DONTWAIT), sa, len) }
        }.map { $0 >= 0 } ?? send(Array(bytes), to: address)
    }

    /// Hands each queued datagram (at most `limit`) and its sender to `body`.
    public func receive(limit: Int = 64, _ body: (ArraySlice<UInt8>, PeerAddress) -> Void) {
        for _ in 0..<limit {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let n = buffer.withUnsafeMutableBytes { b in
                withUnsafeMutablePointer(to: &storage) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, b.baseAddress, b.count, Int32(MSG_DONTWAIT), $0, &length) }
                }
            }
            guard n >= 0 else { return }
            guard let from = Self.address(storage) else { continue }
            body(buffer[0..<n], from)
        }
    }

    private static func address(_ storage: sockaddr_storage) -> PeerAddress? {
        var storage = storage
        let family = Int32(storage.ss_family)
        return withUnsafePointer(to: &storage) { p -> PeerAddress? in
            switch family {
            case AF_INET:
                let a = p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }
                return PeerAddress(host: .v4(UInt32(bigEndian: a.sin_addr.s_addr)), port: UInt16(bigEndian: a.sin_port))
            case AF_INET6:
                let a = p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee }
                let bytes = withUnsafeBytes(of: a.sin6_addr) { Array($0) }
                return PeerAddress(host: .v6(bytes), port: UInt16(bigEndian: a.sin6_port))
            default:
                return nil
            }
        }
    }
}
