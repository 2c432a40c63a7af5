import LVBCore
import LVBCrypto
import LVBGossip
@testable import LVBRoom
import LVBTestSupport
import LVBTransport
import TestAssertions
import Testing

/// A pass goes once per session; when it is lost, the member that dropped
/// the peer's traffic for want of it asks for it again (`passWanted`).
@Suite struct PassRepairScenarioTests {
    @Test func aMemberWhosePassWasLostIsAskedForItAndHeardAgain() throws {
        let (net, host, viewers) = simRoom(viewers: 2, seed: 41, loss: 0)
        defer { withExtendedLifetime(host) {} }
        #expect(net.run(until: { viewers.allSatisfy { $0.room.isAdmitted } }, timeout: .seconds(10)))
        let (a, b) = (viewers[0], viewers[1])
        a.sim.core.connect(to: b.sim.address, expecting: b.id)
        #expect(net.run(until: { a.room.hears(b.id) && b.room.hears(a.id) }, timeout: .seconds(5)))
        // The pass `a` showed `b` when their session came up never arrived.
        b.room.verified.remove(a.id)
        #expect(!b.room.hears(a.id))
        // Gossip from `a`: `b` holds it unread, and asks (the pass reads it).
        try a.sim.core.send(GossipMessage.shuffleReply([]).bytes, channel: .gossip, to: b.id)
        net.run(for: .seconds(1))
        #expect(b.room.hears(a.id))
        #expect(b.room.passesWanted == 1)
        #expect(a.room.penalties == 0 && b.room.penalties == 0)
    }

    @Test func askingIsPacedAndAnAnswerIsAPassNothingMore() throws {
        let (net, host, viewers) = simRoom(viewers: 2, seed: 42, loss: 0)
        #expect(net.run(until: { viewers.allSatisfy { $0.room.isAdmitted } }, timeout: .seconds(10)))
        let (a, b) = (viewers[0], viewers[1])
        a.sim.core.connect(to: b.sim.address, expecting: b.id)
        #expect(net.run(until: { a.room.hears(b.id) && b.room.hears(a.id) }, timeout: .seconds(5)))
        b.room.verified.remove(a.id)
        // Ten messages at once: one request (the next would wait 250 ms), one pass back.
        let before = a.sim.core.stats.messagesOut
        for _ in 0..<10 { try a.sim.core.send(GossipMessage.shuffleReply([]).bytes, channel: .gossip, to: b.id) }
        net.run(for: .milliseconds(200))
        #expect(b.room.passesWanted == 1)
        #expect(b.room.hears(a.id))
        // The ten, the pass, at most a keepalive, and at most one request of
        // its own to be introduced (to its backup parent or a neighbour).
        #expect(a.sim.core.stats.messagesOut - before <= 10 + 3)
        // Asked for another room's pass: nothing shown. The host never asks.
        try b.sim.core.send(RoomMessage.passWanted(room: otherRoom).encoded, channel: .room, to: a.id)
        let quiet = a.sim.core.stats.messagesOut
        net.run(for: .milliseconds(50))
        #expect(a.sim.core.stats.messagesOut == quiet)
        host.room.askForPass(of: a.id)
        #expect(host.room.passesWanted == 0)
    }

    @Test func passWantedHasOneLayout() throws {
        let m = RoomMessage.passWanted(room: testRoom)
        #expect(m.encoded.count == 17 && m.encoded.first == RoomMessage.Kind.passWanted.rawValue)
        #expect(try RoomMessage.parse(m.encoded[...]) == m)
        expectError(RoomError.trailingBytes) { () throws(RoomError) in _ = try RoomMessage.parse((m.encoded + [0])[...]) }
        #expect(throws: RoomError.self) { try RoomMessage.parse(m.encoded.dropLast()) }
    }
}
