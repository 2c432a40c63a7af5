import LVBCore
import LVBCrypto

/// A peer in membership messages: identity and the address others reach it at.
public struct PeerRecord: Hashable, Sendable {
    public var id: NodeID
    public var address: PeerAddress
    public init(id: NodeID, address: PeerAddress) {
        self.id = id
        self.address = address
    }
}

/// One author's progress in a digest: the highest sequence seen and the
/// sequence numbers below it still missing.
public struct DigestEntry: Equatable, Sendable {
    public var author: NodeID
    /// The lowest sequence held: a neighbour backfills older retained events.
    public var minSeq: UInt64
    public var maxSeq: UInt64
    public var missing: [UInt64]

    public init(author: NodeID, minSeq: UInt64, maxSeq: UInt64, missing: [UInt64]) {
        self.author = author
        self.minSeq = minSeq
        self.maxSeq = maxSeq
        self.missing = missing
    }
}

/// Messages on the gossip channel (man/lvbnode-protocol.7 §GOSSIP): HyParView
/// membership, Plumtree broadcast and repair, and anti-entropy digests.
///
///     version(1) ‖ type(1) ‖ body
///     JOIN 1:            (empty)             joiner → contact
///     FORWARD_JOIN 2:    ttl(1) ‖ peer        random walk of a new member
///     NEIGHBOR 3:        high(1)              ask to enter the active view
///     NEIGHBOR_REPLY 4:  accepted(1)
///     DISCONNECT 5:      (empty)              leave the sender's active view
///     SHUFFLE 6:         n(1) ‖ n × peer      passive-view exchange
///     SHUFFLE_REPLY 7:   n(1) ‖ n × peer
///     EVENT 8:           event bytes          eager push, graft answer, history
///     IHAVE 9:           n(1) ‖ n × id        lazy push
///     GRAFT 10:          n(1) ‖ n × id        "send me these; be my eager link"
///     PRUNE 11:          (empty)              "you are my lazy link"
///     REPAIR 13:         event bytes          graft/digest answer, history (never prunes or grafts a link)
///     DIGEST 12:         after(32) ‖ through(32) ‖ n(1) ‖ n × (author(32) ‖ minSeq(8) ‖ maxSeq(8) ‖ m(1) ‖ m × seq(8))
///                        (covers author keys k with after < k ≤ through, compared as bytes)
///     peer = id(32) ‖ family(1: 4|6) ‖ address(4|16) ‖ port(2);  id = author(32) ‖ seq(8)
public enum GossipMessage: Equatable {
    case join
    case forwardJoin(ttl: UInt8, peer: PeerRecord)
    case neighbor(high: Bool)
    case neighborReply(accepted: Bool)
    case disconnect
    case shuffle([PeerRecord])
    case shuffleReply([PeerRecord])
    case event(ArraySlice<UInt8>)
    /// An event sent to repair loss (answer to GRAFT or DIGEST, or history):
    /// delivered like EVENT, but says nothing about the tree's links.
    case repair(ArraySlice<UInt8>)
    case ihave([EventID])
    case graft([EventID])
    case prune
    /// Progress for the authors whose keys lie in (after, through]; authors in
    /// that range that are not listed are unknown to the sender.
    case digest(after: [UInt8], through: [UInt8], entries: [DigestEntry])

    public static func parse(_ bytes: ArraySlice<UInt8>) throws(GossipError) -> GossipMessage {
        var r = ByteReader(bytes)
        do {
            guard try r.readUInt8() == GossipConstants.version else { throw GossipError.badVersion }
            let type = try r.readUInt8()
            let m: GossipMessage
            switch type {
            case 1: m = .join
            case 2: m = .forwardJoin(ttl: try r.readUInt8(), peer: try readPeer(&r))
            case 3: m = .neighbor(high: try readBool(&r))
            case 4: m = .neighborReply(accepted: try readBool(&r))
            case 5: m = .disconnect
            case 6, 7:
                let n = Int(try r.readUInt8())
                guard n <= GossipConstants.maxShuffleEntries else { throw GossipError.tooMany }
                var peers = [PeerRecord]()
                for _ in 0..<n { peers.append(try readPeer(&r)) }
                m = type == 6 ? .shuffle(peers) : .shuffleReply(peers)
            case 8, 13:
                let rest = r.readRest()
                guard !rest.isEmpty else { throw GossipError.malformed("empty event") }
                m = type == 8 ? .event(rest) : .repair(rest)
            case 9, 10:
                let n = Int(try r.readUInt8())
                guard n >= 1, n <= GossipConstants.maxIdsPerMessage else { throw GossipError.tooMany }
                var ids = [EventID]()
                for _ in 0..<n { ids.append(try readID(&r)) }
                m = type == 9 ? .ihave(ids) : .graft(ids)
            case 11: m = .prune
            case 12:
                let after = Array(try r.readBytes(32))
                let through = Array(try r.readBytes(32))
                let n = Int(try r.readUInt8())
                guard n <= GossipConstants.maxDigestEntries else { throw GossipError.tooMany }
                var entries = [DigestEntry]()
                for _ in 0..<n {
                    let author = try readNode(&r)
                    let minSeq = try r.readUInt64()
                    let maxSeq = try r.readUInt64()
                    guard minSeq <= maxSeq else { throw GossipError.malformed("digest range") }
                    let k = Int(try r.readUInt8())
                    guard k <= GossipConstants.maxMissingPerEntry else { throw GossipError.tooMany }
                    var missing = [UInt64]()
                    for _ in 0..<k { missing.append(try r.readUInt64()) }
                    entries.append(DigestEntry(author: author, minSeq: minSeq, maxSeq: maxSeq, missing: missing))
                }
                m = .digest(after: after, through: through, entries: entries)
            default: throw GossipError.unknownType(type)
            }
            try r.expectEnd()
            return m
        } catch let e as GossipError {
            throw e
        } catch {
            throw .malformed("\(error)")
        }
    }

