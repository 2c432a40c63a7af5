import LVBCore
import LVBTestSupport
import LVBTransport
import Testing

@Suite("VirtualNetwork")
struct VirtualNetworkTests {
    /// What one endpoint received, with the virtual time of each arrival.
    final class Inbox {
        var items: [(at: Instant, from: PeerAddress, bytes: [UInt8])] = []
        init(_ endpoint: VirtualEndpoint, clock: ManualClock) {
            endpoint.onReceive = { [unowned self] bytes, from in
                self.items.append((clock.now(), from, bytes))
            }
        }
        var payloads: [[UInt8]] { items.map(\.bytes) }
    }

    @Test("a datagram arrives after the link's delay, not before")
    func deliveryAtDelay() {
        let net = VirtualNetwork(seed: 1, defaultImpairment: Impairment(delay: .milliseconds(30)))
        let a = net.makeEndpoint(), b = net.makeEndpoint()
        let inbox = Inbox(b, clock: net.clock)
        let sentAt = net.clock.now()
        a.send([1, 2, 3], to: b.address)
        net.run(for: .milliseconds(29))
        #expect(inbox.items.isEmpty)
        net.run(for: .milliseconds(1))
        #expect(inbox.items.count == 1)
        #expect(inbox.items.first?.at == sentAt + .milliseconds(30))
        #expect(inbox.items.first?.from == a.address)
        #expect(inbox.payloads == [[1, 2, 3]])
        #expect(net.stats.delivered == 1 && net.stats.bytesDelivered == 3 && net.stats.bytesSent == 3)
    }

    @Test("endpoints get distinct addresses; the clock's wall time moves with it")
    func addressesAndClock() {
        let net = VirtualNetwork(seed: 1)
        let addresses = (0..<600).map { _ in net.makeEndpoint().address }
        #expect(Set(addresses).count == 600)
        #expect(addresses.first == .ipv4(10, 0, 0, 1, port: 7400))
        let wall = net.clock.wallTime()
        net.run(for: .milliseconds(1500))
        #expect(net.clock.wallTime().seconds == wall.seconds + 1)
        #expect(net.clock.wallTime().nanoseconds == wall.nanoseconds + 500_000_000)
    }

    @Test("loss drops about the configured fraction")
    func lossRate() {
        let net = VirtualNetwork(seed: 7)
        let a = net.makeEndpoint(), b = net.makeEndpoint()
        net.setImpairment(Impairment(loss: 0.1), from: a.address, to: b.address)
        let inbox = Inbox(b, clock: net.clock)
        for i in 0..<10_000 { a.send([UInt8(truncatingIfNeeded: i)], to: b.address) }
        net.run(for: .seconds(1))
        #expect(abs(Double(inbox.items.count) / 10_000 - 0.9) < 0.02)
        #expect(net.stats.dropped + net.stats.delivered == 10_000)
        // The other direction is unimpaired.
        let back = Inbox(a, clock: net.clock)
        for _ in 0..<100 { b.send([0], to: a.address) }
        net.run(for: .seconds(1))
        #expect(back.items.count == 100)
    }

    /// A small chatty scenario; returns every delivery with its time.
    static func scenario(seed: UInt64) -> [String] {
        let impairment = Impairment(loss: 0.1, delay: .milliseconds(20), jitter: .milliseconds(15), duplicate: 0.05, reorder: 0.1)
        let net = VirtualNetwork(seed: seed, defaultImpairment: impairment)
        let nodes = (0..<5).map { _ in net.makeEndpoint() }
        var log: [String] = []
        for node in nodes {
            node.onReceive = { bytes, from in
                log.append("\(net.clock.now().nanoseconds) \(from)->\(node.address) \(bytes)")
                if bytes[0] < 3 { node.send([bytes[0] + 1], to: from) }
            }
        }
        var round: UInt8 = 0
        net.every(.milliseconds(10)) {
            for (i, node) in nodes.enumerated() { node.send([0, round], to: nodes[(i + 1) % nodes.count].address) }
            round &+= 1
        }
        net.run(for: .seconds(2))
        return log
    }

    @Test("the same seed replays the same deliveries; another seed does not")
    func determinism() {
        let first = Self.scenario(seed: 42)
        #expect(first.count > 1000)
        #expect(first == Self.scenario(seed: 42))
        #expect(first != Self.scenario(seed: 43))
    }

