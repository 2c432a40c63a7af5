import LVBCore
import Testing
@testable import LVBRendezvous

/// The probe and the classifier against a rendezvous's responder behind
/// simulated NATs (RFC 4787's mappings and filters), on a manual clock.
@Suite("NAT probe and classifier")
struct NATProbeTests {
    static let server = PeerAddress.ipv4(198, 51, 100, 1, port: 7600)
    static let local = PeerAddress.ipv4(192, 168, 1, 2, port: 40000)
    static let outside: PeerAddress.Host = .v4(0xCB00_7105)  // 203.0.113.5

    /// A NAT: how it maps a socket per destination, and whether an answer from `from` passes.
    struct NAT {
        var map: (NATProbeSocket, PeerAddress) -> PeerAddress
        var portFiltering = true
        var loses: (PeerAddress) -> Bool = { _ in false }
    }

    /// Runs one probe to the end: every 10 ms of manual time, what it sends
    /// goes through the NAT to the responder, and the answers back through
    /// the NAT, 20 ms later. As a Linux router does, an answer the filter
    /// dropped leaves a conntrack entry for its port pair, and the socket's
    /// later mapping to that server port then takes another port.
    func probe(_ nat: NAT, responder: STUNResponder = STUNResponder(primary: server, alternatePort: 7601),
               timeout: Duration = .seconds(3), testFiltering: Bool = true,
               sent: ((NATProbeSocket, PeerAddress) -> Void)? = nil) -> NATObservation {
        let random = SeededRandom(seed: 5)
        var now = Instant(nanoseconds: 1_000_000_000)
        var probe = NATProbe(server: Self.server, deadline: now + timeout, testFiltering: testFiltering)
        var contacted: Set<[UInt16]> = []
        var clashes: Set<[UInt16]> = []
        var inFlight: [(at: Instant, message: STUNMessage, from: PeerAddress)] = []
        while !probe.isDone {
            for out in probe.tick(now: now, random: random) {
                sent?(out.socket, out.to)
                let key = [out.socket == .mapping ? 0 : 1, out.to.port]
                contacted.insert(key)
                let port: STUNPort = out.to.port == Self.server.port ? .primary : .alternate
                var mapped = nat.map(out.socket, out.to)
                if clashes.contains(key) { mapped.port &+= 1 }
                let (bytes, fromPort): ([UInt8], STUNPort)
                switch responder.answer(out.bytes[...], from: mapped, on: port) {
                case .answer(let a): (bytes, fromPort) = (a, port)
                case .answerFromOtherPort(let a): (bytes, fromPort) = (a, port == .primary ? .alternate : .primary)
                default: continue
                }
                let from = PeerAddress(host: Self.server.host, port: fromPort == .primary ? 7600 : 7601)
                let back = [key[0], from.port]
                guard !nat.loses(from), !nat.portFiltering || contacted.contains(back) else {
                    clashes.insert(back)
                    continue
                }
                guard let message = try? STUNMessage.parse(bytes[...]) else { continue }
                inFlight.append((now + .milliseconds(20), message, from))
            }
            now = now + .milliseconds(10)
            for m in inFlight where m.at <= now { probe.consume(m.message, from: m.from, now: now) }
            inFlight.removeAll { $0.at <= now }
        }
        return probe.observation
    }

    func classify(_ o: NATObservation) -> NATReport {
        NATClassifier.classify([o], localPort: Self.local.port, localHosts: [Self.local.host])
    }

    @Test func anOrdinaryLinuxMasqueradeIsEndpointIndependentPortPreservingAndPortFiltering() {
        let o = probe(NAT(map: { _, _ in PeerAddress(host: Self.outside, port: Self.local.port) }))
        let r = classify(o)
        #expect(r.reachable && r.mapping == .endpointIndependent && r.portPreserving == true)
        #expect(r.filtering == .addressAndPortDependent && !r.isHard)
        #expect(r.reflexive == [PeerAddress(host: Self.outside, port: Self.local.port)])
        #expect(r.rtt[Self.server] == .milliseconds(20))
    }

    @Test func aRandomPortPerDestinationIsEndpointDependentAndHard() {
        let o = probe(NAT(map: { PeerAddress(host: Self.outside, port: 20000 + $1.port) }))
        let r = classify(o)
        #expect(r.mapping == .endpointDependent && r.isHard && r.portPreserving == false)
        #expect(r.filtering == .addressAndPortDependent)
        #expect(r.reflexive.count == 2)
    }

    @Test func aFullConeLetsTheOtherPortIn() {
        let r = classify(probe(NAT(map: { _, _ in PeerAddress(host: Self.outside, port: 1234) }, portFiltering: false)))
        #expect(r.mapping == .endpointIndependent && r.filtering == .notPortDependent && r.portPreserving == false && !r.isHard)
    }

    @Test func aReflexiveAddressOfItsOwnIsNoNAT() {
        let r = classify(probe(NAT(map: { _, _ in Self.local }, portFiltering: false)))
        #expect(r.mapping == .none && r.filtering == .notPortDependent && r.portPreserving == true && !r.isHard)
    }

    @Test func aServerWithoutAnAlternatePortTellsTheAddressOnly() {
        let o = probe(NAT(map: { _, _ in PeerAddress(host: Self.outside, port: Self.local.port) }), responder: STUNResponder())
        #expect(o.other == nil && o.changedPortAnswered == nil && o.mappedAtOther == nil)
        let r = classify(o)
        #expect(r.reachable && r.mapping == .unknown && r.filtering == .unknown && !r.isHard)
    }

    @Test func theFilteringSocketNeverSendsToTheOtherPort() {
        // Its own request there would open the filter to the change-port answer.
        var sends: [(NATProbeSocket, UInt16)] = []
        _ = probe(NAT(map: { _, _ in PeerAddress(host: Self.outside, port: Self.local.port) }), sent: { sends.append(($0, $1.port)) })
        #expect(sends.contains { $0 == (.filtering, 7600) })
        #expect(!sends.contains { $0 == (.filtering, 7601) })
        #expect(sends.first { $0.0 == .mapping }?.1 == 7600 && sends.contains { $0 == (.mapping, 7601) })
    }

    @Test func aNodeWithOneSocketLearnsTheMappingAlone() {
        var sockets: Set<String> = []
        let o = probe(NAT(map: { PeerAddress(host: Self.outside, port: 20000 + $1.port) }), testFiltering: false,
                      sent: { socket, _ in sockets.insert("\(socket)") })
        let r = classify(o)
        #expect(sockets == ["mapping"])
        #expect(r.mapping == .endpointDependent && r.isHard && r.filtering == .unknown)
    }

    @Test func noAnswerWithinTheTimeoutIsUnreachable() {
        let o = probe(NAT(map: { _, _ in Self.local }, loses: { _ in true }), timeout: .seconds(1))
        #expect(!o.answered)
        let r = classify(o)
        #expect(!r.reachable && r.mapping == .unknown && r.portPreserving == nil && r.rtt.isEmpty)
    }

    @Test func twoServersSeeingDifferentPortsAreEndpointDependent() {
        var a = NATObservation(server: Self.server), b = NATObservation(server: .ipv4(198, 51, 100, 9, port: 7600))
        a.mapped = PeerAddress(host: Self.outside, port: 1000)
        b.mapped = PeerAddress(host: Self.outside, port: 1001)
        let r = NATClassifier.classify([a, b], localPort: 40000, localHosts: [])
        #expect(r.mapping == .endpointDependent && r.isHard && r.filtering == .unknown)
    }
}
