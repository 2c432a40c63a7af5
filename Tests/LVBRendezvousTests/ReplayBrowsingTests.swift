import Foundation
import LVBCore
import LVBCrypto
import LVBGossip
import LVBReplay
import LVBTestSupport
import LVBTransport
import Testing
@testable import LVBRendezvous

/// A live viewer's room browser lists the replays its rendezvous lists (a
/// studio page shows them after the live rooms) and finds their holders,
/// over the sessions it already has.
@Suite struct ReplayBrowsingTests {
    @Test func aBrowserListsReplaysAfterRoomsFindsTheirHoldersAndIgnoresAnswersFromOthers() throws {
        // A ten-second replay, recorded and ended, in a holder's library.
        let dir = NSTemporaryDirectory() + "lvbreplay-browse-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let host = Identity.generate()
        let room = RoomID.random(SeededRandom(seed: 4))
        let recorder = try ReplayRecorder(library: ReplayLibrary(root: dir), budget: ReplayConstants.defaultBudget, identity: host,
                                          room: room, title: "last night", video: (320, 180), audioChannels: 1, isPrivate: false)
        let random = SeededRandom(seed: 29)
        for n in 0..<300 {
            recorder.video(random.bytes(n % 30 == 0 ? 4000 : 900), keyframe: n % 30 == 0, captureMicros: 1_800_000_000_000_000 + UInt64(n) * 33_333)
        }
        recorder.finish()
        let id = try #require(recorder.id)

        let net = VirtualNetwork(seed: 129, defaultImpairment: Impairment(loss: 0, delay: .milliseconds(10)))
        var config = TransportConfig()
        config.hello = Hello(agent: "test", role: .rendezvous)
        let server = net.makeNodes(1, seed: 130, config: config)[0]
        let service = RendezvousService(core: server.core, clock: net.clock)
        server.recordsEvents = false
        server.onTransportEvent = { service.handle($0) }
        let nodes = net.makeNodes(3, seed: 131)
        let (holderNode, viewer, stranger) = (nodes[0], nodes[1], nodes[2])
        let holding = ReplayHolding(library: ReplayLibrary(root: dir), core: holderNode.core, clock: net.clock, addresses: [holderNode.address])
        holderNode.onTransportEvent = { holding.handle($0) }
        let browser = RoomBrowser(core: viewer.core, clock: net.clock, random: SeededRandom(seed: 7))
        browser.listsReplays = true
        var found: [(ReplayID, [ReplayListMessage.Holder])] = []
        var listed = 0
        browser.onReplayHolders = { found.append(($0, $1)) }
        browser.onListed = { listed += 1 }
        viewer.onTransportEvent = { browser.handle(.transport($0)) }
        let ticks = net.every(.milliseconds(100)) {
            holding.tick()
            browser.tick()
            service.tick()
        }
        defer { ticks.cancel() }
        holderNode.core.connect(to: server.address, expecting: server.id)
        viewer.core.connect(to: server.address, expecting: server.id)
        #expect(net.run(until: { service.replays.entries[id] != nil && !browser.servers.isEmpty }, timeout: .seconds(10)))

        // The first page of rooms brings the first page of replays with it.
        #expect(browser.list(page: 0))
        #expect(net.run(until: { !browser.replays.isEmpty }, timeout: .seconds(5)))
        let entry = try #require(browser.replay(id))
        #expect(entry.holders == 1 && entry.card.info.title == "last night" && entry.card.info.host == host.nodeID)
        #expect(entry.card.durationMs >= 9_900 && entry.card.durationMs <= 10_000)
        #expect(listed >= 2)  // the page of rooms (empty) and the replays

        // Who holds it: the holder, at its address.
        #expect(browser.findReplay(id))
        #expect(net.run(until: { !found.isEmpty }, timeout: .seconds(5)))
        #expect(found.first?.0 == id && found.first?.1.map(\.id) == [holderNode.id])
        #expect(found.first?.1.first?.addresses.contains(holderNode.address) == true)

        // A node that is not the rendezvous cannot empty (or fill) the list.
        stranger.core.connect(to: viewer.address, expecting: viewer.id)
        #expect(net.run(until: { stranger.established(with: viewer) }, timeout: .seconds(5)))
        for request in UInt32(0)...4 {
            try stranger.core.send(ReplayListMessage.listed(request: request, page: 0, total: 0, part: 0, parts: 1, replays: []).bytes,
                                   channel: .replay, to: viewer.id)
            try stranger.core.send(ReplayListMessage.found(request: 0, id, holders: [ReplayListMessage.Holder(id: stranger.id, addresses: [stranger.address])]).bytes,
                                   channel: .replay, to: viewer.id)
        }
        net.run(for: .seconds(1))
        #expect(browser.replay(id) != nil)
        #expect(found.count == 1)
    }
}
