import LVBCore
import LVBCrypto

/// One direction-pair of session keys from one handshake, with its counters,
/// replay window and indices (wireguard-go's Keypair).
final class Keypair {
    let sendKey: SymmetricKey
    let receiveKey: SymmetricKey
    let created: Instant
    /// True when this side sent the handshake's first message.
    let isInitiator: Bool
    let localIndex: UInt32
    let remoteIndex: UInt32
    private(set) var sendCounter: UInt64 = 0
    /// Set once a packet under these keys has authenticated: the peer has them.
    var receivedAny = false
    /// The Noise handshake hash of the handshake that made these keys: both
    /// sides share it, and nobody else can (channel binding for proofs).
    var handshakeHash: [UInt8] = []
    private var replay = ReplayWindow()

    init(send: [UInt8], receive: [UInt8], created: Instant, isInitiator: Bool, localIndex: UInt32, remoteIndex: UInt32) {
        sendKey = SymmetricKey(send)
        receiveKey = SymmetricKey(receive)
        self.created = created
        self.isInitiator = isInitiator
        self.localIndex = localIndex
        self.remoteIndex = remoteIndex
    }

    /// Wipes both keys; called when the keypair is retired.
    func zero() {
        sendKey.zero()
        receiveKey.zero()
    }

    func isExpired(now: Instant) -> Bool {
        now - created >= TransportConstants.rejectAfterTime
    }

    /// The size of the transport datagram carrying `payload` on `channel`
    /// (nil: a keepalive, no plaintext at all).
    static func sealedCount(channel: DataChannel?, payload: ArraySlice<UInt8>) -> Int {
        MessageSize.transportOverhead + (channel == nil ? 0 : 1 + payload.count)
    }

    /// Takes the next send counter; nil once the counters are exhausted.
    func takeCounter() -> UInt64? {
        guard sendCounter < TransportConstants.rejectAfterMessages else { return nil }
        defer { sendCounter += 1 }
        return sendCounter
    }

    /// Writes the transport datagram carrying `payload` under `counter` (from
    /// `takeCounter`) into `b`, exactly `sealedCount` bytes, sealed in place:
    /// libsodium allows the ciphertext to overwrite the plaintext.
    func seal(counter: UInt64, channel: DataChannel?, payload: ArraySlice<UInt8>, into b: UnsafeMutableRawBufferPointer) {
        let h = MessageSize.transportHeader
        let plainCount = Self.sealedCount(channel: channel, payload: payload) - MessageSize.transportOverhead
        b.storeBytes(of: UInt32(PacketType.transport.rawValue).littleEndian, toByteOffset: 0, as: UInt32.self)  // type, reserved zeros
        b.storeBytes(of: remoteIndex.littleEndian, toByteOffset: 4, as: UInt32.self)
        b.storeBytes(of: counter.littleEndian, toByteOffset: 8, as: UInt64.self)
        if let channel {
            b[h] = channel.rawValue
            payload.withUnsafeBytes { p in
                if p.count > 0 { UnsafeMutableRawBufferPointer(rebasing: b[(h + 1)...]).copyMemory(from: p) }
            }
        }
        let region = UnsafeMutableRawBufferPointer(rebasing: b[h..<(h + plainCount + ChaChaPoly.tagLength)])
        _ = sendKey.seal(counter: counter, plaintext: UnsafeRawBufferPointer(rebasing: region[..<plainCount]), into: region)
    }

    /// A complete transport datagram carrying `plaintext` (channel byte first,
    /// or empty for a keepalive); nil once the counter is exhausted.
    func seal(channel: DataChannel?, payload: ArraySlice<UInt8>) -> [UInt8]? {
        guard let counter = takeCounter() else { return nil }
        var out = [UInt8](repeating: 0, count: Self.sealedCount(channel: channel, payload: payload))
        out.withUnsafeMutableBytes { seal(counter: counter, channel: channel, payload: payload, into: $0) }
        return out
    }

    enum OpenResult {
        case opened(Range<Int>)
        case badTag
        case replayed
    }

    /// Verifies and decrypts `packet` in place inside `datagram`. The replay
    /// window moves only after the tag has verified.
    func open(_ packet: TransportPacket, in datagram: inout [UInt8]) -> OpenResult {
        let start = packet.sealed.lowerBound
        let count = packet.sealed.count
        let opened: Int? = datagram.withUnsafeMutableBytes { b in
            let region = UnsafeMutableRawBufferPointer(rebasing: b[start..<start + count])
            return receiveKey.open(counter: packet.counter, ciphertext: UnsafeRawBufferPointer(region), into: region)
        }
        guard let n = opened else { return .badTag }
        guard replay.accept(packet.counter, limit: TransportConstants.rejectAfterMessages) else { return .replayed }
        return .opened(start..<start + n)
    }
}
