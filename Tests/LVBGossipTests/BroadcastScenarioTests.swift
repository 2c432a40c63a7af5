import LVBCore
import LVBCrypto
@testable import LVBGossip  // a failure shows each node's held ranges
import LVBRoom
import LVBTestSupport
import LVBTransport
import Testing

/// Gossip among many nodes on the virtual network: every event reaches every
/// live node, about once each, through loss, reordering and node failures.
@Suite struct BroadcastScenarioTests {
    static let lossy = Impairment(loss: 0.2, delay: .milliseconds(15), jitter: .milliseconds(10),
                                  reorder: 0.1, reorderDelay: .milliseconds(30))

    /// A room of `count` nodes where everyone joined through node 0 (the host).
    private func room(_ count: Int, seed: UInt64, impairment: Impairment) -> (VirtualNetwork, [GossipSimNode]) {
        let net = VirtualNetwork(seed: seed, defaultImpairment: impairment)
        let nodes = net.makeGossipNodes(count, seed: seed)
        for n in nodes.dropFirst() {
            n.gossip.join(via: nodes[0].record)
            net.run(for: .milliseconds(100))
        }
        // Handshakes through loss can take a retry or two (5 s each): wait
        // until the overlay has formed before measuring the broadcast.
        let formed = net.run(until: {
            nodes.allSatisfy { n in n.gossip.active.count >= 2 && n.gossip.active.allSatisfy { n.node.core.isEstablished(with: $0) } }
        }, timeout: .seconds(90))
        #expect(formed)
        net.run(for: .seconds(2))
        return (net, nodes)
    }

    private func chat(_ author: GossipSimNode, identity: Identity, seq: UInt64, room: RoomID, net: VirtualNetwork) throws -> RoomEvent {
        try RoomEvent.make(room: room, author: identity, seq: seq, timestamp: 1_700_000_000_000 + seq,
                           body: .chat(text: "message \(seq) from \(author.id.short)"))
    }

    /// Broadcasts `count` chats from random live authors, one every 10 ms;
    /// `beforeEach` may kill nodes. Returns (event, author index, sent after the kill).
    private func broadcast(_ count: Int, nodes: [GossipSimNode], net: VirtualNetwork, seed: UInt64,
                           kill: (at: Int, victims: Int)? = nil, settle: Duration = .seconds(20),
                           dead: inout Set<Int>) throws -> [(EventID, Int, Bool)] {
        let roomID = RoomID.random(SeededRandom(seed: seed))
        let pick = SeededRandom(seed: seed &+ 1)
        var seqs = [UInt64](repeating: 0, count: nodes.count)
        var sent: [(EventID, Int, Bool)] = []
        for i in 0..<count {
            if let kill, i == kill.at {
                // Kill some of the room (never the host) without a word.
                while dead.count < kill.victims {
                    let victim = 1 + Int(pick.uint64() % UInt64(nodes.count - 1))
                    if dead.insert(victim).inserted { nodes[victim].crash() }
                }
            }
            var a = Int(pick.uint64() % UInt64(nodes.count))
            while dead.contains(a) { a = Int(pick.uint64() % UInt64(nodes.count)) }
            seqs[a] += 1
            let e = try RoomEvent.make(room: roomID, author: nodes[a].node.core.identity, seq: seqs[a],
                                       timestamp: 1_700_000_000_000 + UInt64(i), body: .chat(text: "message \(i) from \(nodes[a].id.short)"))
            nodes[a].gossip.broadcast(e)
            sent.append((e.id, a, kill.map { i >= $0.at } ?? false))
            net.run(for: .milliseconds(10))
        }
        net.run(for: settle)
        return sent
    }

    /// Events of `sent` (filtered by `include`) that some live node lacks.
    private func missing(_ sent: [(EventID, Int, Bool)], nodes: [GossipSimNode], dead: Set<Int>,
                         include: ((EventID, Int, Bool)) -> Bool) -> [String] {
        var out: [String] = []
        for (i, n) in nodes.enumerated() where !dead.contains(i) {
            for s in sent where s.1 != i && include(s) && n.delivered[s.0] == nil {
                out.append("node \(i) lacks \(s.0.author.short)#\(s.0.seq)")
            }
        }
        return out
    }

    /// For a failure message: the neighbours of each author some node lacks an event of.
    private func views(_ sent: [(EventID, Int, Bool)], nodes: [GossipSimNode], dead: Set<Int>) -> String {
        let index = Dictionary(uniqueKeysWithValues: nodes.enumerated().map { ($0.element.id, $0.offset) })
        let authors = Set(sent.filter { s in nodes.enumerated().contains { !dead.contains($0.offset) && $0.offset != s.1 && $0.element.delivered[s.0] == nil } }.map(\.1))
        return authors.sorted().map { a in
            let holders = nodes.indices.filter { nodes[$0].gossip.active.contains(nodes[a].id) }
            let ranges = ([a] + holders).map { "\($0): \(nodes[$0].gossip.store.authors[nodes[a].id]?.ranges ?? [])" }
            return "author \(a): active \(nodes[a].gossip.active.compactMap { index[$0] }), in the active view of \(holders), "
                + "\(nodes[a].gossip.stats), held \(ranges)"
        }.joined(separator: "; ")
    }

    private func copiesPerDelivery(_ nodes: [GossipSimNode], dead: Set<Int>) -> Double {
        let stats = nodes.enumerated().filter { !dead.contains($0.offset) }.map(\.element.gossip.stats)
        let delivered = stats.map(\.delivered).reduce(0, +)
        return Double(stats.map(\.eventCopiesReceived).reduce(0, +)) / Double(max(delivered, 1))
    }

    @Test func fiftyNodesThroughTwentyPercentLossAndReorderingGetEveryOneOfAThousandChats() throws {
        let (net, nodes) = room(50, seed: 2026, impairment: Self.lossy)
        var dead = Set<Int>()
        let sent = try broadcast(1000, nodes: nodes, net: net, seed: 7, settle: .seconds(30), dead: &dead)
        let lacking = missing(sent, nodes: nodes, dead: dead) { _ in true }
        #expect(lacking.count == 0, "e.g. \(lacking.prefix(5)); \(views(sent, nodes: nodes, dead: dead))")
        let copies = copiesPerDelivery(nodes, dead: dead)
        print("gossip, 50 nodes, 20% loss + reordering: \(copies) payload copies per delivered event")
        // Each event crosses each node about once; loss repair adds some.
        #expect(copies < 2.0)
    }

    @Test func whenAQuarterOfTheRoomDiesEverySurvivorStillGetsEveryLaterEvent() throws {
        let (net, nodes) = room(50, seed: 4711, impairment: Self.lossy)
        var dead = Set<Int>()
        // Survivors notice a dead neighbour after 15 s of silence (the session
        // timer), then promote backups: give repair that long and then some.
        let sent = try broadcast(1000, nodes: nodes, net: net, seed: 11, kill: (at: 500, victims: 12),
                                 settle: .seconds(45), dead: &dead)
        #expect(dead.count == 12)
        let later = missing(sent, nodes: nodes, dead: dead) { $0.2 }
        #expect(later.count == 0, "e.g. \(later.prefix(5))")
        // Earlier events by authors who survived also reached everyone (an
        // event its author sent just before dying may never have left it).
        let earlier = missing(sent, nodes: nodes, dead: dead) { !$0.2 && !dead.contains($0.1) }
        #expect(earlier.count == 0, "e.g. \(earlier.prefix(5))")
        print("gossip, 50 nodes, 20% loss, 12 killed: \(copiesPerDelivery(nodes, dead: dead)) payload copies per delivered event")
    }
}
