import LVBCore
import LVBTestSupport
import LVBTransport
import Testing

/// NATs on the virtual network behave as RFC 4787 describes them: what the
/// outside sees, who may send in, hairpinning and mapping timeouts.
@Suite("VirtualNAT")
struct VirtualNATTests {
    typealias Inbox = VirtualNetworkTests.Inbox

    /// A network with 20 ms links and an outside server at 10.0.0.1:3478.
    static func world(seed: UInt64 = 1) -> (VirtualNetwork, server: VirtualEndpoint) {
        let net = VirtualNetwork(seed: seed, defaultImpairment: Impairment(delay: .milliseconds(20)))
        return (net, net.makeEndpoint(address: .ipv4(10, 0, 0, 1, port: 3478)))
    }

    /// Sends one datagram from `from` to `to` and returns the source address
    /// `to` saw; `to` is left with no receive handler.
    static func observe(_ net: VirtualNetwork, from: VirtualEndpoint, to: VirtualEndpoint) -> PeerAddress? {
        var seen: PeerAddress?
        to.onReceive = { _, source in seen = source }
        from.send([0], to: to.address)
        net.run(for: .milliseconds(100))
        to.onReceive = nil
        return seen
    }

    @Test("a STUN-like server outside sees the NAT's public IP and mapped port, and its reply comes back")
    func observerSeesTheMapping() {
        let (net, server) = Self.world()
        let nat = net.makeNAT(behavior: .portRestrictedCone)
        let inside = net.makeEndpoint(behind: nat)
        #expect(inside.address == .ipv4(192, 168, 1, 2, port: 7400))
        let seen = Self.observe(net, from: inside, to: server)
        #expect(seen == .ipv4(203, 0, 113, 1, port: NATBehavior.defaultStartPort))
        #expect(seen == nat.externalAddress(of: inside.address, to: server.address))
        #expect(nat.mappings.count == 1)
        // The reply to the observed address reaches the inside, from the server's own address.
        #expect(Self.observe(net, from: server, to: inside) == nil)  // not by its private address
        let inbox = Inbox(inside, clock: net.clock)
        server.send([1], to: seen!)
        net.run(for: .milliseconds(100))
        #expect(inbox.items.map(\.from) == [server.address])
    }

    @Test("EIM keeps one external port for every destination; ADM one per destination IP; APDM one per IP:port")
    func mappingBehaviours() {
        let (net, server) = Self.world()
        let samePortOther = net.makeEndpoint(address: .ipv4(10, 0, 0, 1, port: 3479))
        let otherIP = net.makeEndpoint(address: .ipv4(10, 0, 0, 2, port: 3478))
        func ports(behind behavior: NATBehavior) -> [UInt16?] {
            let inside = net.makeEndpoint(behind: net.makeNAT(behavior: behavior))
            return [server, samePortOther, otherIP].map { Self.observe(net, from: inside, to: $0)?.port }
        }
        let p = NATBehavior.defaultStartPort
        #expect(ports(behind: .portRestrictedCone) == [p, p, p])
        #expect(ports(behind: .addressDependent) == [p, p, p + 1])
        #expect(ports(behind: .symmetric) == [p, p + 1, p + 2])
    }

    @Test("EIF lets anyone in once a mapping exists; with no mapping nothing gets in")
    func endpointIndependentFiltering() {
        let (net, server) = Self.world()
        let stranger = net.makeEndpoint(address: .ipv4(10, 9, 9, 9, port: 1234))
        let nat = net.makeNAT(behavior: .fullCone)
        let inside = net.makeEndpoint(behind: nat)
        let external = PeerAddress(host: nat.publicIP, port: NATBehavior.defaultStartPort)
        let inbox = Inbox(inside, clock: net.clock)
        stranger.send([1], to: external)
        net.run(for: .milliseconds(100))
        #expect(inbox.items.isEmpty && net.stats.droppedNATNoMapping == 1)
        #expect(Self.observe(net, from: inside, to: server) == external)
        stranger.send([2], to: external)
        net.run(for: .milliseconds(100))
        #expect(inbox.items.map(\.from) == [stranger.address])
    }

