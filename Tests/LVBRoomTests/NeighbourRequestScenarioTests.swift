import LVBCore
@testable import LVBGossip
@testable import LVBRoom
import LVBTestSupport
import Testing

/// A member asks a member it holds no session with to be its gossip
/// neighbour. The session is reached through the host's introduction, so the
/// request cannot wait in a session's queue: it goes again when the session
/// comes up, after the pass. Before, it was lost, and a member whose
/// neighbours crashed could ask one passive peer after another for 15 s.
@Suite struct NeighbourRequestScenarioTests {
    @Test func aRequestMadeBeforeTheSessionArrivesOnceItIsUp() throws {
        let (net, host, viewers) = simRoom(viewers: 12, seed: 2807, loss: 0)
        let all = [host] + viewers
        #expect(net.run(until: { all.allSatisfy { $0.room.state?.census?.count == 13 } }, timeout: .seconds(30)))
        net.run(for: .seconds(10))  // the overlay settles: nobody is asking to join our views meanwhile
        // Two viewers with no session between them, one of them short of neighbours.
        let pair = viewers.lazy.flatMap { a in viewers.lazy.map { (a, $0) } }.first { a, b in
            a !== b && !a.sim.core.knows(b.id) && !b.sim.core.knows(a.id) && !b.room.gossip.active.contains(a.id)
        }
        let (asker, asked) = try #require(pair)
        if asker.room.gossip.active.count >= GossipConstants.activeViewSize, let drop = asker.room.gossip.active.first {
            asker.room.gossip.removeActive(drop)
        }
        asker.room.gossip.requestNeighbor(PeerRecord(id: asked.id, address: asked.sim.address), high: true)
        #expect(asker.sim.core.isReaching(asked.id), "the session is reached through an introduction")
        #expect(net.run(until: { asked.room.gossip.active.contains(asker.id) && asker.room.gossip.active.contains(asked.id) },
                        timeout: .seconds(2)),
                "neighbours: asker \(asker.room.gossip.active.contains(asked.id)), asked \(asked.room.gossip.active.contains(asker.id))")
    }

    /// A member's pass and its first gossip can cross on the way: the gossip
    /// waits for the pass (bounded, 2 s) and is read when it verifies.
    @Test func gossipThatCameBeforeItsSendersPassIsReadWhenThePassComes() throws {
        let (net, host, viewers) = simRoom(viewers: 16, seed: 2809, loss: 0)
        let all = [host] + viewers
        #expect(net.run(until: { all.allSatisfy { $0.room.state?.census?.count == 17 } }, timeout: .seconds(30)))
        net.run(for: .seconds(5))
        let pair = viewers.lazy.flatMap { a in viewers.lazy.map { (a, $0) } }.first { a, b in
            a !== b && !a.sim.core.knows(b.id) && !b.sim.core.knows(a.id)
        }
        let (asker, asked) = try #require(pair)
        // A high-priority request (accepted even by a full view) reaches
        // the asked before the asker's pass does.
        asked.room.handle(.message(asker.id, .gossip, GossipMessage.neighbor(high: true).bytes[...]))
        #expect(!asked.room.hears(asker.id) && asked.room.heldGossip[asker.id]?.payloads.count == 1)
        asker.sim.core.connect(to: asked.sim.address, expecting: asked.id)
        #expect(net.run(until: { asked.room.gossip.active.contains(asker.id) }, timeout: .seconds(1)),
                "held: \(asked.room.heldGossip[asker.id]?.payloads.count ?? 0), hears: \(asked.room.hears(asker.id))")
        #expect(asked.room.heldGossip.isEmpty)
    }
}