    @Test("a cut link carries nothing until healed; isolate takes all links down")
    func cutAndHeal() {
        let net = VirtualNetwork(seed: 3, defaultImpairment: Impairment(delay: .milliseconds(10)))
        let a = net.makeEndpoint(), b = net.makeEndpoint(), c = net.makeEndpoint()
        let inB = Inbox(b, clock: net.clock), inC = Inbox(c, clock: net.clock)
        net.cut(a.address, b.address)
        a.send([1], to: b.address)
        b.send([1], to: a.address)
        a.send([2], to: c.address)
        net.run(for: .milliseconds(50))
        #expect(inB.items.isEmpty && inC.payloads == [[2]])
        #expect(net.stats.droppedCut == 2)

        net.heal(a.address, b.address)
        a.send([3], to: b.address)
        net.run(for: .milliseconds(50))
        #expect(inB.payloads == [[3]])

        // A cut while a datagram is in flight loses it.
        a.send([4], to: b.address)
        net.run(for: .milliseconds(5))
        net.cut(b.address, a.address)
        net.run(for: .milliseconds(50))
        #expect(inB.payloads == [[3]])
        net.heal(b.address, a.address)

        net.isolate(c.address)
        a.send([5], to: c.address)
        a.send([6], to: b.address)
        net.run(for: .milliseconds(50))
        #expect(inC.payloads == [[2]] && inB.payloads == [[3], [6]])
        net.rejoin(c.address)
        a.send([7], to: c.address)
        net.run(for: .milliseconds(50))
        #expect(inC.payloads == [[2], [7]])
    }

    @Test("a closed or missing endpoint receives nothing")
    func closedEndpoint() {
        let net = VirtualNetwork(seed: 3)
        let a = net.makeEndpoint(), b = net.makeEndpoint()
        let inB = Inbox(b, clock: net.clock)
        b.close()
        a.send([1], to: b.address)
        a.send([1], to: .ipv4(192, 0, 2, 1, port: 9))
        net.run(for: .milliseconds(10))
        #expect(inB.items.isEmpty)
        #expect(net.stats.droppedNoEndpoint == 2)
    }

    @Test("reordering lets later datagrams overtake held-back ones, losing none")
    func reordering() {
        let net = VirtualNetwork(seed: 11)
        let a = net.makeEndpoint(), b = net.makeEndpoint()
        net.setImpairment(Impairment(delay: .milliseconds(10), reorder: 0.2, reorderDelay: .milliseconds(5)), between: a.address, and: b.address)
        let inbox = Inbox(b, clock: net.clock)
        for i in 0..<200 {
            net.schedule(after: .milliseconds(i)) { a.send([UInt8(i)], to: b.address) }
        }
        net.run(for: .seconds(1))
        let order = inbox.payloads.map { Int($0[0]) }
        #expect(order.count == 200)
        #expect(order.sorted() == Array(0..<200))
        #expect(order != Array(0..<200))
    }

    @Test("duplication delivers extra copies")
    func duplication() {
        let net = VirtualNetwork(seed: 5, defaultImpairment: Impairment(duplicate: 0.5))
        let a = net.makeEndpoint(), b = net.makeEndpoint()
        let inbox = Inbox(b, clock: net.clock)
        for _ in 0..<1000 { a.send([9], to: b.address) }
        net.run(for: .milliseconds(1))
        #expect(inbox.items.count == 1000 + net.stats.duplicated)
        #expect(net.stats.duplicated > 400 && net.stats.duplicated < 600)
    }

    @Test("timers fire on time, in FIFO order at equal times, and stop when cancelled")
    func timers() {
        let net = VirtualNetwork(seed: 1)
        let start = net.clock.now()
        var ticks: [Duration] = []
        let tick = net.every(.milliseconds(100)) { ticks.append(net.clock.now() - start) }
        var order: [Int] = []
        for i in 0..<5 { net.schedule(after: .milliseconds(250)) { order.append(i) } }
        let cancelled = net.schedule(after: .milliseconds(250)) { order.append(99) }
        cancelled.cancel()
        net.run(for: .seconds(1))
        #expect(ticks == (1...10).map { .milliseconds(100 * $0) })
        #expect(order == [0, 1, 2, 3, 4])
        tick.cancel()
        net.run(for: .seconds(1))
        #expect(ticks.count == 10)
        #expect(net.clock.now() == start + .seconds(2))
    }

    @Test("run(until:) stops at the event that satisfies the condition, or at the timeout")
    func runUntil() {
        let net = VirtualNetwork(seed: 1, defaultImpairment: Impairment(delay: .milliseconds(40)))
        let a = net.makeEndpoint(), b = net.makeEndpoint()
        let inbox = Inbox(b, clock: net.clock)
        let start = net.clock.now()
        a.send([1], to: b.address)
        #expect(net.run(until: { !inbox.items.isEmpty }, timeout: .seconds(1)))
        #expect(net.clock.now() == start + .milliseconds(40))
        #expect(!net.run(until: { inbox.items.count == 2 }, timeout: .milliseconds(500)))
        #expect(net.clock.now() == start + .milliseconds(540))
    }
}
