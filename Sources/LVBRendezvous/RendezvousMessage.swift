import LVBCore
import LVBCrypto
import LVBGossip
import LVBTransport

/// A message on the rendezvous channel (channel 5) of a session between a
/// node and a rendezvous (lvbnode-protocol(7), RENDEZVOUS): one type byte,
/// then its body. Unknown types are counted and dropped without penalty.
///
///     1 announce   announcement                       host → rendezvous
///     2 list       request (4) ‖ page (2)             node → rendezvous
///     3 rooms      request (4) ‖ page (2) ‖ total (4) ‖ part (1) ‖ parts (1)
///                  ‖ count (1) ‖ (length (2) ‖ announcement)…
///     4 resolve    request (4) ‖ room id (16)         node → rendezvous
///     5 resolved   request (4) ‖ found (1) ‖ [announcement]
///     6 introduce  request (4) ‖ room id (16) ‖ count (1) ‖ address…   joiner → rendezvous
///     7 introduction  request (4) ‖ peer (32) ‖ relay (1) ‖ count (1) ‖ address…
///                                                           rendezvous → joiner, host
///     8 observed   address                                  rendezvous → node
///     9 relay      peer (32) ‖ id (2) ‖ part (1) ‖ piece    node → rendezvous
///    10 relayed    peer (32) ‖ id (2) ‖ part (1) ‖ piece    rendezvous → node
///    11 thumbnail  room id (16) ‖ seq (8) ‖ part (1) ‖ piece                 host → rendezvous
///    12 thumbnail request   request (4) ‖ room id (16) ‖ have (8)          node → rendezvous
///    13 thumbnail answer    request (4) ‖ room id (16) ‖ seq (8) ‖ part (1) ‖ piece
///                                                                           rendezvous → node
///
/// A relayed datagram goes in one or two pieces (a session datagram and
/// this header outgrow one session payload): `part` is index << 4 | count,
/// `id` numbers the sender's datagrams.
///
/// A thumbnail (a small JPEG of the host's latest keyframe) is signed by the
/// host and goes as jpeg ‖ signature (64) in 1–15 pieces, `part` as above:
/// SIGN(host, "lvbnode thumbnail v1" ‖ 0x00 ‖ room id ‖ seq ‖ jpeg); `seq`
/// grows with each thumbnail of the room. A rendezvous takes it only over
/// the session of the room's announced host and keeps the latest while the
/// room is listed; a node asks with the seq it has (`have`, 0: none) and gets
/// the pieces of a newer one, or one answer with part 0 and no piece: none
/// newer. A node checks the signature against the host key in the room's
/// signed announcement before it uses the picture.
///
/// An address is family (1: 4 or 6) ‖ address (4 or 16) ‖ port (2).
/// The room list passes on the hosts' own signed announcements, so a
/// rendezvous cannot alter what a room says about itself.
public enum RendezvousMessage: Equatable, Sendable {
    case announce([UInt8])
    case list(request: UInt32, page: UInt16)
    case rooms(request: UInt32, page: UInt16, total: UInt32, part: UInt8, parts: UInt8, announcements: [[UInt8]])
    case resolve(request: UInt32, room: RoomID)
    case resolved(request: UInt32, announcement: [UInt8]?)
    /// A joiner asks to be introduced to `room`'s host; `addresses` are its own (local) ones.
    case introduce(request: UInt32, room: RoomID, addresses: [PeerAddress])
    /// Both sides of an introduction learn where the other is: the address
    /// the rendezvous sees it at first, then the ones it gave; `relay`: the
    /// rendezvous forwards the pair's sealed datagrams if asked. No
    /// addresses: the host cannot be reached through this rendezvous now.
    case introduction(request: UInt32, peer: NodeID, relay: Bool, addresses: [PeerAddress])
    /// The address the rendezvous sees the node at (its reflexive address).
    case observed(PeerAddress)
    /// A sealed session datagram for `peer`, to forward (node → rendezvous),
    /// or one from `peer` (rendezvous → node).
    case relay(peer: NodeID, piece: RelayPiece)
    case relayed(peer: NodeID, piece: RelayPiece)
    /// A piece of the host's signed thumbnail of `room`.
    case thumbnail(room: RoomID, seq: UInt64, piece: ThumbnailPiece)
    /// Asks for `room`'s thumbnail if newer than `have` (0: any).
    case thumbnailRequest(request: UInt32, room: RoomID, have: UInt64)
    /// A piece of the thumbnail asked for; nil: none newer than `have`.
    case thumbnailAnswer(request: UInt32, room: RoomID, seq: UInt64, piece: ThumbnailPiece?)

