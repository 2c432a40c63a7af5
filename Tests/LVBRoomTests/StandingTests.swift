import LVBCore
import LVBCrypto
import LVBRoom
import LVBTestSupport
import Testing

/// A peer that forwards invalid events loses standing: throttled after 5 in
/// 10 s (for 30 s), disconnected after 20 in 60 s.
@Suite struct StandingTests {
    let clock = ManualClock()
    let peer = identity(2).nodeID
    let other = identity(3).nodeID

    @Test func fiveInvalidWithinTenSecondsThrottleForThirtySeconds() {
        let standing = Standing(clock: clock)
        for _ in 1..<RoomConstants.throttleAfterInvalid {
            #expect(standing.recordInvalid(from: peer) == .none)
            clock.advance(by: .seconds(2))
        }
        #expect(!standing.isThrottled(peer))
        #expect(standing.recordInvalid(from: peer) == .throttle)
        #expect(standing.isThrottled(peer) && !standing.isThrottled(other))
        clock.advance(by: .seconds(29))
        #expect(standing.isThrottled(peer))
        clock.advance(by: .seconds(1))
        #expect(!standing.isThrottled(peer))
        #expect(standing.invalidCount == RoomConstants.throttleAfterInvalid)
    }

    @Test func invalidEventsSpreadOutAgeAway() {
        let standing = Standing(clock: clock)
        for _ in 0..<30 {
            #expect(standing.recordInvalid(from: peer) == .none)
            clock.advance(by: .milliseconds(3200))  // at most 4 in any 10 s and 19 in any 60 s
        }
        #expect(!standing.isThrottled(peer))
    }

    @Test func twentyInvalidWithinSixtySecondsDisconnect() {
        let standing = Standing(clock: clock)
        var actions = [StandingAction]()
        for _ in 0..<RoomConstants.disconnectAfterInvalid {
            actions.append(standing.recordInvalid(from: peer))
            clock.advance(by: .seconds(2))
        }
        // 2 s apart: the 5th within 10 s throttles (8 s span); the 20th within 60 s (38 s span) disconnects.
        #expect(actions[0..<4].allSatisfy { $0 == .none })
        #expect(actions[4] == .throttle)
        #expect(actions.last == .disconnect)
        #expect(standing.recordInvalid(from: other) == .none)
    }

    @Test func sweepingIdlePeersKeepsAThrottleRunning() throws {
        let standing = Standing(clock: clock)
        for _ in 0..<RoomConstants.throttleAfterInvalid { _ = standing.recordInvalid(from: peer) }
        #expect(standing.isThrottled(peer))
        // Enough other offenders to sweep the table, which drops only idle peers.
        for n in 0..<(RoomConstants.sweepThreshold + 10) {
            var seed = [UInt8](repeating: 9, count: 32)
            seed[0] = UInt8(n & 0xFF)
            seed[1] = UInt8(n >> 8)
            _ = standing.recordInvalid(from: try Identity(seed: seed).nodeID)
        }
        #expect(standing.isThrottled(peer))
    }
}
