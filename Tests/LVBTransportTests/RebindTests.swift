import LVBCore
import LVBCrypto
import Testing
@testable import LVBTransport

/// A node that moved (`AddressChange`) takes a new socket when the system
/// picked its port: the session goes on from the new port both ways (the
/// peer roams to it on the first authenticated datagram).
@Suite struct RebindTests {
    typealias LiveNode = LoopbackSessionTests.LiveNode

    @Test func aMovedNodeTakesANewSocketAndItsSessionFollows() async throws {
        let host = try await LiveNode.start()
        let viewer = try await LiveNode.start()
        let hostID = host.id, viewerID = viewer.id, hostAddress = host.address
        viewer.node.execute { $0.connect(to: hostAddress, expecting: hostID) }
        #expect(await LoopbackSessionTests.eventually { await host.established(with: viewer) })
        let before = try await host.node.submit { $0.endpoint(of: viewerID) }
        viewer.node.execute { $0.moved(from: .ipv4(198, 18, 0, 1, port: 1), to: .ipv4(198, 18, 0, 2, port: 1)) }
        #expect(await LoopbackSessionTests.eventually { (try? await viewer.node.submit { $0.stats.socketsRebound }) == 1 })
        // The host follows the viewer to its new port; data flows both ways.
        #expect(await LoopbackSessionTests.eventually {
            let now = try? await host.node.submit { $0.endpoint(of: viewerID) }
            return now != nil && now != before
        })
        try await viewer.node.submit { try $0.send(Array("from the new port".utf8), channel: .gossip, to: hostID) }
        try await host.node.submit { try $0.send(Array("to the new port".utf8), channel: .gossip, to: viewerID) }
        #expect(await LoopbackSessionTests.eventually { host.messages.contains(Array("from the new port".utf8)) })
        #expect(await LoopbackSessionTests.eventually { viewer.messages.contains(Array("to the new port".utf8)) })
        let after = try await host.node.submit { $0.endpoint(of: viewerID) }
        print("rebind: the host sees the viewer at \(before.map(String.init(describing:)) ?? "?"), then \(after.map(String.init(describing:)) ?? "?")")
    }
}
