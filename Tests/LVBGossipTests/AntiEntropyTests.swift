import LVBCore
import LVBCrypto
@testable import LVBGossip  // DigestEntry has no public initializer
import LVBRoom
import LVBTestSupport
import Testing

/// Digests are push-pull: a node whose neighbour's digest shows it holds
/// events the node lacks answers with its own digest of the same range.
@Suite struct AntiEntropyTests {
    /// Records what a gossip node sends; every peer counts as connected.
    final class Recorder: GossipTransport {
        var sent: [(NodeID, GossipMessage)] = []
        func sendGossip(_ payload: [UInt8], to id: NodeID) {
            if let m = try? GossipMessage.parse(payload[...]) { sent.append((id, m)) }
        }
        func connect(to peer: PeerRecord) {}
        func address(of id: NodeID) -> PeerAddress? { nil }
        func isConnected(_ id: NodeID) -> Bool { true }

        /// The digests sent, as (to, after, through, entries).
        var digests: [(NodeID, [UInt8], [UInt8], [DigestEntry])] {
            sent.compactMap { to, m in
                guard case let .digest(after, through, entries) = m else { return nil }
                return (to, after, through, entries)
            }
        }
    }

    let clock = ManualClock()
    let transport = Recorder()
    let node: GossipNode
    let neighbour = (try? Identity(seed: [UInt8](repeating: 3, count: 32)))!  // invariant: 32-byte seed
    let author = (try? Identity(seed: [UInt8](repeating: 7, count: 32)))!  // invariant: 32-byte seed
    let room = RoomID.random(SeededRandom(seed: 1))
    let low = [UInt8](repeating: 0, count: 32)
    let high = [UInt8](repeating: 0xFF, count: 32)

    init() throws {
        node = GossipNode(id: try Identity(seed: [UInt8](repeating: 5, count: 32)).nodeID, transport: transport,
                          kinds: RoomEvents.table, clock: clock, random: SeededRandom(seed: 2))
        node.join(via: PeerRecord(id: neighbour.nodeID, address: PeerAddress(host: .v4(0x7F00_0001), port: 7400)))
        // The node holds the author's events 1, 2, 3 and 5.
        for seq: UInt64 in [1, 2, 3, 5] {
            let e = try RoomEvent.make(room: room, author: author, seq: seq, timestamp: 1_700_000_000_000 + seq,
                                       body: .chat(text: "message \(seq)"))
            node.receive(GossipMessage.event(e.encoded[...]).bytes[...], from: neighbour.nodeID)
        }
        transport.sent.removeAll()
    }

    func digest(_ entries: [DigestEntry]) -> [UInt8] {
        GossipMessage.digest(after: low, through: high, entries: entries).bytes
    }

    @Test func aDigestShowingEventsWeLackIsAnsweredWithOurDigestOfTheSameRange() throws {
        node.receive(digest([DigestEntry(author: author.nodeID, minSeq: 1, maxSeq: 6, missing: [])])[...], from: neighbour.nodeID)
        let answers = transport.digests
        try #require(answers.count == 1)
        #expect(answers[0].0 == neighbour.nodeID)
        #expect(answers[0].1 == low && answers[0].2 == high)
        #expect(answers[0].3.map(\.author) == [author.nodeID])
        #expect(answers[0].3.first.map { [$0.minSeq, $0.maxSeq] } == [1, 5])
        #expect(answers[0].3.first?.missing == [4])
        #expect(node.stats.pullsSent == 1)
        // A second digest at once is not answered again (no ping-pong) …
        node.receive(digest([DigestEntry(author: author.nodeID, minSeq: 1, maxSeq: 6, missing: [])])[...], from: neighbour.nodeID)
        #expect(transport.digests.count == 1)
        // … but one after the pull interval is.
        clock.advance(by: GossipConstants.pullInterval)
        node.receive(digest([DigestEntry(author: author.nodeID, minSeq: 1, maxSeq: 6, missing: [])])[...], from: neighbour.nodeID)
        #expect(transport.digests.count == 2)
    }

