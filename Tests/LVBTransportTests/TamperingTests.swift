import LVBCore
import LVBCrypto
import LVBTestSupport
import Testing
@testable import LVBTransport

/// An attacker on the path or off it: flipped bits, bad macs, replays and
/// floods are dropped and counted, and never make a node talk more than it heard.
@Suite struct TamperingTests {
    private func pair(seed: UInt64, config: TransportConfig = TransportConfig()) -> (VirtualNetwork, SimulatedNode, SimulatedNode) {
        let net = VirtualNetwork(seed: seed, defaultImpairment: Impairment(delay: .milliseconds(5)))
        let nodes = net.makeNodes(2, seed: seed &+ 1000, config: config)
        return (net, nodes[0], nodes[1])
    }

    @Test func everyFlippedBitOfATransportPacketIsDroppedAndCounted() throws {
        let (net, host, viewer) = pair(seed: 1)
        viewer.core.connect(to: host.address, expecting: host.id)
        #expect(net.run(until: { host.established(with: viewer) }, timeout: .seconds(1)))
        var captured: [UInt8]?
        host.inboundFilter = { d, _ in
            if captured == nil, d.first == PacketType.transport.rawValue, d.count > MessageSize.transportOverhead {
                captured = d
                return false
            }
            return true
        }
        try viewer.core.send(Array("the real message".utf8), channel: .gossip, to: host.id)
        net.run(for: .milliseconds(20))
        let packet = try #require(captured)
        let deliveredBefore = host.received.count
        let droppedBefore = host.core.stats.droppedTotal
        for bit in 0..<(packet.count * 8) {
            var bad = packet
            bad[bit / 8] ^= 1 << UInt8(bit % 8)
            host.core.receive(bad, from: viewer.address)
        }
        #expect(host.received.count == deliveredBefore)
        #expect(host.core.stats.droppedTotal - droppedBefore == packet.count * 8)
        // The genuine packet still gets through afterwards (the window was not moved).
        host.core.receive(packet, from: viewer.address)
        #expect(host.received.last.map { String(decoding: $0.2, as: UTF8.self) } == "the real message")
    }

    @Test func aWrongMac1GetsNoAnswerAtAll() throws {
        let (net, host, viewer) = pair(seed: 2)
        var initiation: [UInt8]?
        host.inboundFilter = { d, _ in
            if d.first == PacketType.ikInitiation.rawValue, initiation == nil { initiation = d; return false }
            return true
        }
        viewer.core.connect(to: host.address, expecting: host.id)
        net.run(for: .milliseconds(20))
        var bad = try #require(initiation)
        bad[bad.count - 20] ^= 0x01  // inside mac1
        let sentBefore = host.core.stats.datagramsOut
        host.core.receive(bad, from: viewer.address)
        #expect(host.core.stats.droppedMAC1 == 1)
        #expect(host.core.stats.datagramsOut == sentBefore)
    }

    @Test func aReplayedInitiationIsIgnored() throws {
        let (net, host, viewer) = pair(seed: 3)
        var initiation: [UInt8]?
        host.inboundFilter = { d, _ in
            if d.first == PacketType.ikInitiation.rawValue, initiation == nil { initiation = d }
            return true
        }
        viewer.core.connect(to: host.address, expecting: host.id)
        #expect(net.run(until: { host.established(with: viewer) }, timeout: .seconds(1)))
        let sentBefore = host.core.stats.datagramsOut
        host.core.receive(try #require(initiation), from: PeerAddress.ipv4(192, 0, 2, 66, port: 9))
        #expect(host.core.stats.droppedReplayedInitiation == 1)
        #expect(host.core.stats.datagramsOut == sentBefore)
        #expect(host.established(with: viewer))
    }

    @Test func anUnauthenticatedFloodNeverMakesTheNodeSendMoreThanItReceived() throws {
        var config = TransportConfig()
        config.underLoadThreshold = 50
        let (net, host, viewer) = pair(seed: 4, config: config)
        let attacker = PeerAddress.ipv4(198, 51, 100, 7, port: 4444)
        let random = SeededRandom(seed: 99)
        // Genuine-looking initiations the attacker recorded, and fresh XX ones.
        var recorded: [[UInt8]] = []
        host.inboundFilter = { d, _ in
            if d.first == PacketType.ikInitiation.rawValue || d.first == PacketType.xxInitiation.rawValue { recorded.append(d) }
            return true
        }
        viewer.core.connect(to: host.address, expecting: host.id)
        net.run(for: .milliseconds(50))
        let xxDialler = net.makeNodes(1, seed: 5)[0]
        xxDialler.core.connect(to: host.address, expecting: nil)
        net.run(for: .milliseconds(50))
        host.inboundFilter = nil
        let bytesInBefore = host.core.stats.bytesIn
        let bytesOutBefore = host.core.stats.bytesOut
        for i in 0..<20_000 {
            var d: [UInt8]
            switch i % 4 {
            case 0: d = random.bytes(Int(random.uint32() % 1300))
            case 1: d = random.bytes(Int(random.uint32() % 200)); if !d.isEmpty { d[0] = UInt8(1 + i % 7) }; if d.count >= 4 { d[1] = 0; d[2] = 0; d[3] = 0 }
            default: d = recorded[i % recorded.count]
            }
            host.core.receive(d, from: attacker)
        }
        let stats = host.core.stats
        let inBytes = stats.bytesIn - bytesInBefore
        let outBytes = stats.bytesOut - bytesOutBefore
        #expect(outBytes <= inBytes)
        #expect(stats.bytesSentToUnauthenticated <= stats.unauthenticatedBytesIn)
        #expect(stats.cookieRepliesSent > 0)  // under load it switched to cookies
        #expect(host.established(with: viewer))
    }

    @Test func underLoadAnHonestInitiatorGetsThroughWithACookie() {
        var config = TransportConfig()
        config.underLoadThreshold = 0  // every initiation must carry mac2
        let (net, host, viewer) = pair(seed: 6, config: config)
        viewer.core.connect(to: host.address, expecting: host.id)
        #expect(net.run(until: { host.established(with: viewer) && viewer.established(with: host) }, timeout: .seconds(12)))
        #expect(host.core.stats.cookieRepliesSent >= 1)
        #expect(host.core.stats.droppedNeedsCookie >= 1)
    }

    @Test func xxUnderLoadAlsoGetsThroughWithACookie() {
        var config = TransportConfig()
        config.underLoadThreshold = 0
        let (net, host, viewer) = pair(seed: 7, config: config)
        viewer.core.connect(to: host.address, expecting: nil)
        #expect(net.run(until: { host.established(with: viewer) && viewer.established(with: host) }, timeout: .seconds(12)))
    }

    @Test func repliesToHandshakesAreNeverLargerThanTheHandshake() {
        #expect(MessageSize.ikResponse <= MessageSize.ikInitiation)
        #expect(MessageSize.xxResponse <= MessageSize.xxInitiation)
        #expect(MessageSize.cookieReply <= MessageSize.ikInitiation)
        #expect(MessageSize.cookieReply <= MessageSize.xxInitiation)
    }
}
