import LVBCore
import LVBTestSupport
import LVBTransport
import Testing

/// Two transport nodes behind NATs, each told the other's external address
/// (as a rendezvous would tell them), dialling each other at the same time.
@Suite("NAT traversal")
struct NATTraversalScenarioTests {
    /// Nodes a and b each behind its own NAT of `behavior`. Each first sends a
    /// probe to a rendezvous outside, which notes the source it sees; then both
    /// connect to the address noted for the other.
    static func dialAtOnce(behind behavior: NATBehavior, seed: UInt64)
        -> (net: VirtualNetwork, a: SimulatedNode, b: SimulatedNode, seen: [PeerAddress]) {
        let net = VirtualNetwork(seed: seed, defaultImpairment: Impairment(delay: .milliseconds(20)))
        let rendezvous = net.makeEndpoint(address: .ipv4(10, 0, 0, 1, port: 3478))
        var seen: [Int: PeerAddress] = [:]
        rendezvous.onReceive = { probe, from in seen[Int(probe[0])] = from }
        let nodes = net.makeNodes(behind: [net.makeNAT(behavior: behavior), net.makeNAT(behavior: behavior)], seed: seed)
        for (i, node) in nodes.enumerated() { node.endpoint.send([UInt8(i)], to: rendezvous.address) }
        net.run(for: .milliseconds(100))
        let (a, b) = (nodes[0], nodes[1])
        a.core.connect(to: [seen[1]!], expecting: b.id)
        b.core.connect(to: [seen[0]!], expecting: a.id)
        return (net, a, b, [seen[0]!, seen[1]!])
    }

    @Test("behind port-restricted cones, dialling each other's observed address at once establishes a session both ways")
    func portRestrictedConesConnect() throws {
        let (net, a, b, seen) = Self.dialAtOnce(behind: .portRestrictedCone, seed: 1)
        #expect(net.run(until: { a.established(with: b) && b.established(with: a) }, timeout: .seconds(5)))
        #expect(a.core.endpoint(of: b.id) == seen[1] && b.core.endpoint(of: a.id) == seen[0])
        try a.core.send([1], channel: .gossip, to: b.id)
        try b.core.send([2], channel: .gossip, to: a.id)
        net.run(for: .milliseconds(100))
        #expect(b.received.map(\.2) == [[1]] && a.received.map(\.2) == [[2]])
    }

    @Test("behind symmetric NATs the same dialling never gets through: each NAT filters the other's new port")
    func symmetricNATsDoNotConnect() {
        let (net, a, b, _) = Self.dialAtOnce(behind: .symmetric, seed: 2)
        net.run(for: .seconds(10))
        #expect(!a.established(with: b) && !b.established(with: a))
        #expect(net.stats.droppedNATFiltered > 0)
        #expect(net.stats.delivered == 2)  // the two probes to the rendezvous, nothing else
    }
}
