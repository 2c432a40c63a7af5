import LVBCore
import LVBCrypto

/// Replay-channel messages between nodes and a rendezvous, which lists the
/// replays its peers hold after the live rooms (types 4 to 8, beside the
/// exchange's 1 to 3):
///
///     4 held     flags (1: bit 0 withdrawn) || card length (2) || card
///                || count (1) || address ...                   holder → rendezvous
///     5 list     request (4) || page (2)                       node → rendezvous
///     6 listed   request (4) || page (2) || total (4) || part (1) || parts (1)
///                || count (1) || (holders (2) || card length (2) || card) ...
///     7 find     request (4) || replay id (16)                 player → rendezvous
///     8 found    request (4) || replay id (16) || count (1)
///                || (holder (32) || count (1) || address ...) ...
///
/// A card is the replay's, signed by its host (`ReplayCard`); a holder
/// speaks only for itself (the session says who it is). An address is
/// family (1: 4 or 6) || address (4 or 16) || port (2); at most 4 each.
public enum ReplayListMessage: Equatable, Sendable {
    public struct Listed: Equatable, Sendable {
        public var card: ReplayCard
        public var holders: UInt16
        public init(card: ReplayCard, holders: UInt16) {
            self.card = card
            self.holders = holders
        }
    }

    public struct Holder: Equatable, Sendable {
        public var id: NodeID
        public var addresses: [PeerAddress]
        public init(id: NodeID, addresses: [PeerAddress]) {
            self.id = id
            self.addresses = addresses
        }
    }

    case held(ReplayCard, addresses: [PeerAddress], withdrawn: Bool)
    case list(request: UInt32, page: UInt16)
    case listed(request: UInt32, page: UInt16, total: UInt32, part: UInt8, parts: UInt8, replays: [Listed])
    case find(request: UInt32, ReplayID)
    case found(request: UInt32, ReplayID, holders: [Holder])

    public static let maxAddresses = 4
    public static let maxHolders = 8

    /// Whether a replay-channel payload is one of these (else the exchange's).
    public static func isListMessage(_ payload: ArraySlice<UInt8>) -> Bool { (4...8).contains(payload.first ?? 0) }

    public var bytes: [UInt8] {
        var w = ByteWriter(capacity: 128)
        switch self {
        case let .held(card, addresses, withdrawn):
            let c = card.encoded
            w.write(UInt8(4)); w.write(UInt8(withdrawn ? 1 : 0)); w.write(UInt16(c.count)); w.write(bytes: c)
            Self.write(addresses, &w)
        case let .list(request, page):
            w.write(UInt8(5)); w.write(request); w.write(page)
        case let .listed(request, page, total, part, parts, replays):
            w.write(UInt8(6)); w.write(request); w.write(page); w.write(total); w.write(part); w.write(parts)
            w.write(UInt8(replays.count))
            for r in replays {
                let c = r.card.encoded
                w.write(r.holders); w.write(UInt16(c.count)); w.write(bytes: c)
            }
        case let .find(request, id):
            w.write(UInt8(7)); w.write(request); w.write(bytes: id.bytes)
        case let .found(request, id, holders):
            w.write(UInt8(8)); w.write(request); w.write(bytes: id.bytes); w.write(UInt8(holders.count))
            for h in holders {
                w.write(bytes: h.id.publicKey)
                Self.write(h.addresses, &w)
            }
        }
        return w.bytes
    }

    private static func write(_ addresses: [PeerAddress], _ w: inout ByteWriter) {
        let kept = addresses.prefix(maxAddresses)
        w.write(UInt8(kept.count))
        for a in kept { w.write(address: a) }
    }

    private static func readAddresses(_ r: inout ByteReader) throws(ReplayError) -> [PeerAddress] {
        guard let count = try? r.readUInt8() else { throw .truncated("replay list addresses") }
        guard count <= maxAddresses else { throw .malformed("\(count) addresses (at most \(maxAddresses))") }
        var out: [PeerAddress] = []
        for _ in 0..<count {
            guard let a = try? r.readAddress() else { throw .malformed("replay list address") }
            out.append(a)
        }
        return out
    }

    private static func readCard(_ r: inout ByteReader) throws(ReplayError) -> ReplayCard {
        guard let length = try? r.readUInt16(), let bytes = try? r.readBytes(Int(length)) else { throw .truncated("replay card") }
        return try ReplayCard.parse(bytes)
    }

    /// Every field checked, every card's signature too.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws(ReplayError) -> ReplayListMessage {
        var r = ByteReader(bytes)
        guard let type = try? r.readUInt8() else { throw .truncated("replay list message") }
        let message: ReplayListMessage
        switch type {
        case 4:
            guard let flags = try? r.readUInt8() else { throw .truncated("replay held") }
            guard flags & ~1 == 0 else { throw .malformed("replay held flags \(flags)") }
            let card = try readCard(&r)
            message = .held(card, addresses: try readAddresses(&r), withdrawn: flags == 1)
        case 5:
            guard let request = try? r.readUInt32(), let page = try? r.readUInt16() else { throw .truncated("replay list") }
            message = .list(request: request, page: page)
        case 6:
            guard let request = try? r.readUInt32(), let page = try? r.readUInt16(), let total = try? r.readUInt32(),
                  let part = try? r.readUInt8(), let parts = try? r.readUInt8(), let count = try? r.readUInt8() else {
                throw .truncated("replay listed")
            }
            guard part < parts else { throw .malformed("replay listed part \(part) of \(parts)") }
            var replays: [Listed] = []
            for _ in 0..<count {
                guard let holders = try? r.readUInt16() else { throw .truncated("replay listed entry") }
                replays.append(Listed(card: try readCard(&r), holders: holders))
            }
            message = .listed(request: request, page: page, total: total, part: part, parts: parts, replays: replays)
        case 7:
            guard let request = try? r.readUInt32(), let id = try? r.readBytes(16) else { throw .truncated("replay find") }
            message = .find(request: request, ReplayID(checked: Array(id)))
        case 8:
            guard let request = try? r.readUInt32(), let id = try? r.readBytes(16), let count = try? r.readUInt8() else {
                throw .truncated("replay found")
            }
            guard count <= maxHolders else { throw .malformed("\(count) holders (at most \(maxHolders))") }
            var holders: [Holder] = []
            for _ in 0..<count {
                guard let key = try? r.readBytes(32), let node = try? NodeID(publicKey: Array(key)) else { throw .malformed("replay holder") }
                holders.append(Holder(id: node, addresses: try readAddresses(&r)))
            }
            message = .found(request: request, ReplayID(checked: Array(id)), holders: holders)
        default:
            throw .malformed("replay list message of unknown type \(type)")
        }
        guard r.isAtEnd else { throw .malformed("replay list message with trailing bytes") }
        return message
    }
}
