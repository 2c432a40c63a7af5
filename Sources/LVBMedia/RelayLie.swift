import LVBCore
import LVBCrypto

/// How a lying relay lies (`lvbnode --lie`, for tests of what its children do).
public enum RelayLieMode: String, CaseIterable, Sendable {
    /// Flips bits in the last payload byte of every video frame and of every fifth audio packet.
    case alter
    /// Sends, before each of the host's frames, a keyframe of its own
    /// (solid magenta, the stream's size), sealed with its own key.
    case inject
    /// Sends, in place of each of the host's frames, the frame of two
    /// seconds before, renumbered and retimed as the current one, its seal kept.
    case replay
    /// Drops the seal from every packet that carries one.
    case strip
}

/// A relay that lies to its children — a test aid only: what it relays
/// is rewritten before it reaches the relay stage (so its send history
/// and GOP cache hold the same lies), while its own receiver gets the truth.
/// No honest node runs one; `lvbnode --lie MODE` makes a process that
/// does, so tests can show that no child shows one forged picture.
public final class RelayLie {
    public let mode: RelayLieMode
    /// It also tells its children, as often as an honest relay may, that its
    /// own parent lied to it (`RelayTree` sends them): excuses it has none for.
    public let excuses: Bool
    /// It relays the truth this long after its first packet, then lies
    /// (children that have watched the true stream know its SSRCs and NACK).
    public let after: Duration
    private var firstPacket: Instant?
    /// Packets rewritten, dropped or made up.
    public private(set) var lies = 0 {
        didSet { if firstLie == nil { firstLie = lastNow } }
    }
    /// When the first lie went out.
    public private(set) var firstLie: Instant?
    private var lastNow: Instant?

    private let identity: Identity
    private var audioCount = 0
    /// inject: its own keyframe (made at the first keyframe's size).
    private var own: [UInt8]?
    private var packetizer = try? VP8Packetizer(maxPayloadSize: 1100, firstPacketReserve: MediaSeal.firstPacketReserve)
    /// replay: the frame being gathered, and complete frames of the last seconds.
    private var current: [RTPPacket] = []
    private var past: [(at: Instant, packets: [RTPPacket])] = []

    public init(mode: RelayLieMode, identity: Identity, excuses: Bool = false, after: Duration = .zero) {
        self.mode = mode
        self.excuses = excuses
        self.after = after
        self.identity = identity
    }

    /// What the relay forwards instead of `packet` (nothing, itself, or others).
    public func rewrite(_ packet: RTPPacket, now: Instant) -> [RTPPacket] {
        lastNow = now
        let start = firstPacket ?? now
        firstPacket = start
        guard now - start >= after else { return [packet] }
        let video = packet.payloadType == MediaConstants.videoPayloadType
        switch mode {
        case .alter:
            if !video { audioCount += 1 }
            guard video ? packet.marker : audioCount % 5 == 0, !packet.payload.isEmpty else { return [packet] }
            var p = packet
            var bytes = Array(p.payload)
            bytes[bytes.count - 1] ^= 0x5A
            p.payload = bytes[...]
            lies += 1
            return [p]
        case .strip:
            guard (try? MediaSeal.of(packet)) ?? nil != nil else { return [packet] }
            var p = packet
            p.removeExtension(id: MediaSeal.videoID)
            p.removeExtension(id: MediaSeal.audioID)
            lies += 1
            return [p]
        case .inject:
            guard video, VP8PayloadDescriptor.startsFrame(packet.payload), let frame = ownKeyframe(like: packet) else { return [packet] }
            var seq = packet.sequenceNumber
            guard var made = try? packetizer?.rtpPackets(frame, timestamp: packet.timestamp &- 1, ssrc: packet.ssrc,
                                                         sequence: &seq, captureTime: packet.captureTime ?? 0) else { return [packet] }
            var sealer = StreamSealer(scope: [], sign: { [identity] in identity.sign($0) })
            sealer.seal(frame: &made)
            lies += made.count
            return made + [packet]
        case .replay:
            guard video else { return [packet] }
            if VP8PayloadDescriptor.startsFrame(packet.payload) { current = [] }
            current.append(packet)
            guard packet.marker else { return [] }
            let frame = current
            current = []
            past.append((now, frame))
            past.removeAll { now - $0.at > .seconds(3) }
            guard let old = past.first(where: { now - $0.at >= .seconds(2) })?.packets else { return frame }
            lies += old.count
            return old.enumerated().map { i, p in
                var q = p
                q.sequenceNumber = frame[0].sequenceNumber &+ UInt16(truncatingIfNeeded: i)
                q.timestamp = frame[0].timestamp
                q.marker = i == old.count - 1
                return q
            }
        }
    }

    /// A solid magenta keyframe at the size of the host's keyframes (RFC 6386
    /// §9.1: 14-bit width and height after the start code), made once.
    private func ownKeyframe(like packet: RTPPacket) -> [UInt8]? {
        if let own { return own }
        guard let (_, data) = try? VP8PayloadDescriptor.parse(packet.payload), data.count >= 10,
              data[data.startIndex] & 1 == 0 else { return nil }
        let d = Array(data.prefix(10))
        let width = (Int(d[6]) | Int(d[7]) << 8) & 0x3FFF, height = (Int(d[8]) | Int(d[9]) << 8) & 0x3FFF
        guard let encoder = try? VP8Encoder(width: width, height: height, fps: 30, bitrateKbps: 500, keyframeInterval: 1),
              var picture = try? I420Frame(width: width, height: height) else { return nil }
        // Magenta: Y 105, U 212, V 234 (BT.601).
        picture.y = [UInt8](repeating: 105, count: picture.y.count)
        picture.u = [UInt8](repeating: 212, count: picture.u.count)
        picture.v = [UInt8](repeating: 234, count: picture.v.count)
        own = (try? encoder.encode(picture, pts: 0, forceKeyframe: true))?.first?.data
        return own
    }
}

/// What a relaying node hands each packet of the stream it relays: the
/// relay stage itself, or a lie in front of it (`LyingRelay`).
public protocol RelayInput: AnyObject {
    func receiveRTP(_ packet: RTPPacket, bytes: ArraySlice<UInt8>)
}

extension MediaRelay: RelayInput {}

/// A relay stage with a lie in front of it (`lvbnode --lie`): every packet
/// is rewritten before the stage sees it, so its send history and GOP
/// cache hold the same lies. Built in when the node relays, so an honest
/// node's per-packet path has no branch for it.
public final class LyingRelay<Peer: Hashable>: RelayInput {
    public let lie: RelayLie
    private let relay: MediaRelay<Peer>
    private let clock: Clock

    public init(_ lie: RelayLie, in relay: MediaRelay<Peer>, clock: Clock) {
        self.lie = lie
        self.relay = relay
        self.clock = clock
    }

    public func receiveRTP(_ packet: RTPPacket, bytes: ArraySlice<UInt8>) {
        for p in lie.rewrite(packet, now: clock.now()) { relay.receiveRTP(p, bytes: p.serialized()[...]) }
    }
}
