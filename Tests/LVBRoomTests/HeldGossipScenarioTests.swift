import LVBCore
@testable import LVBGossip
@testable import LVBRoom
import LVBTestSupport
import Testing

/// A member's gossip that reaches a peer before its pass is held, not dropped.
@Suite struct HeldGossipScenarioTests {
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
