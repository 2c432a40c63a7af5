import FuzzSupport
import LVBCore
import LVBCrypto
import LVBTransport

// Every parser a datagram reaches before (and right after) authentication:
// the outer packet layout, the control channel, and the handshake payloads.
// Parsers must reject bad input with an error, never trap; what they accept
// must re-encode to the same bytes.

/// A fixed, valid identity whose Noise key the handshake payloads are checked against.
private let knownStatic: [UInt8] = {
    var seed = [UInt8](repeating: 0, count: 32)
    seed[0] = 1
    // invariant: any 32 bytes are a valid Ed25519 seed
    return (try? Identity(seed: seed))?.nodeID.noiseStaticKey ?? []
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))

    if let packet = try? Packet.parse(bytes[...]) {
        switch packet {
        case .handshake(let h):
            fuzzCheck(h.raw.count == size, "FuzzPacket", "handshake raw is not the whole datagram")
            fuzzCheck(h.noise.count + MessageSize.macs <= size, "FuzzPacket", "noise overlaps the macs")
        case .transport(let t):
            fuzzCheck(size >= MessageSize.transportOverhead, "FuzzPacket", "short transport accepted")
            fuzzCheck(t.sealed.count == size - MessageSize.transportHeader, "FuzzPacket", "sealed part has the wrong length")
        case .cookieReply(let c):
            fuzzCheck(size == MessageSize.cookieReply, "FuzzPacket", "cookie reply size")
            fuzzCheck(c.nonce.count == cookieNonceLength && c.sealed.count == encryptedCookieLength, "FuzzPacket", "cookie fields")
        case .unknownSession(let index):
            fuzzCheck(Packet.unknownSession(index: index) == bytes, "FuzzPacket", "unknown-session packet does not re-encode to its input")
        }
    }

    // The control channel sees decrypted payloads: channel byte stripped.
    if let message = try? ControlMessage.parse(bytes[...]) {
        fuzzCheck(message.bytes == bytes, "FuzzPacket", "control message \(message) does not re-encode to its input")
    }
    // So does the introduce channel.
    if let message = try? IntroductionMessage.parse(bytes[...]) {
        fuzzCheck(message.encoded == bytes, "FuzzPacket", "introduce message \(message) does not re-encode to its input")
    }

    if let (id, timestamp) = try? HandshakePayload.parseInitiator(bytes, remoteStatic: knownStatic) {
        fuzzCheck(id.noiseStaticKey == knownStatic, "FuzzPacket", "initiator identity not bound to the static key")
        fuzzCheck(HandshakePayload.initiator(id: id, timestamp: timestamp) == bytes, "FuzzPacket", "initiator payload round trip")
    }
    _ = try? HandshakePayload.parseInitiator(bytes, remoteStatic: nil)
    if let id = try? HandshakePayload.parseResponder(bytes, remoteStatic: knownStatic) {
        fuzzCheck(id.publicKey == bytes, "FuzzPacket", "responder payload round trip")
    }
    _ = try? HandshakePayload.parseResponder(bytes, remoteStatic: nil)
    return 0
}

@main enum Main {
    static func main() { runLibFuzzer(fuzz) }
}
