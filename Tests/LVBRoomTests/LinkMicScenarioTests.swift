import LVBCore
import LVBCrypto
import LVBGossip
import LVBRoom
import LVBTestSupport
import LVBTransport
import Testing

/// Link-mic signalling between real room nodes on the virtual network: the
/// request reaches the host, the answer the viewer, and the whole room learns
/// who is on stage.
@Suite struct LinkMicScenarioTests {
    private func linkMic(_ sim: RoomSim) -> [LinkMicOutput] {
        sim.outputs.compactMap { if case .feature(let o as LinkMicOutput) = $0 { o } else { nil } }
    }

    private func stageChanges(_ sim: RoomSim) -> [RoomChange] {
        sim.changes.filter { if case .stage = $0 { true } else { false } }
    }

    @Test func aViewerAsksTheHostAcceptsAndEveryoneSeesTheCoHostUntilTheHangup() throws {
        let (net, host, viewers) = simRoom(viewers: 3, seed: 41, loss: 0.05)
        #expect(net.run(until: { viewers.allSatisfy(\.room.isAdmitted) }, timeout: .seconds(30)))
        try viewers[0].room.requestLinkMic("let me sing")
        #expect(net.run(until: { !linkMic(host).isEmpty }, timeout: .seconds(5)))
        #expect(linkMic(host) == [.request(viewers[0].id, message: "let me sing")])
        try host.room.acceptLinkMic(viewers[0].id.short)
        #expect(net.run(until: { linkMic(viewers[0]).contains(.accepted) }, timeout: .seconds(5)))
        net.run(for: .seconds(2))
        for n in [host] + viewers {
            #expect(stageChanges(n) == [.stage(viewers[0].id, onStage: true, reason: nil)], "\(n.id.short)")
            #expect(n.room.state?.members.first { $0.id == viewers[0].id }?.onStage == true)
        }
        #expect(host.room.guestsOnStage == [viewers[0].id])
        try host.room.hangUpLinkMic(nil)
        net.run(for: .seconds(2))
        #expect(linkMic(viewers[0]).last == .ended(.hostHungUp))
        for n in [host] + viewers {
            #expect(stageChanges(n).last == .stage(viewers[0].id, onStage: false, reason: .hostHungUp))
        }
    }

    @Test func aForgedAnswerFromAnotherViewerIsRefusedAndCounted() throws {
        let (net, host, viewers) = simRoom(viewers: 2, seed: 42, loss: 0)
        #expect(net.run(until: { viewers.allSatisfy(\.room.isAdmitted) }, timeout: .seconds(30)))
        try viewers[0].room.requestLinkMic("")
        net.run(for: .seconds(1))
        // viewers[1] answers in the host's place (it cannot know the request
        // id, so it tries a few), and also signs one as if it were the host.
        for request in 0..<3 as Range<UInt64> {
            let forged = LinkMicMessage(room: host.room.room, request: request,
                                        body: .answer(guest: viewers[0].id, accepted: true, reason: ""), sender: viewers[1].sim.core.identity)
            try viewers[1].sim.core.send(RoomMessage.linkMic(forged).encoded, channel: .room, to: viewers[0].id)
        }
        net.run(for: .seconds(1))
        #expect(viewers[0].room.linkMicRefused == 3)
        #expect(!linkMic(viewers[0]).contains(.accepted))
        // The host's real answer still works.
        try host.room.acceptLinkMic(viewers[0].id.short)
        #expect(net.run(until: { linkMic(viewers[0]).contains(.accepted) }, timeout: .seconds(5)))
    }

    @Test func aGuestThatLeavesTheRoomLeavesTheStage() throws {
        let (net, host, viewers) = simRoom(viewers: 2, seed: 43, loss: 0)
        #expect(net.run(until: { viewers.allSatisfy(\.room.isAdmitted) }, timeout: .seconds(30)))
        try viewers[0].room.requestLinkMic("")
        net.run(for: .seconds(1))
        try host.room.acceptLinkMic("")
        net.run(for: .seconds(1))
        viewers[0].room.leave()
        net.run(for: .seconds(2))
        #expect(host.room.guestsOnStage.isEmpty)
        #expect(stageChanges(viewers[1]).last == .stage(viewers[0].id, onStage: false, reason: .left))
    }
}
