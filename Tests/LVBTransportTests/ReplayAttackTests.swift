import LVBCore
import LVBCrypto
import LVBTestSupport
import LVBTransport
import Testing

/// An attacker on the path records a session's datagrams and plays them back:
/// nothing is delivered twice, and every replay is counted as one.
@Suite struct ReplayAttackTests {
    @Test func replayingTenThousandCapturedDatagramsDeliversNothing() throws {
        let count = 10_000
        let net = VirtualNetwork(seed: 11)
        let nodes = net.makeNodes(2, seed: 12)
        let (sender, receiver) = (nodes[0], nodes[1])
        sender.core.connect(to: receiver.address, expecting: receiver.id)
        try #require(net.run(until: { sender.established(with: receiver) && receiver.established(with: sender) },
                             timeout: .seconds(1)))
        net.run(for: .milliseconds(50))   // hello and ping/pong settle

        var captured: [(datagram: [UInt8], from: PeerAddress)] = []
        let core = receiver.core
        receiver.endpoint.onReceive = { datagram, from in
            captured.append((datagram, from))
            core.receive(datagram, from: from)
        }
        let receivedBefore = receiver.received.count
        for i in 0..<count {
            var w = ByteWriter(capacity: 8)
            w.write(UInt64(i))
            try sender.core.send(w.bytes, channel: .gossip, to: receiver.id)
        }
        net.run(for: .milliseconds(50))

        let delivered = receiver.received.dropFirst(receivedBefore)
        #expect(delivered.count == count)
        #expect(delivered.map(\.1).allSatisfy { $0 == .gossip })
        let gossipSize = MessageSize.transportOverhead + 1 + 8
        let gossip = captured.filter { $0.datagram.count == gossipSize && $0.datagram.first == PacketType.transport.rawValue }
        #expect(gossip.count == count)

        let statsBefore = core.stats
        #expect(statsBefore.droppedReplay == 0)
        let receivedAfterFirstPass = receiver.received.count
        for (datagram, from) in gossip {
            core.receive(datagram, from: from)
        }
        #expect(receiver.received.count == receivedAfterFirstPass)
        // Most are behind the window by now, the last 8,128 are inside it: all are replays.
        #expect(core.stats.droppedReplay == count)
        #expect(core.stats.messagesIn == statsBefore.messagesIn)
        #expect(core.stats.droppedTotal - statsBefore.droppedTotal == count)
        // The session is unharmed: fresh traffic still flows.
        try sender.core.send([0xFE], channel: .gossip, to: receiver.id)
        net.run(for: .milliseconds(50))
        #expect(receiver.received.last?.2 == [0xFE])
        #expect(receiver.established(with: sender))
    }
}
