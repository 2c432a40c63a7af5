import LVBCore
import LVBMedia
import LVBTestSupport
import Testing
@testable import LVBRoom

/// What a lie costs the liar's children (issue 50): a relay that answers
/// every NACK with another lie (its send history holds the lies), with and
/// without false excuses ("my parent lied", every 250 ms). Each child asks
/// for a refused packet again once, so its NACKs to the liar are bounded by
/// the frames the liar sent while it fed it, not by round trips; the
/// excuses delay the blame by 3 s at most and buy no more work than that.
@Suite struct LiePriceScenarioTests {
    @Test(arguments: [false, true], [611, 612] as [UInt64])
    func aLiarAnsweringEveryNACKWithALieCostsFewNACKsAndIsLeftExcusesOrNot(excuses: Bool, seed: UInt64) throws {
        let r = try LyingRoom(viewers: 6, seed: seed)
        #expect(r.net.run(until: { r.viewers.indices.allSatisfy { r.parent($0) != nil && !r.pictures[$0].isEmpty } }, timeout: .seconds(15)))
        r.net.run(for: .seconds(3))
        let tops = r.children(of: r.host.id)
        let liar = try #require(tops.max { r.children(of: r.viewers[$0].id).count < r.children(of: r.viewers[$1].id).count })
        let liarID = r.viewers[liar].id
        let direct = r.children(of: liarID)
        try #require(!direct.isEmpty)
        let before = direct.map { r.viewers[$0].node.media.cost(of: liarID) }
        let lie = RelayLie(mode: .alter, identity: r.viewers[liar].sim.core.identity, excuses: excuses)
        r.viewers[liar].node.media.lie = lie
        try #require(r.net.run(until: { lie.firstLie != nil }, timeout: .seconds(3)))
        let start = try #require(lie.firstLie)
        var left: [Int: Instant] = [:]
        r.net.run(until: {
            for i in direct where left[i] == nil && r.parent(i) != liarID { left[i] = r.net.clock.now() }
            return left.count == direct.count
        }, timeout: .seconds(6))
        r.net.run(for: .seconds(1))
        let nackLimit = excuses ? 300 : 60
        for (k, i) in direct.enumerated() {
            let cost = r.viewers[i].node.media.cost(of: liarID) - before[k]
            let took = left[i].map { ($0 - start).milliseconds }
            let report = "viewer \(i) (excuses \(excuses)) left the liar after \(took.map { "\($0) ms" } ?? "never"): \(cost)"
            #expect(r.viewers[i].node.tree?.liars == [liarID], "\(report)")
            // Excuses end 3 s after the first; the blame comes 300 ms after the next refusal.
            #expect(took.map { $0 <= (excuses ? 3_800 : 1_000) } ?? false, "\(report)")
            #expect(cost.nacks > 0 && cost.nacks <= nackLimit, "\(report)")
            // Checks as the honest stream's: a frame's and an audio packet's each, nothing per NACK round.
            let fedSeconds = Double((took ?? 0) + 200) / 1000
            #expect(Double(cost.signatureChecks) <= fedSeconds * 120, "\(report)")
        }
        for i in r.viewers.indices {
            let shown = r.pictures[i].filter { $0.at >= start }
            #expect(shown.allSatisfy { $0.number != nil && !$0.magenta }, "viewer \(i) showed a forged picture")
        }
    }
}
