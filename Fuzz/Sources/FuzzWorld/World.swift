import LVBCore
import LVBCrypto
import LVBTestSupport
import LVBTransport

/// The node under attack: a `TransportCore` with a fixed identity and an
/// established session to a peer, on a virtual network whose clock never moves
/// (so keys never expire and runs are repeatable). An attacker endpoint sends
/// the fuzz input and collects whatever the core answers.
public final class World {
    public static let attackerAddress = PeerAddress.ipv4(203, 0, 113, 7, port: 4444)

    public let net: VirtualNetwork
    public let core: TransportCore
    public let peer: TransportCore
    public let coreEndpoint: VirtualEndpoint
    public let peerEndpoint: VirtualEndpoint
    public let attacker: VirtualEndpoint
    /// The core's receiver index for the session's current keys.
    public private(set) var liveIndex: UInt32 = 0
    /// Datagrams the core sent to the attacker, since the last `takeReplies`.
    private var replies: [[UInt8]] = []
    /// Sender index of the last XX response the core sent to the attacker.
    public private(set) var lastXXResponseIndex: UInt32?
    /// mac1/mac2 for messages to the core's static key, and to any XX responder;
    /// they learn cookies from the core's cookie replies, as a real initiator would.
    public let ownMACs: CookieGenerator
    public let anonymousMACs: CookieGenerator

    /// Builds the two nodes and their session; nil if the session does not come up.
    public init?() {
        let net = VirtualNetwork(seed: 0x5EED)
        // invariant: any 32 bytes are a valid Ed25519 seed
        guard let coreID = try? Identity(seed: [UInt8](repeating: 0xA1, count: 32)),
              let peerID = try? Identity(seed: [UInt8](repeating: 0xB2, count: 32))
        else { return nil }
        coreEndpoint = net.makeEndpoint()
        peerEndpoint = net.makeEndpoint()
        attacker = net.makeEndpoint(address: World.attackerAddress)
        core = TransportCore(identity: coreID, clock: net.clock, random: SeededRandom(seed: 1), sink: coreEndpoint)
        peer = TransportCore(identity: peerID, clock: net.clock, random: SeededRandom(seed: 2), sink: peerEndpoint)
        ownMACs = CookieGenerator(keyMaterial: coreID.nodeID.noiseStaticKey, clock: net.clock)
        anonymousMACs = CookieGenerator(keyMaterial: MacKeyMaterial.anonymous, clock: net.clock)
        self.net = net

        coreEndpoint.onReceive = { [unowned self] datagram, from in
            if from == peerEndpoint.address, datagram.count >= MessageSize.transportOverhead,
               datagram[0] == PacketType.transport.rawValue {
                liveIndex = World.uint32LE(datagram, at: 4)
            }
            core.receive(datagram, from: from)
        }
        peerEndpoint.onReceive = { [unowned self] datagram, from in peer.receive(datagram, from: from) }
        attacker.onReceive = { [unowned self] datagram, _ in attackerReceived(datagram) }

        peer.connect(to: coreEndpoint.address, expecting: core.nodeID)
        let up = net.run(until: { [unowned self] in isSessionUp }, timeout: .seconds(1))
        guard up, (try? peer.send([0], channel: .gossip, to: core.nodeID)) != nil else { return nil }
        settle()
        guard liveIndex != 0 else { return nil }
    }

    public var isSessionUp: Bool { core.isEstablished(with: peer.nodeID) && peer.isEstablished(with: core.nodeID) }

    /// Delivers everything in flight (zero delay: the clock stays put).
    public func settle() { net.run(for: .zero) }

    /// What the core sent to the attacker since the last call.
    public func takeReplies() -> [[UInt8]] {
        defer { replies.removeAll(keepingCapacity: true) }
        return replies
    }

    private func attackerReceived(_ datagram: [UInt8]) {
        replies.append(datagram)
        guard let packet = try? Packet.parse(datagram[...]) else { return }
        switch packet {
        case .cookieReply(let c):
            // Only the generator whose last mac1 the reply answers accepts it.
            if !ownMACs.consumeReply(nonce: c.nonce, sealed: c.sealed) {
                _ = anonymousMACs.consumeReply(nonce: c.nonce, sealed: c.sealed)
            }
        case .handshake(let h) where h.type == .xxResponse:
            lastXXResponseIndex = h.senderIndex
        default:
            break
        }
    }

    public static func uint32LE(_ b: [UInt8], at i: Int) -> UInt32 {
        UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
    }

    public static func putUInt32LE(_ v: UInt32, into b: inout [UInt8], at i: Int) {
        for k in 0..<4 { b[i + k] = UInt8(truncatingIfNeeded: v >> (8 * UInt32(k))) }
    }
}
