import FuzzSupport
import FuzzWorld
import LVBCore
import LVBCrypto
import LVBTransport

// The whole network input path: `TransportCore.receive` must count and drop
// anything malformed, forged or replayed, never trap, and never answer an
// unauthenticated datagram with more bytes than it carried. The first input
// byte picks a `DeliveryMode`, so inputs also reach the decrypt path, the
// channel demux and the Noise responder, not only the outer parser.

/// Set up on the first input; rebuilt if an input ends the session (a fuzzed bye).
private var world: World?

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    if world == nil || world?.isSessionUp == false { world = World() }
    guard let w = world else {
        fuzzCheck(false, "FuzzReceive", "the session between the two virtual nodes did not come up")
        return 0
    }
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    _ = w.takeReplies()

    var sentByAttacker = 0
    switch DeliveryMode(selector: input.first) {
    case .raw:
        w.core.receive(input, from: World.attackerAddress)
        sentByAttacker = input.count
    case .liveHeaderFromAttacker:
        let datagram = withLiveHeader(input, w)
        w.core.receive(datagram, from: World.attackerAddress)
        sentByAttacker = datagram.count
    case .liveHeaderFromPeer:
        w.core.receive(withLiveHeader(input, w), from: w.peerEndpoint.address)
    case .sealedByPeer:
        let channel = DataChannel(rawValue: (input.count > 1 ? input[1] : 0) & 3) ?? .control
        let payload = Array(input.dropFirst(2).prefix(MessageSize.maxTransportPlaintext - 1))
        do { try w.peer.send(payload, channel: channel, to: w.core.nodeID) } catch {
            fuzzCheck(false, "FuzzReceive", "the peer could not send \(payload.count) bytes: \(error)")
        }
    case .handshake(let type):
        let datagram = handshake(type, from: input, w)
        w.core.receive(datagram, from: World.attackerAddress)
        sentByAttacker = datagram.count
    }
    w.settle()

    // No amplification: an unauthenticated sender gets back at most what it sent.
    let replied = w.takeReplies().reduce(0) { $0 + $1.count }
    fuzzCheck(replied <= sentByAttacker, "FuzzReceive", "answered \(sentByAttacker) unauthenticated bytes with \(replied)")
    return 0
}

/// `input` with bytes 0..<8 replaced by a transport header for the live index
/// (inputs shorter than 16 bytes are left alone).
private func withLiveHeader(_ input: [UInt8], _ w: World) -> [UInt8] {
    guard input.count >= 16 else { return input }
    var d = input
    d[0] = PacketType.transport.rawValue
    d[1] = 0; d[2] = 0; d[3] = 0
    World.putUInt32LE(w.liveIndex, into: &d, at: 4)
    return d
}

/// A `type` message of the exact size the type needs, its body taken from
/// `input` (zero-padded), with valid MACs for the core.
private func handshake(_ type: PacketType, from input: [UInt8], _ w: World) -> [UInt8] {
    let size = switch type {
    case .ikInitiation: MessageSize.ikInitiation
    case .xxInitiation: MessageSize.xxInitiation
    default: MessageSize.xxFinal
    }
    var d = [UInt8](repeating: 0, count: size)
    d[0] = type.rawValue
    let body = input.dropFirst().prefix(size - MessageSize.header - MessageSize.macs)
    d.replaceSubrange(MessageSize.header..<(MessageSize.header + body.count), with: body)
    if type == .xxFinal, let index = w.lastXXResponseIndex, input.count > 1, input[1] & 1 == 0 {
        World.putUInt32LE(index, into: &d, at: 4)   // answer the core's last XX response
    }
    (type == .xxInitiation ? w.anonymousMACs : w.ownMACs).addMACs(&d)
    return d
}

@main enum Main {
    static func main() { runLibFuzzer(fuzz) }
}