    @Test func ourHoleThatTheSenderHoldsIsPulledAndAnAuthorWeNeverHeardOfToo() throws {
        // Same range, but the sender holds 4, which we miss.
        node.receive(digest([DigestEntry(author: author.nodeID, minSeq: 1, maxSeq: 5, missing: [])])[...], from: neighbour.nodeID)
        #expect(transport.digests.count == 1)
        clock.advance(by: GossipConstants.pullInterval)
        let stranger = try Identity(seed: [UInt8](repeating: 11, count: 32)).nodeID
        node.receive(digest([DigestEntry(author: stranger, minSeq: 1, maxSeq: 1, missing: [])])[...], from: neighbour.nodeID)
        #expect(transport.digests.count == 2)
    }

    @Test func aDigestShowingNothingNewIsAnsweredWithRepairsOnly() throws {
        // The sender misses 5 and also lacks 4: it holds nothing we lack.
        node.receive(digest([DigestEntry(author: author.nodeID, minSeq: 1, maxSeq: 3, missing: [])])[...], from: neighbour.nodeID)
        #expect(transport.digests.isEmpty)
        #expect(node.stats.repairsSent == 1)
        node.receive(digest([DigestEntry(author: author.nodeID, minSeq: 1, maxSeq: 5, missing: [4])])[...], from: neighbour.nodeID)
        #expect(transport.digests.isEmpty)
        #expect(node.stats.pullsSent == 0)
    }

    /// The room's host is pinned: every digest lists it, whatever its range,
    /// so a member cut off for a while gets the host's latest (its census)
    /// from the next digest, not after the walk went round 60 authors.
    @Test func aPinnedAuthorIsInEveryDigestAndRepairedWhateverTheRange() throws {
        for n in 0..<60 {
            let other = try Identity(seed: [UInt8](repeating: UInt8(100 + n), count: 32))
            let e = try RoomEvent.make(room: room, author: other, seq: 1, timestamp: 1_700_000_000_000, body: .chat(text: "hi"))
            node.receive(GossipMessage.event(e.encoded[...]).bytes[...], from: neighbour.nodeID)
        }
        node.pinnedAuthors = { [author.nodeID] }
        transport.sent.removeAll()
        for _ in 0..<8 {
            clock.advance(by: GossipConstants.idleDigestInterval)
            node.tick()
        }
        let digests = transport.digests
        #expect(digests.count == 8)
        for d in digests {
            #expect(d.3.first?.author == author.nodeID && d.3.first?.missing == [4])
            #expect(d.3.filter { $0.author == author.nodeID }.count == 1)
            #expect(d.3.count <= GossipConstants.maxDigestEntries)
        }
        // The walk still covers every author.
        #expect(Set(digests.flatMap { $0.3.map(\.author) }).count == 61)
        // A neighbour's digest over a range without the author, whose pinned
        // entry stops at 3: answered with 5 (repair) …
        transport.sent.removeAll()
        let narrow = GossipMessage.digest(after: low, through: [UInt8](repeating: 1, count: 32),
                                          entries: [DigestEntry(author: author.nodeID, minSeq: 1, maxSeq: 3, missing: [])])
        node.receive(narrow.bytes[...], from: neighbour.nodeID)
        #expect(node.stats.repairsSent == 1)
        // … and one whose pinned entry goes to 6 is pulled, our pinned entry in the pull.
        clock.advance(by: GossipConstants.pullInterval)
        let ahead = GossipMessage.digest(after: low, through: [UInt8](repeating: 1, count: 32),
                                         entries: [DigestEntry(author: author.nodeID, minSeq: 1, maxSeq: 6, missing: [])])
        node.receive(ahead.bytes[...], from: neighbour.nodeID)
        #expect(transport.digests.last?.3.first.map { [$0.minSeq, $0.maxSeq] } == [1, 5])
    }
}
