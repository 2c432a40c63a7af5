import FuzzSupport
import LVBCore
import LVBCrypto
import LVBGossip
import LVBRoom
import LVBTestSupport

// Gossip payloads arrive from any neighbour of a room's overlay, already
// authenticated by the session but otherwise untrusted. Each input is:
//
// 1. Parsed as a `GossipMessage`: rejected with an error or accepted without
//    trapping; what is accepted re-encodes to exactly the input (one encoding
//    per message, and the encoder writes what the parser reads).
// 2. Fed to one live `GossipNode` via `receive(_:from:)`, from one of four
//    fixed peers (three neighbours and a stranger, picked by the input's
//    length). The node is built once, so views, stored events and missing ids
//    carry over from input to input; after each input the clock advances one
//    tick and the node ticks. It must never trap, and everything it sends must
//    parse, re-encode to the same bytes and fit `GossipConstants.maxPayload`.
// 3. If it is an EVENT long enough to hold a header and a signature, fed again
//    with the author replaced by a fixed identity and signed by it, so events
//    with fuzzed sequence numbers and bodies get past the signature check into
//    the store, the judge and the repair paths (GRAFT and digest answers).
//
// MakeCorpus writes seeds that use the same fixed identities and room.

/// Seeds of the fixed identities (MakeCorpus uses the same): the node, its peers, the re-signer.
enum Fixed {
    static let nodeSeed: UInt8 = 0x40
    static let peerSeeds: [UInt8] = [0x41, 0x42, 0x43, 0x44]
    static let signerSeed: UInt8 = 0x45
    static let roomByte: UInt8 = 0x47

    static func identity(_ n: UInt8) -> Identity? { try? Identity(seed: [UInt8](repeating: n, count: 32)) }
}

/// Records nothing but counts; checks every payload the node sends.
final class CheckingTransport: GossipTransport {
    var addresses: [NodeID: PeerAddress] = [:]
    var sent = 0

    func sendGossip(_ payload: [UInt8], to id: NodeID) {
        sent += 1
        fuzzCheck(payload.count <= GossipConstants.maxPayload, "FuzzGossip", "sent \(payload.count) bytes > maxPayload")
        guard let m = try? GossipMessage.parse(payload[...]) else {
            fuzzCheck(false, "FuzzGossip", "sent a payload that does not parse: \(Hex.encode(payload.prefix(80)))")
            return
        }
        fuzzCheck(m.bytes == payload, "FuzzGossip", "sent a payload that does not re-encode: \(m)")
    }

    func connect(to peer: PeerRecord) { addresses[peer.id] = peer.address }
    func address(of id: NodeID) -> PeerAddress? { addresses[id] }
    func isConnected(_ id: NodeID) -> Bool { addresses[id] != nil }
}

/// The node under test and what it needs, set up on the first input.
final class Harness {
    let clock = ManualClock()
    let transport = CheckingTransport()
    let node: GossipNode
    let peers: [NodeID]
    let signer: Identity
    let room: [UInt8]
    /// The last few accepted events, offered as history to joiners.
    var recent: [RoomEvent] = []

    init?() {
        guard let me = Fixed.identity(Fixed.nodeSeed), let signer = Fixed.identity(Fixed.signerSeed),
              let room = try? RoomID(bytes: [UInt8](repeating: Fixed.roomByte, count: 16)) else { return nil }
        let peers = Fixed.peerSeeds.compactMap { Fixed.identity($0)?.nodeID }
        guard peers.count == Fixed.peerSeeds.count else { return nil }
        self.peers = peers
        self.signer = signer
        self.room = room.bytes
        node = GossipNode(id: me.nodeID, transport: transport, kinds: RoomEvents.table, clock: clock, random: SeededRandom(seed: 0x6055))
        for (i, p) in peers.enumerated() {
            transport.addresses[p] = .ipv4(10, 0, 0, UInt8(i + 1), port: 7400)
        }
        // A judge with every verdict: other rooms are rejected, likes are
        // duplicates (as a like total not above the author's would be).
        node.accept = { [unowned self] e, _ in
            guard e.room.bytes == self.room else { return .reject }
            if e.body.kind == .like { return .duplicate }
            recent.append(e)
            if recent.count > 4 { recent.removeFirst() }
            return .accept
        }
        node.history = { [unowned self] in recent }
        // Neighbours 0…2 (0 is the contact); peer 3 stays a stranger.
        node.join(via: PeerRecord(id: peers[0], address: .ipv4(10, 0, 0, 1, port: 7400)))
        for p in peers[1...2] { node.receive(GossipMessage.neighbor(high: true).bytes[...], from: p) }
        // Events of its own, so GRAFTs and digests have something to be answered with.
        for seq in 1...3 as ClosedRange<UInt64> {
            guard let e = try? RoomEvent.make(room: room, author: me, seq: seq, timestamp: 1_700_000_000_000 + seq,
                                              body: .chat(text: "own \(seq)")) else { return nil }
            node.broadcast(e)
        }
    }

    func feed(_ payload: [UInt8], from peer: NodeID) {
        node.receive(payload[...], from: peer)
        clock.advance(by: GossipConstants.tickInterval)
        node.tick()
    }

    /// `event` with the author replaced by `signer` and signed by it, if it can hold both.
    func resigned(_ event: ArraySlice<UInt8>) -> [UInt8]? {
        let header = 1 + 16 + 32 + 8 + 8 + 1 + 2, signature = 64
        guard event.count >= header + signature else { return nil }
        var bytes = Array(event)
        bytes.replaceSubrange(17..<49, with: signer.nodeID.publicKey)
        let signed = Array(bytes.dropLast(signature))
        return signed + signer.sign(Array("lvbnode room event v1".utf8) + [0] + signed)
    }
}

private var harness: Harness?

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    if harness == nil { harness = Harness() }
    guard let h = harness else {
        fuzzCheck(false, "FuzzGossip", "the fixed identities, room or node could not be set up")
        return 0
    }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))

    let message = try? GossipMessage.parse(bytes[...])
    if let message {
        fuzzCheck(message.bytes == bytes, "FuzzGossip", "accepted \(message) does not re-encode to its input")
    }

    let peer = h.peers[bytes.count % h.peers.count]
    h.feed(bytes, from: peer)
    if case let .event(event)? = message, let resigned = h.resigned(event) {
        h.feed(GossipMessage.event(resigned[...]).bytes, from: peer)
    }
    return 0
}

@main enum Main {
    static func main() { runLibFuzzer(fuzz) }
}
