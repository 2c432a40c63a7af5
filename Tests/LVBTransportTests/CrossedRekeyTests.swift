import LVBCore
import LVBTestSupport
@testable import LVBTransport
import Testing

/// Both ends of a running session rekeying at once (keys made together age
/// together): the lower id yields, as at a simultaneous open, so the pair
/// ends under one set of keys and data flows both ways throughout.
@Suite struct CrossedRekeyTests {
    @Test func crossedRekeysEndUnderOneSetOfKeysAndKeepCarrying() throws {
        var gaps: [String] = []
        var handshakes = 0, crossed = 0
        for seed in UInt64(300)..<UInt64(340) {
            let net = VirtualNetwork(seed: seed, defaultImpairment: Impairment(loss: 0.2, delay: .milliseconds(10), jitter: .milliseconds(5)))
            let nodes = net.makeNodes(2, seed: seed)
            nodes[1].core.connect(to: nodes[0].address, expecting: nodes[0].id)
            guard net.run(until: { nodes[0].established(with: nodes[1]) && nodes[1].established(with: nodes[0]) }, timeout: .seconds(60)) else { continue }
            net.run(for: .seconds(1))
            let before = nodes.map(\.core.stats.handshakesCompleted).reduce(0, +)
            for (n, other) in [(nodes[0], nodes[1]), (nodes[1], nodes[0])] {
                if let p = n.core.peersByID[other.id] { n.core.startInitiation(p, firstAttempt: net.clock.now()) }
            }
            for w in 0..<20 {
                let counts = (nodes[0].received.count, nodes[1].received.count)
                for _ in 0..<10 {
                    try? nodes[0].core.send([1], channel: .gossip, to: nodes[1].id)
                    try? nodes[1].core.send([2], channel: .gossip, to: nodes[0].id)
                    net.run(for: .milliseconds(50))
                }
                if nodes[0].received.count == counts.0 || nodes[1].received.count == counts.1 {
                    gaps.append("seed \(seed) window \(w)")
                }
            }
            handshakes += nodes.map(\.core.stats.handshakesCompleted).reduce(0, +) - before
            // Each side under keys it initiated: crossed.
            let both = [(nodes[0], nodes[1]), (nodes[1], nodes[0])].allSatisfy { n, o in n.core.peersByID[o.id]?.current?.isInitiator == true }
            if both { crossed += 1 }
        }
        #expect(gaps.isEmpty, "\(gaps.count) half-second windows with nothing delivered one way: \(gaps.prefix(8))")
        // Crossed, each side's own keys never carry the other's data, so both
        // rekey again together every rekeyTimeout (before the fix: 14 of 40
        // pairs still crossed after 10 s, 220 handshake steps in all).
        #expect(crossed == 0, "\(crossed) of 40 pairs still each under keys of their own after 10 s")
        #expect(handshakes <= 40 * 4, "\(handshakes) handshake steps after the crossing")
    }
}
