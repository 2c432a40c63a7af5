import LVBCore
import LVBCrypto
import LVBGossip
import LVBRoom
import LVBTestSupport
import LVBTransport
import Testing

/// The room channel between nodes of different versions, and leaves that
/// reach everyone although the leaver's sessions end right after.
@Suite struct RoomMessageScenarioTests {
    @Test func aRoomMessageOfAnUnknownTypeFromANewerPeerIsCountedAndCostsNothing() throws {
        let (net, host, viewers) = simRoom(viewers: 1, seed: 21, loss: 0)
        #expect(net.run(until: { viewers[0].room.isAdmitted }, timeout: .seconds(10)))
        // A newer node's message types: far more of them than it takes to be
        // disconnected for misbehaviour (RoomConstants.disconnectAfterInvalid).
        for n in 0..<50 { try viewers[0].sim.core.send([200 + UInt8(n % 50), 1, 2, 3], channel: .room, to: host.id) }
        net.run(for: .seconds(2))
        #expect(host.room.unknownRoomMessages == 50)
        #expect(host.room.penalties == 0)
        #expect(host.sim.core.isEstablished(with: viewers[0].id))
        // Its standing is intact: its chat still reaches the host.
        try viewers[0].room.chat("still welcome")
        net.run(for: .seconds(2))
        #expect(host.chats == ["still welcome"])
    }

    @Test func aMalformedMessageOfAKnownTypeStillCostsStanding() throws {
        let (net, host, viewers) = simRoom(viewers: 1, seed: 22, loss: 0)
        #expect(net.run(until: { viewers[0].room.isAdmitted }, timeout: .seconds(10)))
        // Leave acks with trailing bytes: a known type, a broken layout.
        for _ in 0..<(RoomConstants.disconnectAfterInvalid + 1) {
            try viewers[0].sim.core.send([RoomMessage.Kind.leaveAck.rawValue] + [UInt8](repeating: 0, count: 9), channel: .room, to: host.id)
        }
        net.run(for: .seconds(2))
        #expect(host.room.unknownRoomMessages == 0)
        #expect(host.room.penalties == RoomConstants.disconnectAfterInvalid + 1)
    }

    /// Everyone leaves one after the other on a link losing 20 % of packets,
    /// closing its sessions (bye) as soon as its leave is acknowledged or
    /// the bounded wait ends: every remaining member sees every leave.
    @Test(arguments: [23, 24, 25, 26, 27] as [UInt64])
    func everyMemberSeesEveryLeaveAtTwentyPercentLoss(seed: UInt64) throws {
        let (net, host, viewers) = simRoom(viewers: 5, seed: seed, loss: 0.2)
        // Handshakes retry every 5 s: at 20 % loss one can take a while.
        #expect(net.run(until: { viewers.allSatisfy(\.room.isAdmitted) }, timeout: .seconds(60)))
        net.run(for: .seconds(5))
        try viewers[0].room.chat("bye all")
        var remaining = [host] + viewers
        for leaver in viewers.prefix(4) {
            leaver.room.leave()
            _ = net.run(until: { leaver.room.leaveSettled }, timeout: RoomConstants.leaveWait)
            // Every member still running acknowledged. An earlier leaver may
            // still be awaited (until the wait ends) when its bye was lost and
            // its leave had not reached this one yet: it cannot answer, and
            // waiting for it costs only the bounded wait (1 run in ~120 here).
            let running = Set(remaining.map(\.id))
            let unanswered = leaver.room.departureAwaiting.filter { running.contains($0) }
            let info = unanswered.map { id in
                let n = ([host] + viewers).first { $0.id == id }!
                let mine = leaver.sim.core.peers.first { $0.id == id }, theirs = n.sim.core.peers.first { $0.id == leaver.id }
                return "\(id.short) phase \(n.room.phase) est \(n.sim.core.isEstablished(with: leaver.id)) member \(n.room.state?.members.contains { $0.id == leaver.id } ?? false) unknown \(n.room.unknownRoomMessages) pen \(n.room.penalties); "
                    + "leaver's side: \(mine.map { "\($0.endpoint) keys \($0.keyAge.map { "\($0)" } ?? "-") initiated \($0.initiatedCurrentKeys)" } ?? "none"), "
                    + "its side: \(theirs.map { "\($0.endpoint) keys \($0.keyAge.map { "\($0)" } ?? "-") initiated \($0.initiatedCurrentKeys)" } ?? "none"), "
                    + "in \(n.sim.core.stats.messagesIn) leaver out \(leaver.sim.core.stats.messagesOut)"
            }
            #expect(unanswered.isEmpty, "\(leaver.id.short) not acknowledged by every running member in time: \(info)")
            leaver.sim.core.close()
            leaver.crash()
            remaining.removeAll { $0 === leaver }
            net.run(for: .milliseconds(500))
        }
        net.run(for: .seconds(5))
        let leavers = Set(viewers.prefix(4).map(\.id))
        for n in remaining {
            // Nobody stays listed as a ghost, and everyone who had seen a
            // leaver present saw it leave (not time out).
            let present = Set(n.room.state?.members.map(\.id) ?? [])
            #expect(present.isDisjoint(with: leavers), "\(n.id.short) still lists \(present.intersection(leavers).count) leavers")
            let seen = Set(n.changes.compactMap { if case let .joined(id, _) = $0 { id } else { nil } }).intersection(leavers)
            let left = Set(n.changes.compactMap { if case let .left(id, 0) = $0 { id } else { nil } })
            #expect(left == seen, "\(n.id.short) saw \(left.count) of \(seen.count) leaves")
            #expect(seen.count >= 3, "\(n.id.short) knew only \(seen.count) of the 4 leavers")
            #expect(n.chats.contains("bye all"))
        }
    }
}
