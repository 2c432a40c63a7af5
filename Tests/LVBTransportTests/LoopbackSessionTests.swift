import LVBCore
import LVBCrypto
import NIOConcurrencyHelpers
import NIOPosix
import Testing
@testable import LVBTransport

/// Sessions over real loopback UDP sockets in one process: two nodes, a
/// five-node mesh, and a pair through the impairment relay at 20% loss.
@Suite struct LoopbackSessionTests {
    /// A node on a real socket with its events collected thread-safely.
    final class LiveNode: Sendable {
        let node: UDPNode
        let events: NIOLockedValueBox<[TransportEvent]>
        var id: NodeID { node.core.nodeID }
        var address: PeerAddress { node.localAddress }

        init(node: UDPNode, events: NIOLockedValueBox<[TransportEvent]>) {
            self.node = node
            self.events = events
        }

        static func start() async throws -> LiveNode {
            let box = NIOLockedValueBox<[TransportEvent]>([])
            let node = try await UDPNode.start(identity: Identity.generate(), listen: .ipv4(127, 0, 0, 1, port: 0),
                                               group: MultiThreadedEventLoopGroup.singleton) { e in
                box.withLockedValue { $0.append(e) }
            }
            return LiveNode(node: node, events: box)
        }

        func established(with other: LiveNode) async -> Bool {
            let otherID = other.id
            return (try? await node.submit { $0.isEstablished(with: otherID) }) ?? false
        }

        var messages: [[UInt8]] {
            events.withLockedValue { $0.compactMap { if case let .message(_, _, p) = $0 { Array(p) } else { nil } } }
        }
    }

    /// Polls `condition` until it holds or `seconds` pass (generous: machines are shared).
    static func eventually(_ seconds: Double = 20, _ condition: () async -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return await condition()
    }

    @Test func twoNodesEstablishAndExchangeData() async throws {
        let host = try await LiveNode.start()
        let viewer = try await LiveNode.start()
        let hostID = host.id, hostAddress = host.address
        viewer.node.execute { $0.connect(to: hostAddress, expecting: hostID) }
        #expect(await Self.eventually { await viewer.established(with: host) })
        #expect(await Self.eventually { await host.established(with: viewer) })
        try await viewer.node.submit { try $0.send(Array("over real UDP".utf8), channel: .gossip, to: hostID) }
        #expect(await Self.eventually { host.messages.contains(Array("over real UDP".utf8)) })
        await viewer.node.close()
        // The bye ends the host's session at once, not after 15 s of silence.
        #expect(await Self.eventually(5) {
            let up = await host.established(with: viewer)
            return !up
        })
        await host.node.close()
    }

    @Test func fiveNodesFormAFullMeshOfSessions() async throws {
        var nodes: [LiveNode] = []
        for _ in 0..<5 { nodes.append(try await LiveNode.start()) }
        for (i, a) in nodes.enumerated() {
            for b in nodes[(i + 1)...] {
                let id = b.id, address = b.address
                // Half by ticket (IK), half by bare address (XX).
                a.node.execute { $0.connect(to: address, expecting: i % 2 == 0 ? id : nil) }
            }
        }
        #expect(await Self.eventually {
            for a in nodes {
                for b in nodes where a !== b {
                    let up = await a.established(with: b)
                    if !up { return false }
                }
            }
            return true
        })
        for n in nodes {
            let count = try await n.node.submit { $0.peers.filter(\.established).count }
            #expect(count == 4)
        }
        for n in nodes { await n.node.close() }
    }

    @Test func sessionComesUpThroughTwentyPercentLossEachWay() async throws {
        let host = try await LiveNode.start()
        let viewer = try await LiveNode.start()
        let lossy = Impairment(loss: 0.2, delay: .milliseconds(5), jitter: .milliseconds(5))
        let relay = try await ImpairmentRelay.start(listen: .ipv4(127, 0, 0, 1, port: 0), target: host.address,
                                                    upstream: lossy, downstream: lossy, seed: 42,
                                                    group: MultiThreadedEventLoopGroup.singleton)
        let hostID = host.id, relayAddress = relay.localAddress
        viewer.node.execute { $0.connect(to: relayAddress, expecting: hostID) }
        // Each attempt succeeds with p ≈ 0.8^3; retries every 5 s make it near certain within 60 s.
        #expect(await Self.eventually(60) {
            let a = await viewer.established(with: host)
            let b = await host.established(with: viewer)
            return a && b
        })
        // Data still flows over the lossy path (some of it).
        for i in 0..<50 {
            try await viewer.node.submit { try $0.send([UInt8(i)], channel: .gossip, to: hostID) }
        }
        #expect(await Self.eventually(10) { host.messages.count >= 25 })
        let stats = await relay.stats()
        #expect(stats.upstream.dropped + stats.downstream.dropped > 0)
        await viewer.node.close()
        await host.node.close()
        try await relay.close()
    }
}
