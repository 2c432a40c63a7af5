import LVBCore
import LVBCrypto
@testable import LVBGossip  // DigestEntry has no public initializer
import Testing

// Byte vectors and malformed inputs for the gossip wire format (the diagram
// in GossipMessage.swift). The vectors are written out from the diagram by
// hand, field by field, so they pin the encoding rather than echo the encoder.

@Suite struct GossipMessageTests {
    /// RFC 8032 §7.1 TEST 1 and TEST 2 public keys: valid Ed25519 points with known bytes.
    static let keyA = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
    static let keyB = "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c"

    let a = Self.node(Self.keyA)
    let b = Self.node(Self.keyB)

    static func node(_ hex: String) -> NodeID {
        (try? NodeID(publicKey: Self.bytes(hex)))!  // invariant: RFC 8032 keys are valid points
    }

    /// Hex with spaces between fields for readability.
    static func bytes(_ hex: String) -> [UInt8] {
        (try? Hex.decode(hex.filter { $0 != " " }))!  // invariant: the literals below are hex
    }

    func parse(_ hex: String) throws(GossipError) -> GossipMessage {
        try GossipMessage.parse(Self.bytes(hex)[...])
    }

    /// Expects `bytes` to be refused with exactly `expected`.
    func expectRefused(_ expected: GossipError, _ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            let m = try GossipMessage.parse(bytes[...])
            Issue.record("expected \(expected), parsed \(m)", sourceLocation: sourceLocation)
        } catch {
            #expect(error == expected, sourceLocation: sourceLocation)
        }
    }

    /// Expects `bytes` to be refused as malformed (the text is the reader's, not pinned).
    func expectMalformed(_ bytes: [UInt8], _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            let m = try GossipMessage.parse(bytes[...])
            Issue.record("\(what): expected malformed, parsed \(m)", sourceLocation: sourceLocation)
        } catch {
            guard case .malformed = error else {
                Issue.record("\(what): expected malformed, got \(error)", sourceLocation: sourceLocation)
                return
            }
        }
    }

    var v4Peer: PeerRecord { PeerRecord(id: a, address: .ipv4(192, 168, 1, 20, port: 7400)) }
    var v6Peer: PeerRecord {
        PeerRecord(id: b, address: PeerAddress(host: .v6([0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [1]), port: 443))
    }

    /// One of every message, with lists of more than one element where a list exists.
    var everyMessage: [GossipMessage] {
        [
            .join,
            .forwardJoin(ttl: 4, peer: v4Peer),
            .forwardJoin(ttl: 0, peer: v6Peer),
            .neighbor(high: true),
            .neighbor(high: false),
            .neighborReply(accepted: true),
            .neighborReply(accepted: false),
            .disconnect,
            .shuffle([]),
            .shuffle([v4Peer, v6Peer]),
            .shuffleReply([v6Peer]),
            .event([0x01, 0x02, 0x03][...]),
            .ihave([EventID(author: a, seq: 1), EventID(author: b, seq: .max)]),
            .graft([EventID(author: b, seq: 0)]),
            .prune,
            .digest(after: [UInt8](repeating: 0, count: 32), through: [UInt8](repeating: 0xFF, count: 32), entries: []),
            .digest(after: a.publicKey, through: b.publicKey, entries: [
                DigestEntry(author: a, minSeq: 1, maxSeq: 9, missing: [2, 3, 5, 7]),
                DigestEntry(author: b, minSeq: 4, maxSeq: 4, missing: []),
            ]),
        ]
    }

    // MARK: Byte vectors

    @Test func joinVector() throws {
        #expect(GossipMessage.join.bytes == Self.bytes("01 01"))
        #expect(try parse("0101") == .join)
    }

    @Test func neighborVectors() throws {
        #expect(GossipMessage.neighbor(high: true).bytes == Self.bytes("01 03 01"))
        #expect(GossipMessage.neighbor(high: false).bytes == Self.bytes("01 03 00"))
        #expect(GossipMessage.neighborReply(accepted: true).bytes == Self.bytes("01 04 01"))
        #expect(try parse("010301") == .neighbor(high: true))
        #expect(try parse("010400") == .neighborReply(accepted: false))
    }

    @Test func emptyBodyVectors() {
        #expect(GossipMessage.disconnect.bytes == Self.bytes("01 05"))
        #expect(GossipMessage.prune.bytes == Self.bytes("01 0b"))
        #expect(GossipMessage.shuffle([]).bytes == Self.bytes("01 06 00"))
    }

    @Test func forwardJoinVectorWithAnIPv4Peer() throws {
        // ttl 4, peer = id ‖ family 4 ‖ 192.168.1.20 ‖ port 7400 (0x1ce8)
        let hex = "01 02 04 \(Self.keyA) 04 c0a80114 1ce8"
        #expect(GossipMessage.forwardJoin(ttl: 4, peer: v4Peer).bytes == Self.bytes(hex))
        #expect(try parse(hex) == .forwardJoin(ttl: 4, peer: v4Peer))
    }

    @Test func shuffleReplyVectorWithAnIPv6Peer() throws {
        // n = 1, peer = id ‖ family 6 ‖ 2001:db8::1 ‖ port 443 (0x01bb)
        let hex = "01 07 01 \(Self.keyB) 06 20010db8000000000000000000000001 01bb"
        #expect(GossipMessage.shuffleReply([v6Peer]).bytes == Self.bytes(hex))
        #expect(try parse(hex) == .shuffleReply([v6Peer]))
    }

    @Test func eventVectorCarriesTheEventBytesVerbatim() throws {
        #expect(GossipMessage.event([0xde, 0xad, 0xbe, 0xef][...]).bytes == Self.bytes("01 08 deadbeef"))
        // The event itself is judged by RoomEvent.parse later, not here.
        #expect(try parse("0108deadbeef") == .event([0xde, 0xad, 0xbe, 0xef][...]))
    }

    @Test func ihaveVectorWithOneID() throws {
        // n = 1, id = author ‖ seq 42 (8 bytes big-endian)
        let hex = "01 09 01 \(Self.keyA) 000000000000002a"
        let m = GossipMessage.ihave([EventID(author: a, seq: 42)])
        #expect(m.bytes == Self.bytes(hex))
        #expect(try parse(hex) == m)
    }

    @Test func graftVectorWithTwoIDs() throws {
        let hex = "01 0a 02 \(Self.keyA) 0000000000000001 \(Self.keyB) ffffffffffffffff"
        let m = GossipMessage.graft([EventID(author: a, seq: 1), EventID(author: b, seq: .max)])
        #expect(m.bytes == Self.bytes(hex))
        #expect(try parse(hex) == m)
    }

    @Test func digestVectorWithOneEntry() throws {
        // after = 0³², through = ff³², n = 1,
        // entry = author ‖ minSeq 3 ‖ maxSeq 258 ‖ m = 2 ‖ 5 ‖ 256
        let hex = "01 0c" + " " + String(repeating: "00", count: 32) + " " + String(repeating: "ff", count: 32)
            + " 01 \(Self.keyB) 0000000000000003 0000000000000102 02 0000000000000005 0000000000000100"
        let m = GossipMessage.digest(after: [UInt8](repeating: 0, count: 32), through: [UInt8](repeating: 0xFF, count: 32),
                                     entries: [DigestEntry(author: b, minSeq: 3, maxSeq: 258, missing: [5, 256])])
        #expect(m.bytes == Self.bytes(hex))
        #expect(m.bytes.count == 2 + 64 + 1 + 32 + 8 + 8 + 1 + 2 * 8)
        #expect(try parse(hex) == m)
    }

    // MARK: Round trips

    @Test func everyMessageRoundTrips() throws {
        for m in everyMessage {
            #expect(try GossipMessage.parse(m.bytes[...]) == m, "\(m)")
        }
    }

    @Test func parsesFromASliceOfALargerBuffer() throws {
        // The transport hands gossip a slice of the opened datagram: indices do not start at 0.
        for m in everyMessage {
            let buffer = [0xEE, 0xEE, 0xEE] + m.bytes + [0xEE]
            #expect(try GossipMessage.parse(buffer[3..<(buffer.count - 1)]) == m, "\(m)")
        }
    }

    @Test func fullListsRoundTrip() throws {
        let ids = (0..<UInt64(GossipConstants.maxIdsPerMessage)).map { EventID(author: $0.isMultiple(of: 2) ? a : b, seq: $0) }
        let peers = [PeerRecord](repeating: v6Peer, count: GossipConstants.maxShuffleEntries)
        let entries = [DigestEntry](repeating: DigestEntry(author: a, minSeq: 0, maxSeq: .max, missing: [1, 2, 3, 4]),
                                    count: GossipConstants.maxDigestEntries)
        let digest = GossipMessage.digest(after: a.publicKey, through: b.publicKey, entries: entries)
        let full: [GossipMessage] = [.ihave(ids), .graft(ids), .shuffle(peers), .shuffleReply(peers), digest]
        for m in full {
            #expect(try GossipMessage.parse(m.bytes[...]) == m)
        }
    }

    @Test func theEncoderCapsListsAtTheLimitTheParserAccepts() throws {
        let ids = (0..<UInt64(GossipConstants.maxIdsPerMessage + 5)).map { EventID(author: a, seq: $0) }
        #expect(try GossipMessage.parse(GossipMessage.ihave(ids).bytes[...])
                    == .ihave(Array(ids.prefix(GossipConstants.maxIdsPerMessage))))
        let peers = [PeerRecord](repeating: v4Peer, count: GossipConstants.maxShuffleEntries + 1)
        #expect(try GossipMessage.parse(GossipMessage.shuffle(peers).bytes[...])
                    == .shuffle(Array(peers.prefix(GossipConstants.maxShuffleEntries))))
        let entry = DigestEntry(author: a, minSeq: 0, maxSeq: 100, missing: [1, 2, 3, 4, 5, 6])
        let digest = GossipMessage.digest(after: [], through: [], entries: [DigestEntry](repeating: entry, count: 25))
        guard case let .digest(after, through, entries) = try GossipMessage.parse(digest.bytes[...]) else {
            Issue.record("digest did not parse as a digest")
            return
        }
        // A bound that is not 32 bytes is written as the widest range.
        #expect(after == [UInt8](repeating: 0, count: 32))
        #expect(through == [UInt8](repeating: 0xFF, count: 32))
        #expect(entries.count == GossipConstants.maxDigestEntries)
        #expect(entries.allSatisfy { $0.missing == [1, 2, 3, 4] })
    }

    // MARK: Malformed input

    @Test func everyTruncationIsRefused() {
        for m in everyMessage {
            let full = m.bytes
            // An EVENT's body is opaque here: only a cut into its header (or an empty body) is a gossip error.
            let cuts = if case .event = m { 0..<3 } else { 0..<full.count }
            for n in cuts {
                expectMalformed(Array(full.prefix(n)), "\(m) cut to \(n) bytes")
            }
        }
    }

    @Test func trailingBytesAreRefused() {
        for m in everyMessage {
            if case .event = m { continue }  // an event runs to the end of the payload
            if case .repair = m { continue }
            expectMalformed(m.bytes + [0], "\(m) with a trailing byte")
        }
    }

    @Test func unknownTypesAreRefused() {
        for type: UInt8 in [0, 14, 0x7F, 0xFF] {
            expectRefused(.unknownType(type), [1, type])
            expectRefused(.unknownType(type), [1, type, 0, 0, 0, 0])
        }
    }

    @Test func otherVersionsAreRefused() {
        expectRefused(.badVersion, Self.bytes("0201"))
        expectRefused(.badVersion, Self.bytes("0001"))
        expectRefused(.badVersion, Self.bytes("ff0301"))
        // The version is checked before anything else, including an unknown type.
        expectRefused(.badVersion, Self.bytes("02ff"))
    }

    @Test func booleansOtherThanZeroOrOneAreRefused() {
        for value: UInt8 in [2, 0x80, 0xFF] {
            expectRefused(.malformed("boolean not 0 or 1"), [1, 3, value])
            expectRefused(.malformed("boolean not 0 or 1"), [1, 4, value])
        }
    }

    @Test func listsLongerThanAllowedAreRefused() {
        let peer = GossipMessage.shuffle([v4Peer]).bytes.dropFirst(3)  // one encoded peer
        for type: UInt8 in [6, 7] {
            let n = GossipConstants.maxShuffleEntries + 1
            // Refused on the count alone, whether or not the peers follow.
            expectRefused(.tooMany, [1, type, UInt8(n)])
            expectRefused(.tooMany, [1, type, UInt8(n)] + Array(repeating: peer, count: n).flatMap { $0 })
            expectRefused(.tooMany, [1, type, 0xFF])
        }
        let id = Self.bytes(Self.keyA) + [0, 0, 0, 0, 0, 0, 0, 1]
        for type: UInt8 in [9, 10] {
            let n = GossipConstants.maxIdsPerMessage + 1
            expectRefused(.tooMany, [1, type, UInt8(n)] + Array(repeating: id, count: n).flatMap { $0 })
            expectRefused(.tooMany, [1, type, 0xFF])
        }
        let bounds = [UInt8](repeating: 0, count: 32) + [UInt8](repeating: 0xFF, count: 32)
        expectRefused(.tooMany, [1, 12] + bounds + [UInt8(GossipConstants.maxDigestEntries + 1)])
        // Five missing sequence numbers in one entry (the limit is four).
        let entry = Self.bytes(Self.keyA) + [UInt8](repeating: 0, count: 8) + [0, 0, 0, 0, 0, 0, 0, 9]
            + [UInt8(GossipConstants.maxMissingPerEntry + 1)] + [UInt8](repeating: 0, count: 8 * 5)
        expectRefused(.tooMany, [1, 12] + bounds + [1] + entry)
    }

    @Test func anIHaveOrGraftWithoutIDsIsRefused() {
        // The encoder does not prevent it, but no node sends one: refused (as `.tooMany`).
        expectRefused(.tooMany, [1, 9, 0])
        expectRefused(.tooMany, [1, 10, 0])
        expectRefused(.tooMany, GossipMessage.ihave([]).bytes)
    }

    @Test func anEmptyEventIsRefused() {
        expectRefused(.malformed("empty event"), [1, 8])
    }

    @Test func aDigestRangeRunningBackwardsIsRefused() {
        let bounds = [UInt8](repeating: 0, count: 32) + [UInt8](repeating: 0xFF, count: 32)
        let entry = Self.bytes(Self.keyA) + [0, 0, 0, 0, 0, 0, 0, 9] + [0, 0, 0, 0, 0, 0, 0, 8] + [0]
        expectRefused(.malformed("digest range"), [1, 12] + bounds + [1] + entry)
    }

    @Test func anUnknownAddressFamilyIsRefused() {
        for family: UInt8 in [0, 5, 0xFF] {
            var bytes = GossipMessage.forwardJoin(ttl: 1, peer: v4Peer).bytes
            bytes[3 + 32] = family
            expectRefused(.malformed("bad address family"), bytes)
        }
    }

    @Test func aKeyThatIsNoEd25519PointIsRefused() {
        // y = 2 is on no edwards25519 point ((y² − 1)/(d·y² + 1) is not a square mod 2²⁵⁵ − 19).
        let notAPoint = [UInt8(2)] + [UInt8](repeating: 0, count: 31)
        #expect((try? NodeID(publicKey: notAPoint)) == nil)
        expectRefused(.malformed("bad node id"), [1, 9, 1] + notAPoint + [UInt8](repeating: 0, count: 8))
        expectRefused(.malformed("bad node id"), [1, 2, 1] + notAPoint + [4, 127, 0, 0, 1, 0, 80])
    }
}
