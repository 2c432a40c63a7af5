import LVBCore
import LVBCrypto
import LVBTestSupport
import Testing
@testable import LVBTransport

/// When a responder demands cookies (man/lvbnode-protocol.7, Cookies): more
/// than 200 initiations with a valid mac1 within one second, counted over a
/// sliding second, so neither the moment the node started nor where a burst
/// falls decides it.
@Suite struct UnderLoadTests {
    /// Datagrams a core sends, kept instead of sent.
    final class Capture: DatagramSink {
        var sent: [([UInt8], PeerAddress)] = []
        func send(_ datagram: [UInt8], to address: PeerAddress) { sent.append((datagram, address)) }
    }

    /// A responder on a manual clock, and `count` IK initiations to it from
    /// different identities and source ports.
    private func responder(initiations count: Int, seed: UInt64)
        -> (TransportCore, ManualClock, Capture, [([UInt8], PeerAddress)]) {
        let clock = ManualClock()
        let capture = Capture()
        let host = TransportCore(identity: try! Identity(seed: [UInt8](repeating: 7, count: 32)), clock: clock,
                                 random: SeededRandom(seed: seed), sink: capture)
        let hostAddress = PeerAddress.ipv4(10, 0, 0, 1, port: 7400)
        var initiations: [([UInt8], PeerAddress)] = []
        let random = SeededRandom(seed: seed &+ 1)
        for i in 0..<count {
            let out = Capture()
            let initiator = TransportCore(identity: try! Identity(seed: random.bytes(32)), clock: clock, random: random, sink: out)
            initiator.connect(to: hostAddress, expecting: host.nodeID)
            let datagram = out.sent[0].0
            #expect(datagram.first == PacketType.ikInitiation.rawValue)
            initiations.append((datagram, .ipv4(192, 0, 2, UInt8(i % 200 + 1), port: UInt16(20_000 + i))))
        }
        return (host, clock, capture, initiations)
    }

    private func replies(_ capture: Capture, type: PacketType) -> Int {
        capture.sent.filter { $0.0.first == type.rawValue }.count
    }

    @Test func theThresholdIsTheDocumentedTwoHundred() {
        #expect(TransportConstants.underLoadHandshakesPerSecond == 200)
        #expect(TransportConfig().underLoadThreshold == 200)
    }

    @Test func twoHundredInOneSecondAreAllAnsweredTheNextGetsACookie() {
        let (host, clock, capture, initiations) = responder(initiations: 240, seed: 1)
        for (n, (datagram, source)) in initiations.enumerated() {
            host.receive(datagram, from: source)
            if n == 199 {
                #expect(replies(capture, type: .ikResponse) == 200)
                #expect(host.stats.cookieRepliesSent == 0)
            }
            clock.advance(by: .milliseconds(2))
        }
        #expect(replies(capture, type: .ikResponse) == 200)
        #expect(replies(capture, type: .cookieReply) == 40)
        #expect(host.stats.cookieRepliesSent == 40)
        #expect(host.stats.droppedNeedsCookie == 40)
        for (datagram, _) in capture.sent { #expect(datagram.count <= MessageSize.ikInitiation) }
    }

    /// 150 in the half second before the old fixed window's end and 150 in the
    /// half second after: 300 within one second, so cookies, wherever the node
    /// happened to start its count.
    @Test func aBurstAcrossASecondBoundaryIsStillCaught() {
        let (host, clock, capture, initiations) = responder(initiations: 300, seed: 2)
        clock.advance(by: .milliseconds(600))
        for (datagram, source) in initiations {
            host.receive(datagram, from: source)
            clock.advance(by: .microseconds(2_500))
        }
        #expect(replies(capture, type: .ikResponse) == 200)
        #expect(host.stats.cookieRepliesSent == 100)
    }

    /// Exactly 200 per second for three seconds, evenly spaced: never more
    /// than 200 within one second, so never a cookie.
    @Test func aSteadyRateAtTheThresholdNeverGetsCookies() {
        let (host, clock, capture, initiations) = responder(initiations: 600, seed: 3)
        for (datagram, source) in initiations {
            host.receive(datagram, from: source)
            clock.advance(by: .milliseconds(5))
        }
        #expect(host.stats.cookieRepliesSent == 0)
        #expect(replies(capture, type: .ikResponse) == 600)
    }

    @Test func meterCountsExactlyOverTheLastSecond() {
        var meter = LoadMeter()
        let t0 = Instant(nanoseconds: 5_000_000_000)
        func arrival(_ ms: Int, threshold: Int = 3) -> Bool {
            meter.isOverThreshold(arrivalAt: t0 + .milliseconds(ms), threshold: threshold)
        }
        #expect([0, 1, 2].map { arrival($0) } == [false, false, false])
        #expect(arrival(999))
        // The first arrival is a full second old at 1000 ms: three in the window again.
        #expect(!arrival(1_001))
        // Arrivals answered with a cookie count too: 999, 1001, 1002 and 1100 ms.
        #expect(!arrival(1_002))
        #expect(arrival(1_100))
        #expect(arrival(1_101, threshold: 0))
    }
}
