import LVBCore
import LVBCrypto
@testable import LVBGossip
import LVBRoom
import LVBTestSupport
import Testing

/// Gossip neighbours by path (issue 48): a node fills its active view from
/// the passive peers it reaches directly first, and a neighbour whose
/// session runs through a relay gives way to one of those.
@Suite struct DirectNeighbourTests {
    typealias Recorder = AntiEntropyTests.Recorder

    static func id(_ n: UInt8) -> NodeID { (try? Identity(seed: [UInt8](repeating: n, count: 32)))!.nodeID }  // invariant: 32-byte seed
    static func record(_ n: UInt8) -> PeerRecord { PeerRecord(id: id(n), address: PeerAddress(host: .v4(0x0A00_0000 | UInt32(n)), port: 7400)) }

    let clock = ManualClock()
    let transport = Recorder()
    let node: GossipNode

    init() {
        node = GossipNode(id: Self.id(1), transport: transport, kinds: RoomEvents.table, clock: clock, random: SeededRandom(seed: 3))
    }

    func neighbourRequests() -> [NodeID] {
        transport.sent.compactMap { if case .neighbor = $0.1 { $0.0 } else { nil } }
    }

    @Test func aRelayedNeighbourGivesWayToADirectOne() {
        let (relayed, direct, contact, spare) = (Self.id(2), Self.id(3), Self.id(4), Self.id(5))
        node.reachesDirectly = { $0 == relayed ? false : $0 == Self.id(6) ? true : nil }
        node.contact = Self.record(4)
        for peer in [contact, relayed, direct, spare, Self.id(7)] { node.addActive(peer) }  // a full active view
        node.addPassive(Self.record(6))
        transport.sent.removeAll()
        clock.advance(by: .seconds(2))
        node.tick()
        #expect(neighbourRequests() == [Self.id(6)], "asks the directly reached passive peer: \(transport.sent.map(\.1))")
        node.receive(GossipMessage.neighborReply(accepted: true).bytes[...], from: Self.id(6))
        #expect(node.active.contains(Self.id(6)) && !node.active.contains(relayed))
        #expect(node.active.count == 5, "the view as full as before: \(node.active.count)")
        #expect(transport.sent.contains { $0.0 == relayed && $0.1 == .disconnect })
        // At most every 5 s, and not without a direct peer in reserve.
        transport.sent.removeAll()
        clock.advance(by: .seconds(2))
        node.tick()
        #expect(neighbourRequests().isEmpty)
    }

    @Test func repairDrawsFromTheDirectlyReachedFirst() {
        node.reachesDirectly = { $0 == Self.id(9) ? true : false }
        for n: UInt8 in 2...9 { node.addPassive(Self.record(n)) }
        clock.advance(by: .seconds(2))
        node.tick()
        #expect(neighbourRequests().first == Self.id(9), "\(neighbourRequests())")
    }

    /// A view short of full but at its minimum asks at low priority; where
    /// every view is full each ask is refused, and each costs a session (a
    /// relayed one, behind NATs): it waits longer after each refusal, up to
    /// 30 s, and asks at once again when a neighbour goes.
    @Test func refusedAsksBackOff() {
        node.reachesDirectly = { _ in true }
        for n: UInt8 in 2...4 { node.addActive(Self.id(n)) }  // three of five: above the minimum
        for n: UInt8 in 10...29 { node.addPassive(Self.record(n)) }
        var asks: [Int] = []
        for second in 0..<120 {
            clock.advance(by: .seconds(1))
            transport.sent.removeAll()
            node.tick()
            for peer in neighbourRequests() {
                asks.append(second)
                node.receive(GossipMessage.neighborReply(accepted: false).bytes[...], from: peer)
            }
        }
        // Without the back-off: about 240 asks (two free places, every second).
        #expect(asks.count <= 16, "asked \(asks.count) times: \(asks)")
        let gaps = zip(asks.dropFirst(), asks).map { $0 - $1 }
        #expect(gaps.suffix(3).allSatisfy { $0 >= 16 }, "the gaps grow to about 30 s: \(gaps)")
        // A neighbour goes: asked at once.
        transport.sent.removeAll()
        node.peerDown(Self.id(2))
        #expect(!neighbourRequests().isEmpty)
    }
}
