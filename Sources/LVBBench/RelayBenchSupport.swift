#if canImport(Glibc)
import Glibc
#endif
import LVBCore
import LVBCrypto
import LVBMedia
import LVBTransport
import NIOCore

// The parts of the relay benchmark (RelayBench.swift) that are not the relay:
// the parent's packet source, the plain forwarder, thread CPU time.

/// A VP8 RTP stream as the host's packetizer makes it (capture-time
/// extension, 4-byte descriptor with a 15-bit PictureID; frames of 8 packets,
/// a keyframe every 32 frames), each packet exactly `size` bytes: one template
/// with its sequence number, timestamp, marker, S bit and keyframe bit patched.
struct RTPSource {
    static let packetsPerFrame = 8, framesPerGOP = 32
    private var template: [UInt8]
    private var n = 0
    private let payloadOffset: Int

    init(size: Int) {
        var p = try! RTPPacket(payloadType: MediaConstants.videoPayloadType, sequenceNumber: 0, timestamp: 0, ssrc: 0xB0B0_0001,  // invariant: a constant header with an empty payload is always valid
                               payload: [][...])
        p.setCaptureTime(0x0123_4567_89AB_CDEF)
        let header = p.serialized().count
        let descriptor: [UInt8] = [0x90, 0x80, 0x80, 0x00]
        p.payload = (descriptor + [UInt8](repeating: 0x5A, count: size - header - descriptor.count))[...]
        template = p.serialized()
        payloadOffset = header
    }

    /// The next packet (valid until the next call).
    mutating func next() -> [UInt8] {
        let frame = n / Self.packetsPerFrame, index = n % Self.packetsPerFrame
        let seq = UInt16(truncatingIfNeeded: n), ts = UInt32(truncatingIfNeeded: frame &* 3000)
        template[1] = (index == Self.packetsPerFrame - 1 ? 0x80 : 0) | MediaConstants.videoPayloadType
        template[2] = UInt8(seq >> 8); template[3] = UInt8(seq & 0xFF)
        for i in 0..<4 { template[4 + i] = UInt8(truncatingIfNeeded: ts >> (24 - 8 * UInt32(i))) }
        template[payloadOffset] = index == 0 ? 0x90 : 0x80
        template[payloadOffset + 2] = 0x80 | UInt8((frame >> 8) & 0x7F)
        template[payloadOffset + 3] = UInt8(frame & 0xFF)
        template[payloadOffset + 4] = frame % Self.framesPerGOP == 0 ? 0x00 : 0x01  // VP8 P bit: 0 on keyframes
        n += 1
        return template
    }
}

/// The parent: sends the RTP stream as fast as its event loop can, in batches
/// of `batch` writes per flush (SwiftNIO writes a batch with one sendmmsg), so
/// that it outruns the forwarder it feeds. With a `TransportCore` the packets
/// go through its session (sealed); without, as they are. Used on its
/// channel's loop only (hence unchecked).
final class StreamSource: ChannelInboundHandler, DatagramSink, @unchecked Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    static let batch = 64
    var channel: Channel?
    let target: PeerAddress
    private let targetAddress: SocketAddress
    /// Sealed mode: the parent's session core and the relay's id.
    var core: TransportCore?
    var relay: NodeID?
    private(set) var sent = 0
    private var running = false
    private var rtp: RTPSource

    init(target: PeerAddress, packetSize: Int) throws {
        self.target = target
        targetAddress = try SocketAddress(ipAddress: "127.0.0.1", port: Int(target.port))
        rtp = RTPSource(size: packetSize)
    }

    /// The core's datagrams (handshake, sealed RTP) go out through the channel.
    func send(_ datagram: [UInt8], to address: PeerAddress) {
        guard let channel else { return }
        channel.write(AddressedEnvelope(remoteAddress: targetAddress, data: channel.allocator.buffer(bytes: datagram)), promise: nil)
    }

    /// What the relay sends back (the handshake response) goes to the core.
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data).data
        core?.receive(buffer.readBytes(length: buffer.readableBytes) ?? [], from: target)
    }

    func channelReadComplete(context: ChannelHandlerContext) { context.flush() }

    func errorCaught(context: ChannelHandlerContext, error: Error) {}

    func start() {
        running = true
        pump()
    }

    func stop() { running = false }

    /// One batch, then again after whatever else the loop has to do.
    private func pump() {
        guard running, let channel else { return }
        for _ in 0..<Self.batch {
            if let core, let relay {
                try? core.send(rtp.next(), channel: .rtp, to: relay)
            } else {
                send(rtp.next(), to: target)
            }
        }
        channel.flush()
        sent += Self.batch
        channel.eventLoop.execute { self.pump() }
    }
}

/// The reference: a plain UDP forwarder on the same driver (a SwiftNIO
/// datagram channel with the same vectored reads), no session: each datagram
/// received is written as it is to the child, flushed once per read batch.
/// Used on its channel's loop only (hence unchecked).
final class PlainForwarder: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>
    let child: SocketAddress
    var forwarded = 0

    init(child: SocketAddress) { self.child = child }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        forwarded += 1
        context.write(wrapOutboundOut(AddressedEnvelope(remoteAddress: child, data: envelope.data)), promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) { context.flush() }

    func errorCaught(context: ChannelHandlerContext, error: Error) {}
}

/// CPU seconds the calling thread has used.
func threadCPUSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// The address a socket from `udpSocket()` is bound to.
func peerAddress(_ a: sockaddr_in) -> PeerAddress {
    PeerAddress(host: .v4(UInt32(bigEndian: a.sin_addr.s_addr)), port: UInt16(bigEndian: a.sin_port))
}

func sockaddrIn(_ a: PeerAddress) -> sockaddr_in {
    var s = sockaddr_in()
    s.sin_family = sa_family_t(AF_INET)
    if case .v4(let ip) = a.host { s.sin_addr.s_addr = ip.bigEndian }
    s.sin_port = a.port.bigEndian
    return s
}