    public var bytes: [UInt8] {
        var w = ByteWriter(capacity: 64)
        w.write(GossipConstants.version)
        switch self {
        case .join: w.write(UInt8(1))
        case let .forwardJoin(ttl, peer): w.write(UInt8(2)); w.write(ttl); Self.write(peer, &w)
        case let .neighbor(high): w.write(UInt8(3)); w.write(UInt8(high ? 1 : 0))
        case let .neighborReply(ok): w.write(UInt8(4)); w.write(UInt8(ok ? 1 : 0))
        case .disconnect: w.write(UInt8(5))
        case let .shuffle(peers), let .shuffleReply(peers):
            if case .shuffle = self { w.write(UInt8(6)) } else { w.write(UInt8(7)) }
            let list = peers.prefix(GossipConstants.maxShuffleEntries)
            w.write(UInt8(list.count))
            for p in list { Self.write(p, &w) }
        case let .event(e): w.write(UInt8(8)); w.write(bytes: e)
        case let .repair(e): w.write(UInt8(13)); w.write(bytes: e)
        case let .ihave(ids), let .graft(ids):
            if case .ihave = self { w.write(UInt8(9)) } else { w.write(UInt8(10)) }
            let list = ids.prefix(GossipConstants.maxIdsPerMessage)
            w.write(UInt8(list.count))
            for id in list { w.write(bytes: id.author.publicKey); w.write(id.seq) }
        case .prune: w.write(UInt8(11))
        case let .digest(after, through, entries):
            w.write(UInt8(12))
            w.write(bytes: after.count == 32 ? after : [UInt8](repeating: 0, count: 32))
            w.write(bytes: through.count == 32 ? through : [UInt8](repeating: 0xFF, count: 32))
            let list = entries.prefix(GossipConstants.maxDigestEntries)
            w.write(UInt8(list.count))
            for e in list {
                w.write(bytes: e.author.publicKey)
                w.write(e.minSeq)
                w.write(e.maxSeq)
                let missing = e.missing.prefix(GossipConstants.maxMissingPerEntry)
                w.write(UInt8(missing.count))
                for s in missing { w.write(s) }
            }
        }
        return w.bytes
    }

    private static func readBool(_ r: inout ByteReader) throws -> Bool {
        switch try r.readUInt8() {
        case 0: return false
        case 1: return true
        default: throw GossipError.malformed("boolean not 0 or 1")
        }
    }

    private static func readNode(_ r: inout ByteReader) throws -> NodeID {
        guard let id = try? NodeID(publicKey: Array(r.readBytes(32))) else { throw GossipError.malformed("bad node id") }
        return id
    }

    private static func readID(_ r: inout ByteReader) throws -> EventID {
        EventID(author: try readNode(&r), seq: try r.readUInt64())
    }

    private static func readPeer(_ r: inout ByteReader) throws -> PeerRecord {
        let id = try readNode(&r)
        do {
            return PeerRecord(id: id, address: try r.readAddress())
        } catch .badAddress {
            throw GossipError.malformed("bad address family")
        }
    }

    private static func write(_ p: PeerRecord, _ w: inout ByteWriter) {
        w.write(bytes: p.id.publicKey)
        w.write(address: p.address)
    }
}

/// Why a gossip message was refused (counted and dropped; the sender loses standing).
public enum GossipError: Error, Equatable, CustomStringConvertible {
    /// Not gossip version 1.
    case badVersion
    /// Unknown message type.
    case unknownType(UInt8)
    /// A list longer than the protocol allows.
    case tooMany
    /// A field is wrong; the text says which.
    case malformed(String)

    public var description: String {
        switch self {
        case .badVersion: "unsupported gossip version"
        case let .unknownType(t): "unknown gossip message type \(t)"
        case .tooMany: "list longer than allowed"
        case let .malformed(why): "malformed gossip message: \(why)"
        }
    }
}