    @Test("ADF lets in another port of an IP the inside contacted, not an IP it did not")
    func addressDependentFiltering() {
        let (net, server) = Self.world()
        let serverOtherPort = net.makeEndpoint(address: .ipv4(10, 0, 0, 1, port: 3479))
        let otherIP = net.makeEndpoint(address: .ipv4(10, 0, 0, 2, port: 3478))
        let inside = net.makeEndpoint(behind: net.makeNAT(behavior: .restrictedCone))
        let external = Self.observe(net, from: inside, to: server)!
        let inbox = Inbox(inside, clock: net.clock)
        serverOtherPort.send([1], to: external)
        otherIP.send([2], to: external)
        net.run(for: .milliseconds(100))
        #expect(inbox.items.map(\.from) == [serverOtherPort.address])
        #expect(net.stats.droppedNATFiltered == 1)
    }

    @Test("APDF lets in only the exact IP:port the inside contacted")
    func addressAndPortDependentFiltering() {
        let (net, server) = Self.world()
        let serverOtherPort = net.makeEndpoint(address: .ipv4(10, 0, 0, 1, port: 3479))
        let inside = net.makeEndpoint(behind: net.makeNAT(behavior: .portRestrictedCone))
        let external = Self.observe(net, from: inside, to: server)!
        let inbox = Inbox(inside, clock: net.clock)
        serverOtherPort.send([1], to: external)
        server.send([2], to: external)
        net.run(for: .milliseconds(100))
        #expect(inbox.payloads == [[2]])
        #expect(net.stats.droppedNATFiltered == 1)
    }

    /// Two endpoints behind their own NATs, their external addresses as an
    /// outside observer (a rendezvous) saw them.
    static func punchingPair(_ behavior: NATBehavior)
        -> (VirtualNetwork, a: VirtualEndpoint, b: VirtualEndpoint, aSeen: PeerAddress, bSeen: PeerAddress) {
        let (net, server) = Self.world()
        let a = net.makeEndpoint(behind: net.makeNAT(behavior: behavior))
        let b = net.makeEndpoint(behind: net.makeNAT(behavior: behavior))
        return (net, a, b, observe(net, from: a, to: server)!, observe(net, from: b, to: server)!)
    }

    @Test("hole punching between port-restricted cones: the first datagram is filtered, once both have sent they pass")
    func holePunchingThroughPortRestrictedCones() {
        let (net, a, b, aSeen, bSeen) = Self.punchingPair(.portRestrictedCone)
        let inA = Inbox(a, clock: net.clock), inB = Inbox(b, clock: net.clock)
        a.send([1], to: bSeen)  // opens a's NAT to b, but b's NAT has not heard of a
        net.run(for: .milliseconds(100))
        #expect(inB.items.isEmpty && net.stats.droppedNATFiltered == 1)
        b.send([2], to: aSeen)
        net.run(for: .milliseconds(100))
        a.send([3], to: bSeen)
        net.run(for: .milliseconds(100))
        #expect(inA.items.map(\.from) == [bSeen] && inA.payloads == [[2]])
        #expect(inB.items.map(\.from) == [aSeen] && inB.payloads == [[3]])
        // Sent at the same instant, both pass: each NAT opened before the other's datagram arrived.
        a.send([4], to: bSeen)
        b.send([5], to: aSeen)
        net.run(for: .milliseconds(100))
        #expect(inA.payloads.last == [5] && inB.payloads.last == [4])
    }

    @Test("hole punching between symmetric NATs fails: each sends from a new port the other never saw")
    func holePunchingBetweenSymmetricNATsFails() {
        let (net, a, b, aSeen, bSeen) = Self.punchingPair(.symmetric)
        let inA = Inbox(a, clock: net.clock), inB = Inbox(b, clock: net.clock)
        for _ in 0..<3 {
            a.send([1], to: bSeen)
            b.send([2], to: aSeen)
            net.run(for: .milliseconds(100))
        }
        #expect(inA.items.isEmpty && inB.items.isEmpty)
        #expect(net.stats.droppedNATFiltered == 6)
        #expect(net.stats.droppedNATNoMapping == 0)
    }

