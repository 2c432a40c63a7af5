import LVBCore
import LVBCrypto

/// A message on the introduce channel (channel 6; lvbnode-protocol(7),
/// INTRODUCTIONS): any node brings two of its peers together, the way a
/// rendezvous introduces a joiner to a host, and may relay their sealed
/// datagrams when they cannot reach each other. One type byte, then:
///
///     1 request       request (4) ‖ peer (32) ‖ count (1) ‖ address…
///                     A → C: introduce me to `peer`; my own addresses
///     2 introduction  request (4) ‖ peer (32) ‖ flags (1) ‖ count (1) ‖ address…
///                     C → A (its request echoed) and C → B (request 0):
///                     dial `peer` now, there; flag 1: C relays the pair;
///                     flag 2: dial again even if you hold a session (the
///                     other side moved); flag 4: the first address is
///                     where C sees `peer` (C's session with it runs
///                     straight over IP, not a relay), the rest what
///                     `peer` claimed; without it every address is a
///                     claim (a LAN's, a global IPv6 one), never a
///                     target for birthday punching; flag 8 (with flag 2):
///                     nobody moved, the pair's session runs over a relay:
///                     punch its direct paths again beside it (`punch`).
///                     No addresses: C holds no session
///                     with `peer`. Naming A itself, in answer to A's
///                     request naming A: where C sees A (its reflexive address).
///     3 relay         peer (32) ‖ id (2) ‖ part (1) ‖ piece      A → C
///     4 relayed       peer (32) ‖ id (2) ‖ part (1) ‖ piece      C → B
///     5 again         request (4) ‖ peer (32) ‖ count (1) ‖ address…
///                     A → C: as request, for a peer A holds a session
///                     with that no longer reaches it (A's address
///                     changed): C tells both sides with flag 2.
///     7 punch         request (4) ‖ peer (32) ‖ count (1) ‖ address…
///                     A → C: as again, for a session with `peer` that A
///                     needs and that runs over a relay; nobody moved: C
///                     tells both sides with flags 2 and 8, and both punch
///                     the direct paths while the session stays on the
///                     relay (Tailscale's CallMeMaybe does the same over DERP).
///     6 birthday      step (1) ‖ count (2) [‖ port (2), accept only]
///                     birthday punching over a relayed session (`Birthday`):
///                     0 offer   B → A: B's NAT is hard; it would open
///                               `count` spare sockets
///                     1 accept  A → B: A will send `count` probes to
///                               random ports of B's outside IPv4 address,
///                               from `port` of A's outside address (0:
///                               from where B was told A is)
///                     2 decline A → B, count 0: A cannot (its NAT is
///                               hard too) or B offered too soon
///                     3 busy    A → B, count 0: A probes for others now;
///                               offer again in 2 s
///                     4 ready   B → A: `count` spares are open, each sent
///                               a hop-limited datagram to A's outside
///                               address: probe now
///
/// An address is family (1: 4 or 6) ‖ address (4 or 16) ‖ port (2); at
/// most `maxAddresses`. `part` is index << 4 | count (`RelayPiece`).
public enum IntroductionMessage: Equatable, Sendable {
    case request(request: UInt32, peer: NodeID, addresses: [PeerAddress])
    case introduction(request: UInt32, peer: NodeID, relay: Bool, again: Bool = false, seen: Bool = false, stay: Bool = false,
                      addresses: [PeerAddress])
    case relay(peer: NodeID, piece: RelayPiece)
    case relayed(peer: NodeID, piece: RelayPiece)
    case again(request: UInt32, peer: NodeID, addresses: [PeerAddress])
    case punch(request: UInt32, peer: NodeID, addresses: [PeerAddress])
    case birthday(step: BirthdayStep, count: UInt16, port: UInt16 = 0)

    public enum Kind: UInt8, Sendable {
        case request = 1, introduction, relay, relayed, again, birthday, punch
    }

    /// The introduction's flags.
    static let relayFlag: UInt8 = 1, againFlag: UInt8 = 2, seenFlag: UInt8 = 4, stayFlag: UInt8 = 8

