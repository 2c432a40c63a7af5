import LVBCore
import LVBCrypto
import LVBMedia
import LVBTestSupport
import Testing
@testable import LVBRoom

/// Whom a node blames for media its host did not seal (`MediaTrust`).
@Suite struct MediaTrustTests {
    let liar = Identity.generate().nodeID, honest = Identity.generate().nodeID
    let t0 = Instant(nanoseconds: 5_000_000_000)

    @Test func aFeederIsBlamedAGraceAfterItsFirstRefusalOnceAndWithItsFirstReason() {
        var trust = MediaTrust()
        trust.refused(from: liar, .signature, now: t0)
        trust.refused(from: liar, .unsealed, now: t0 + .milliseconds(100))
        #expect(trust.blamed(now: t0 + (RoomConstants.blameGrace - .milliseconds(1))).isEmpty)
        let blamed = trust.blamed(now: t0 + RoomConstants.blameGrace)
        #expect(blamed.count == 1 && blamed[0].0 == liar && blamed[0].1 == .signature)
        #expect(trust.blamed(now: t0 + .seconds(1)).isEmpty && trust.refusals == 2)
    }

    @Test func aNoticeJustAfterTheLieExcusesItAndWhatFollowsForASecond() {
        var trust = MediaTrust()
        // The lie passed on first, its parent's notice a moment later.
        trust.refused(from: honest, .signature, now: t0)
        trust.notice(from: honest, now: t0 + .milliseconds(5))
        #expect(trust.blamed(now: t0 + .seconds(1)).isEmpty)
        // Within the window after a notice, refusals are excused at once.
        trust.refused(from: honest, .signature, now: t0 + .milliseconds(900))
        #expect(trust.excused == 2 && trust.blamed(now: t0 + .seconds(2)).isEmpty)
        // Past the window with no new notice, a refusal is suspected again.
        trust.refused(from: honest, .signature, now: t0 + .milliseconds(2100))
        #expect(trust.blamed(now: t0 + .milliseconds(2400)).map(\.0) == [honest])
    }

    @Test func excusesLastThreeSecondsInARowAtMostAndANoticeTooLateExcusesNothing() {
        var trust = MediaTrust()
        // A feeder that keeps saying its parent lied, for longer than an honest relay needs to move.
        var at = t0
        while at < t0 + RoomConstants.maxExcuse + .milliseconds(500) {
            trust.notice(from: liar, now: at)
            trust.refused(from: liar, .signature, now: at + .milliseconds(1))
            at = at + .milliseconds(250)
        }
        #expect(trust.blamed(now: at + RoomConstants.blameGrace).map(\.0) == [liar])
        // A notice that comes after the grace explains nothing.
        var late = MediaTrust()
        late.refused(from: honest, .audio, now: t0)
        #expect(late.blamed(now: t0 + RoomConstants.blameGrace).map(\.0) == [honest])
        late.notice(from: honest, now: t0 + RoomConstants.blameGrace + .milliseconds(1))
        #expect(late.excused == 0)
    }
}