    @Test("hairpinning: through its own NAT's public IP an inside endpoint reaches another, from its external address; off, it is dropped")
    func hairpinning() {
        for hairpinning in [true, false] {
            let (net, server) = Self.world()
            let nat = net.makeNAT(behavior: .fullCone.with { $0.hairpinning = hairpinning })
            let a = nat.makeEndpoint(), b = nat.makeEndpoint()
            let aSeen = Self.observe(net, from: a, to: server)!
            let bSeen = Self.observe(net, from: b, to: server)!
            let inB = Inbox(b, clock: net.clock)
            a.send([1], to: bSeen)
            net.run(for: .milliseconds(100))
            #expect(inB.items.map(\.from) == (hairpinning ? [aSeen] : []))
            #expect(net.stats.droppedNATHairpin == (hairpinning ? 0 : 1))
        }
    }

    @Test("a mapping unrefreshed for its lifetime is gone: the old port reaches no one, a new send gets a new port")
    func mappingExpires() {
        let (net, server) = Self.world()
        let nat = net.makeNAT(behavior: .portRestrictedCone.with { $0.mappingLifetime = .seconds(30) })
        let inside = nat.makeEndpoint()
        let inbox = Inbox(inside, clock: net.clock)
        let first = Self.observe(net, from: inside, to: server)!
        net.run(for: .seconds(25))
        server.send([1], to: first)  // inbound does not refresh: the mapping still dies 30 s after the send
        net.run(for: .seconds(5))
        #expect(inbox.payloads == [[1]])
        #expect(nat.mappings.isEmpty)
        server.send([2], to: first)
        net.run(for: .milliseconds(100))
        #expect(inbox.payloads == [[1]] && net.stats.droppedNATNoMapping == 1)
        let second = Self.observe(net, from: inside, to: server)!
        #expect(second.host == first.host && second.port != first.port)
    }

    @Test("outbound keepalives within the lifetime keep a mapping and its port")
    func outboundRefreshKeepsTheMapping() {
        let (net, server) = Self.world()
        let nat = net.makeNAT(behavior: .symmetric.with { $0.mappingLifetime = .seconds(30) })
        let inside = nat.makeEndpoint()
        let first = Self.observe(net, from: inside, to: server)!
        net.every(.seconds(20)) { inside.send([0], to: server.address) }
        net.run(for: .seconds(120))
        #expect(nat.mappings.map(\.externalAddress) == [first])
    }

    @Test("same-LAN traffic goes direct, untranslated; a private address is unreachable from outside")
    func sameLANIsNotTranslated() {
        let (net, server) = Self.world()
        let nat = net.makeNAT(behavior: .symmetric)
        let a = nat.makeEndpoint(), b = nat.makeEndpoint()
        let inB = Inbox(b, clock: net.clock)
        a.send([1], to: b.address)
        server.send([2], to: b.address)
        net.run(for: .milliseconds(100))
        #expect(inB.items.map(\.from) == [a.address])
        #expect(nat.mappings.isEmpty)
        #expect(net.stats.droppedNoEndpoint == 1)
    }

    @Test("port allocation: random ports are reproducible from the seed; preservation keeps the inside port when free")
    func portAllocation() {
        func randomPorts(seed: UInt64) -> [UInt16] {
            let (net, _) = Self.world()
            let allocation = NATBehavior.PortAllocation.random(startPort: 20000, seed: seed)
            let nat = net.makeNAT(behavior: .symmetric.with { $0.portAllocation = allocation })
            let inside = nat.makeEndpoint()
            return (0..<5).map { i in
                let destination = net.makeEndpoint(address: .ipv4(10, 1, 0, 1, port: UInt16(5000 + i)))
                return Self.observe(net, from: inside, to: destination)!.port
            }
        }
        #expect(randomPorts(seed: 3) == randomPorts(seed: 3))
        #expect(randomPorts(seed: 3) != randomPorts(seed: 4))
        #expect(randomPorts(seed: 3).allSatisfy { $0 >= 20000 })

        let (net, server) = Self.world()
        let nat = net.makeNAT(behavior: .portRestrictedCone.with { $0.portPreservation = true })
        let a = nat.makeEndpoint(), b = nat.makeEndpoint()
        #expect(Self.observe(net, from: a, to: server)?.port == 7400)
        #expect(Self.observe(net, from: b, to: server)?.port == NATBehavior.defaultStartPort)
    }
}
