import LVBCore
import LVBCrypto
import LVBTestSupport
import Testing
@testable import LVBTransport

/// Session timers on the manual clock: what a peer observes at 5, 10, 15,
/// 90, 120 and 180 seconds (man/lvbnode-protocol.7 §TIMERS).
@Suite struct TimerScenarioTests {
    static let link = Impairment(delay: .milliseconds(10))

    private func pair(seed: UInt64) -> (VirtualNetwork, SimulatedNode, SimulatedNode) {
        let net = VirtualNetwork(seed: seed, defaultImpairment: Self.link)
        let nodes = net.makeNodes(2, seed: seed &+ 100)
        nodes[1].core.connect(to: nodes[0].address, expecting: nodes[0].id)
        let up = net.run(until: { nodes[0].established(with: nodes[1]) && nodes[1].established(with: nodes[0]) }, timeout: .seconds(1))
        #expect(up)
        return (net, nodes[0], nodes[1])
    }

    private static func isHandshake(_ d: [UInt8]) -> Bool {
        guard let t = d.first else { return false }
        return t != PacketType.transport.rawValue
    }

    @Test func initiatorRekeysAfter120Seconds() throws {
        let (net, host, viewer) = pair(seed: 1)
        var rekeyedAt: [Instant] = []
        let start = net.clock.now()
        let before = viewer.events.count
        net.run(for: .seconds(119))
        #expect(viewer.events[before...].allSatisfy { if case .rekeyed = $0 { false } else { true } })
        net.run(for: .seconds(2))
        for e in viewer.events[before...] { if case .rekeyed = e { rekeyedAt.append(net.clock.now()) } }
        #expect(rekeyedAt.count == 1)
        #expect(try #require(viewer.core.peers.first?.keyAge) < .seconds(2))
        // The session carried on through the rekey: still up, data still flows.
        try viewer.core.send([7], channel: .gossip, to: host.id)
        net.run(for: .milliseconds(50))
        #expect(host.received.last?.2 == [7])
        #expect(net.clock.now() - start >= .seconds(120))
    }

    @Test func sessionSurvivesTenMinutesIdleThroughKeepalivesAndRekeys() {
        let (net, host, viewer) = pair(seed: 2)
        net.run(for: .seconds(600))
        #expect(host.established(with: viewer) && viewer.established(with: host))
        #expect(host.goneEvents.isEmpty && viewer.goneEvents.isEmpty)
        // Keepalives every 10 s idle each way, plus rekeys: about 60 + a few.
        #expect(host.core.stats.datagramsOut >= 60 && host.core.stats.datagramsOut < 200)
    }

    @Test func keysOlderThan180SecondsAcceptNothing() throws {
        let (net, host, viewer) = pair(seed: 3)
        // An on-path attacker eats every handshake so no rekey can succeed.
        host.inboundFilter = { d, _ in !Self.isHandshake(d) }
        viewer.inboundFilter = { d, _ in !Self.isHandshake(d) }
        net.run(for: .seconds(170))
        // Capture two sealed datagrams under the old keys without delivering them.
        var captured: [[UInt8]] = []
        host.inboundFilter = { d, _ in
            if d.first == PacketType.transport.rawValue, captured.count < 2 { captured.append(d); return false }
            return !Self.isHandshake(d)
        }
        try viewer.core.send([1], channel: .gossip, to: host.id)
        try viewer.core.send([2], channel: .gossip, to: host.id)
        net.run(for: .milliseconds(50))
        #expect(captured.count == 2)
        host.inboundFilter = nil
        host.core.receive(captured[0], from: viewer.address)
        #expect(host.received.last?.2 == [1])
        net.run(for: .seconds(10))  // past 180 s since the keys were made
        let expiredBefore = host.core.stats.droppedExpired + host.core.stats.droppedUnknownIndex
        host.core.receive(captured[1], from: viewer.address)
        #expect(host.received.last?.2 == [1])
        #expect(host.core.stats.droppedExpired + host.core.stats.droppedUnknownIndex == expiredBefore + 1)
    }

    @Test func handshakeRetriesSoonThenEveryFiveSecondsAndGivesUpAfter90() {
        let net = VirtualNetwork(seed: 4, defaultImpairment: Self.link)
        let nodes = net.makeNodes(2, seed: 44)
        nodes[0].crash()  // nobody answers
        var sentAt: [Instant] = []
        nodes[1].inboundFilter = nil
        let viewer = nodes[1]
        let start = net.clock.now()
        viewer.core.connect(to: nodes[0].address, expecting: nodes[0].id)
        var last = viewer.core.stats.datagramsOut
        sentAt.append(start)
        for _ in 0..<1200 {
            net.run(for: .milliseconds(100))
            if viewer.core.stats.datagramsOut != last {
                last = viewer.core.stats.datagramsOut
                sentAt.append(net.clock.now())
            }
        }
        // With no session yet, each retry waits as long as the handshake has
        // been tried so far (at least 250 ms, at most 5 s), plus up to an
        // eighth (at most 333 ms at 5 s), seen at the 100 ms tick.
        for (attempt, gap) in zip(sentAt, zip(sentAt.dropFirst(), sentAt).map { $0 - $1 }) {
            let wait = min(.seconds(5), max(.milliseconds(250), attempt - start))
            #expect(gap >= wait && gap <= min(wait + wait / 8, .milliseconds(5_333)) + .milliseconds(100),
                    "retry \(gap) after an attempt \(attempt - start) in")
        }
        #expect(sentAt.dropFirst().first.map { $0 - start <= .milliseconds(400) } == true)
        // 0, 0.25, 0.5, 1, 2, 4 and 8 s, then every 5 to 5.4 s until 90 s: 22 to 24 in all, then silence.
        #expect(sentAt.count >= 22 && sentAt.count <= 24, "\(sentAt.count) attempts")
        #expect(sentAt.last.map { $0 - start <= .seconds(90) } == true)
        #expect(viewer.events.contains { if case .connectFailed = $0 { true } else { false } })
    }

    @Test func peerIsGoneAfter15SecondsOfSilence() {
        let (net, host, viewer) = pair(seed: 5)
        net.run(for: .seconds(3))
        viewer.crash()
        let crashedAt = net.clock.now()
        var goneAt: Instant?
        _ = net.run(until: {
            if goneAt == nil, !host.goneEvents.isEmpty { goneAt = net.clock.now() }
            return goneAt != nil
        }, timeout: .seconds(30))
        let gone = try? #require(goneAt)
        #expect(host.goneEvents.first?.1 == .silence)
        // Silence is measured from the last packet heard (up to 10 s before the crash).
        #expect(gone.map { $0 - crashedAt <= .seconds(15) + .milliseconds(200) && $0 - crashedAt >= .seconds(5) } == true)
        #expect(host.core.peers.isEmpty)
    }

    @Test func aDialledHostThatReturnsIsReconnected() {
        let (net, host, viewer) = pair(seed: 6)
        net.isolate(host.address)
        net.run(for: .seconds(20))
        #expect(viewer.goneEvents.first?.1 == .silence)
        net.rejoin(host.address)
        #expect(net.run(until: { viewer.established(with: host) && host.established(with: viewer) }, timeout: .seconds(10)))
    }
}