    /// Addresses one request or introduction carries at most.
    public static let maxAddresses = 8

    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: 64)
        switch self {
        case let .request(request, peer, addresses), let .again(request, peer, addresses), let .punch(request, peer, addresses):
            switch self {
            case .again: w.write(Kind.again.rawValue)
            case .punch: w.write(Kind.punch.rawValue)
            default: w.write(Kind.request.rawValue)
            }
            w.write(request)
            w.write(bytes: peer.publicKey)
            Self.write(addresses, into: &w)
        case let .introduction(request, peer, relay, again, seen, stay, addresses):
            w.write(Kind.introduction.rawValue)
            w.write(request)
            w.write(bytes: peer.publicKey)
            w.write((relay ? Self.relayFlag : 0) | (again ? Self.againFlag : 0) | (seen && !addresses.isEmpty ? Self.seenFlag : 0)
                    | (again && stay ? Self.stayFlag : 0))
            Self.write(addresses, into: &w)
        case let .relay(peer, piece), let .relayed(peer, piece):
            if case .relay = self { w.write(Kind.relay.rawValue) } else { w.write(Kind.relayed.rawValue) }
            piece.write(peer: peer, into: &w)
        case let .birthday(step, count, port):
            w.write(Kind.birthday.rawValue)
            w.write(step.rawValue)
            w.write(count)
            if step == .accept { w.write(port) }
        }
        return w.bytes
    }

    /// Parses one message; every length is checked against what remains.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws(TransportError) -> IntroductionMessage {
        var r = ByteReader(bytes)
        do {
            let type = try r.readUInt8()
            guard let kind = Kind(rawValue: type) else { throw TransportError.malformed("unknown introduce message \(type)") }
            let message: IntroductionMessage
            switch kind {
            case .request, .again, .punch:
                let request = try r.readUInt32()
                let peer = try NodeID(publicKey: Array(try r.readBytes(32)))
                let addresses = try readAddresses(&r)
                message = kind == .again ? .again(request: request, peer: peer, addresses: addresses)
                    : kind == .punch ? .punch(request: request, peer: peer, addresses: addresses)
                    : .request(request: request, peer: peer, addresses: addresses)
            case .introduction:
                let request = try r.readUInt32()
                let peer = try NodeID(publicKey: Array(try r.readBytes(32)))
                let flags = try r.readUInt8()
                guard flags & ~(relayFlag | againFlag | seenFlag | stayFlag) == 0 else { throw TransportError.malformed("introduction flags \(flags)") }
                guard flags & stayFlag == 0 || flags & againFlag != 0 else { throw TransportError.malformed("introduction: flag 8 without 2") }
                let addresses = try readAddresses(&r)
                guard flags & seenFlag == 0 || !addresses.isEmpty else { throw TransportError.malformed("introduction: seen, no address") }
                message = .introduction(request: request, peer: peer, relay: flags & relayFlag != 0, again: flags & againFlag != 0,
                                        seen: flags & seenFlag != 0, stay: flags & stayFlag != 0, addresses: addresses)
            case .relay, .relayed:
                guard let (peer, piece) = try RelayPiece.read(&r) else { throw TransportError.malformed("relay piece") }
                message = kind == .relay ? .relay(peer: peer, piece: piece) : .relayed(peer: peer, piece: piece)
            case .birthday:
                let value = try r.readUInt8()
                let count = try r.readUInt16()
                guard let step = BirthdayStep(rawValue: value) else { throw TransportError.malformed("birthday step \(value)") }
                // A refusal names nothing; the other steps name spares or probes.
                guard (count == 0) == (step == .decline || step == .busy) else {
                    throw TransportError.malformed("birthday \(step) with count \(count)")
                }
                message = .birthday(step: step, count: count, port: step == .accept ? try r.readUInt16() : 0)
            }
            try r.expectEnd()
            return message
        } catch let e as TransportError {
            throw e
        } catch {
            throw .malformed("introduce message: \(error)")
        }
    }

    private static func write(_ addresses: [PeerAddress], into w: inout ByteWriter) {
        let kept = addresses.prefix(maxAddresses)
        w.write(UInt8(kept.count))
        for a in kept { w.write(address: a) }
    }

    private static func readAddresses(_ r: inout ByteReader) throws -> [PeerAddress] {
        let count = Int(try r.readUInt8())
        guard count <= maxAddresses else { throw TransportError.malformed("\(count) addresses") }
        return try (0..<count).map { _ in try r.readAddress() }
    }
}

/// The steps of birthday punching's exchange (introduce message 6).
public enum BirthdayStep: UInt8, Sendable {
    case offer = 0, accept, decline, busy, ready
}
