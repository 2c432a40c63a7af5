import Foundation
import LVBCore
import LVBCrypto
@testable import LVBReplay
import LVBTestSupport
import LVBTransport
import Testing

/// Holders tell a rendezvous what they hold; a player lists and finds them.
@Suite struct ReplayDirectoryTests {
    @Test func holdersAreListedAndFoundAndForgottenWhenSilent() throws {
        let (id, dirs) = try ReplayExchangeTests.replay(seconds: 4, holders: 2)
        defer { for d in dirs { try? FileManager.default.removeItem(atPath: d) } }
        let net = VirtualNetwork(seed: 291, defaultImpairment: Impairment(loss: 0, delay: .milliseconds(5)))
        var config = TransportConfig()
        config.hello = Hello(agent: "test", role: .rendezvous)
        let nodes = net.makeNodes(3, seed: 291)
        let rendezvousNode = SimulatedNode(network: net, identity: Identity.generate(), random: SeededRandom(seed: 5), config: config)
        let directory = ReplayDirectory(core: rendezvousNode.core, clock: net.clock)
        rendezvousNode.onTransportEvent = { if case let .message(p, .replay, payload) = $0 { directory.receive(payload, from: p) } }
        var announcers: [ReplayAnnouncer] = []
        for (node, dir) in zip(nodes.prefix(2), dirs) {
            let a = ReplayAnnouncer(library: ReplayLibrary(root: dir), core: node.core, clock: net.clock)
            a.addresses = [node.address]
            node.onTransportEvent = { a.handle($0) }
            announcers.append(a)
            node.core.connect(to: rendezvousNode.address, expecting: rendezvousNode.id)
        }
        let ticks = net.every(.seconds(1)) { for a in announcers { a.tick() }; directory.tick() }
        #expect(net.run(until: { directory.entries[id]?.holders.count == 2 }, timeout: .seconds(5)))
        // A player lists and finds.
        let player = nodes[2]
        var answers: [ReplayListMessage] = []
        player.onTransportEvent = { if case let .message(_, .replay, payload) = $0, let m = try? ReplayListMessage.parse(payload) { answers.append(m) } }
        player.core.connect(to: rendezvousNode.address, expecting: rendezvousNode.id)
        #expect(net.run(until: { player.established(with: rendezvousNode) }, timeout: .seconds(5)))
        try player.core.send(ReplayListMessage.list(request: 7, page: 0).bytes, channel: .replay, to: rendezvousNode.id)
        try player.core.send(ReplayListMessage.find(request: 8, id).bytes, channel: .replay, to: rendezvousNode.id)
        #expect(net.run(until: { answers.count == 2 }, timeout: .seconds(2)))
        guard case let .listed(7, 0, total, 0, 1, replays)? = answers.first else { Issue.record("\(answers)"); return }
        #expect(total == 1 && replays.first?.card.id == id && replays.first?.holders == 2 && replays.first?.card.info.title == "six seconds")
        guard case let .found(8, found, holders)? = answers.last else { Issue.record("\(answers)"); return }
        #expect(found == id && Set(holders.map(\.id)) == Set(nodes.prefix(2).map(\.id)))
        let addressOf = Dictionary(uniqueKeysWithValues: nodes.map { ($0.id, $0.address) })
        #expect(holders.allSatisfy { h in addressOf[h.id].map { h.addresses.contains($0) } == true })
        // The listed replay's room and host (whose signature its thumbnail needs).
        let card = try #require(directory.entries[id]?.card)
        #expect(directory.host(ofRoom: card.info.room) == card.info.host && directory.rooms == [card.info.room])
        // One holder deletes it and says so; the other goes silent and is forgotten after its lifetime.
        try announcers[0].library.delete(id)
        announcers[0].refresh()
        net.run(for: .seconds(2))
        #expect(directory.entries[id]?.holders.keys.map { $0 } == [nodes[1].id])
        nodes[1].crash()
        net.run(for: ReplayDirectory.holderLifetime + .seconds(2))
        #expect(directory.entries[id] == nil)
        #expect(directory.host(ofRoom: card.info.room) == nil && directory.rooms.isEmpty)
        ticks.cancel()
    }

    @Test func aLiveNotEndedIsNotListedAndForgedCardsAreRefused() throws {
        let m = ReplayFormatTests.manifest()
        var open = m
        open.ended = false
        let card = try ReplayManifest.parseWithCard(open.signed(by: ReplayFormatTests.host)[...]).1
        let message = ReplayListMessage.held(card, addresses: [], withdrawn: false).bytes
        // A private room's card is refused by a rendezvous (its host never sends it).
        var privateOne = m
        privateOne.info.isPrivate = true
        let privateCard = try ReplayManifest.parseWithCard(privateOne.signed(by: ReplayFormatTests.host)[...]).1
        #expect(privateCard.info.isPrivate && !card.info.isPrivate)
        let net = VirtualNetwork(seed: 292)
        let node = net.makeNodes(1, seed: 292)[0]
        let directory = ReplayDirectory(core: node.core, clock: net.clock)
        directory.receive(ReplayListMessage.held(privateCard, addresses: [], withdrawn: false).bytes[...], from: ReplayFormatTests.host.nodeID)
        #expect(directory.entries.isEmpty && directory.stats.refused == 1)
        #expect(try ReplayListMessage.parse(message[...]) == .held(card, addresses: [], withdrawn: false))
        // A card whose title was changed after signing does not parse.
        var forged = message
        let title = Array("Evening".utf8)
        let at = try #require((0..<(forged.count - title.count)).first { Array(forged[$0..<($0 + title.count)]) == title })
        forged[at] = UInt8(ascii: "X")
        #expect(throws: ReplayError.self) { try ReplayListMessage.parse(forged[...]) }
        for bad: [UInt8] in [[4], [5, 0, 0], [9], [7, 0, 0, 0, 1] + [UInt8](repeating: 0, count: 15), [8, 0, 0, 0, 1] + [UInt8](repeating: 0, count: 16) + [9]] {
            #expect(throws: ReplayError.self) { try ReplayListMessage.parse(bad[...]) }
        }
    }
}