    public enum Kind: UInt8, Sendable {
        case announce = 1, list, rooms, resolve, resolved, introduce, introduction, observed, relay, relayed
        case thumbnail, thumbnailRequest, thumbnailAnswer
    }

    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: 64)
        switch self {
        case .announce(let a):
            w.write(Kind.announce.rawValue)
            w.write(bytes: a)
        case let .list(request, page):
            w.write(Kind.list.rawValue)
            w.write(request)
            w.write(page)
        case let .rooms(request, page, total, part, parts, announcements):
            w.write(Kind.rooms.rawValue)
            w.write(request)
            w.write(page)
            w.write(total)
            w.write(part)
            w.write(parts)
            w.write(UInt8(announcements.count))
            for a in announcements {
                w.write(UInt16(a.count))
                w.write(bytes: a)
            }
        case let .resolve(request, room):
            w.write(Kind.resolve.rawValue)
            w.write(request)
            w.write(bytes: room.bytes)
        case let .resolved(request, announcement):
            w.write(Kind.resolved.rawValue)
            w.write(request)
            w.write(UInt8(announcement == nil ? 0 : 1))
            if let announcement { w.write(bytes: announcement) }
        case let .introduce(request, room, addresses):
            w.write(Kind.introduce.rawValue)
            w.write(request)
            w.write(bytes: room.bytes)
            Self.write(addresses, into: &w)
        case let .introduction(request, peer, relay, addresses):
            w.write(Kind.introduction.rawValue)
            w.write(request)
            w.write(bytes: peer.publicKey)
            w.write(UInt8(relay ? 1 : 0))
            Self.write(addresses, into: &w)
        case let .relay(peer, piece), let .relayed(peer, piece):
            if case .relay = self { w.write(Kind.relay.rawValue) } else { w.write(Kind.relayed.rawValue) }
            piece.write(peer: peer, into: &w)
        case .observed(let address):
            w.write(Kind.observed.rawValue)
            w.write(address: address)
        case let .thumbnail(room, seq, piece):
            w.write(Kind.thumbnail.rawValue)
            w.write(bytes: room.bytes)
            w.write(seq)
            piece.write(into: &w)
        case let .thumbnailRequest(request, room, have):
            w.write(Kind.thumbnailRequest.rawValue)
            w.write(request)
            w.write(bytes: room.bytes)
            w.write(have)
        case let .thumbnailAnswer(request, room, seq, piece):
            w.write(Kind.thumbnailAnswer.rawValue)
            w.write(request)
            w.write(bytes: room.bytes)
            w.write(seq)
            if let piece { piece.write(into: &w) } else { w.write(UInt8(0)) }
        }
        return w.bytes
    }

    private static func write(_ addresses: [PeerAddress], into w: inout ByteWriter) {
        let kept = addresses.prefix(RendezvousConstants.maxIntroducedAddresses)
        w.write(UInt8(kept.count))
        for a in kept { w.write(address: a) }
    }

    private static func readAddresses(_ r: inout ByteReader) throws -> [PeerAddress] {
        let count = Int(try r.readUInt8())
        guard count <= RendezvousConstants.maxIntroducedAddresses else { throw RendezvousMessageError.malformed }
        return try (0..<count).map { _ in try r.readAddress() }
    }

    /// Parses a rendezvous-channel payload; an unknown type throws
    /// `.unknownType` (not misbehaviour), a broken layout `.malformed`.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws(RendezvousMessageError) -> RendezvousMessage {
        guard let first = bytes.first else { throw .malformed }
        guard let kind = Kind(rawValue: first) else { throw .unknownType(first) }
        var r = ByteReader(bytes.dropFirst())
        do {
            let message: RendezvousMessage
            switch kind {
            case .announce:
                guard !r.isAtEnd else { throw RendezvousMessageError.malformed }
                message = .announce(Array(r.readRest()))
            case .list:
                message = .list(request: try r.readUInt32(), page: try r.readUInt16())
            case .rooms:
                let request = try r.readUInt32(), page = try r.readUInt16(), total = try r.readUInt32()
                let part = try r.readUInt8(), parts = try r.readUInt8(), count = try r.readUInt8()
                guard part < parts else { throw RendezvousMessageError.malformed }
                var list: [[UInt8]] = []
                for _ in 0..<count { list.append(Array(try r.readBytes(Int(try r.readUInt16())))) }
                message = .rooms(request: request, page: page, total: total, part: part, parts: parts, announcements: list)
            case .resolve:
                message = .resolve(request: try r.readUInt32(), room: try RoomID(bytes: Array(try r.readBytes(16))))
            case .resolved:
                let request = try r.readUInt32()
                switch try r.readUInt8() {
                case 0: message = .resolved(request: request, announcement: nil)
                case 1:
                    guard !r.isAtEnd else { throw RendezvousMessageError.malformed }
                    message = .resolved(request: request, announcement: Array(r.readRest()))
                default: throw RendezvousMessageError.malformed
                }
            case .introduce:
                let request = try r.readUInt32()
                let room = try RoomID(bytes: Array(try r.readBytes(16)))
                message = .introduce(request: request, room: room, addresses: try Self.readAddresses(&r))
            case .introduction:
                let request = try r.readUInt32()
                guard let peer = try? NodeID(publicKey: Array(try r.readBytes(32))) else { throw RendezvousMessageError.malformed }
                let relay = try r.readUInt8()
                guard relay <= 1 else { throw RendezvousMessageError.malformed }
                message = .introduction(request: request, peer: peer, relay: relay == 1, addresses: try Self.readAddresses(&r))
            case .observed:
                message = .observed(try r.readAddress())
            case .relay, .relayed:
                guard let (peer, piece) = try RelayPiece.read(&r) else { throw RendezvousMessageError.malformed }
                message = kind == .relay ? .relay(peer: peer, piece: piece) : .relayed(peer: peer, piece: piece)
            case .thumbnail:
                let room = try RoomID(bytes: Array(try r.readBytes(16)))
                let seq = try r.readUInt64()
                guard let piece = try ThumbnailPiece.read(&r) else { throw RendezvousMessageError.malformed }
                message = .thumbnail(room: room, seq: seq, piece: piece)
            case .thumbnailRequest:
                message = .thumbnailRequest(request: try r.readUInt32(), room: try RoomID(bytes: Array(try r.readBytes(16))), have: try r.readUInt64())
            case .thumbnailAnswer:
                let request = try r.readUInt32()
                let room = try RoomID(bytes: Array(try r.readBytes(16)))
                message = .thumbnailAnswer(request: request, room: room, seq: try r.readUInt64(), piece: try ThumbnailPiece.read(&r))
            }
            guard r.isAtEnd else { throw RendezvousMessageError.malformed }
            return message
        } catch {
            throw .malformed
        }
    }
}

public enum RendezvousMessageError: Error, Equatable {
    /// A type this version does not know (a newer node's).
    case unknownType(UInt8)
    /// A known type whose layout is broken.
    case malformed
}
