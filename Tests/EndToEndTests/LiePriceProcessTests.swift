import Foundation
import LVBMedia
import Testing

/// What a lie costs, between real processes over loopback (issue 50): a
/// liar (`--lie alter`, whose send history holds its lies, so it answers
/// every NACK with another), with and without false excuses
/// (`--lie-excuses`: "my parent lied", every 250 ms), beside an honest
/// relay below the host. A viewer the liar feeds leaves it having sent it
/// at most 60 NACKs, or 300 under the excuses, as its `forged_media`
/// warning says, and plays on below the honest relay.
@Suite(.serialized, .ownThread) struct LiePriceProcessTests {
    @Test(arguments: [false, true])
    func aLiarAnsweringEveryNACKWithALieCostsItsChildFewNACKs(excuses: Bool) throws {
        let host = try NodeProcess(["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json", "--size", "320x180",
                                    "--fps", "30", "--gop", "2", "--bitrate", "600", "--relay-slots", "2"])
        let ready = try #require(host.waitFor("ready"), "host never became ready: \(host.stderr)")
        let ticket = try #require(ready["ticket"] as? String), hostID = try #require(ready["id"] as? String)
        func join(_ extra: [String]) throws -> (NodeProcess, String) {
            let p = try NodeProcess(["join", ticket, "--ephemeral", "--json", "--listen", "127.0.0.1:0"] + extra)
            let id = try #require(p.waitFor("ready")?["id"] as? String, "\(p.stderr)")
            #expect(p.waitFor("admitted", timeout: 10) != nil, "not admitted: \(p.stderr)")
            return (p, id)
        }
        // The truth for 6 s first: its children have watched the true stream (they know its SSRCs, so they NACK).
        let (liar, liarID) = try join(["--lie", "alter", "--lie-after", "6", "--relay-slots", "4", "--no-media"] + (excuses ? ["--lie-excuses"] : []))
        #expect(liar.waitFor("tree", timeout: 5) { $0["parent"] as? String == hostID } != nil, "the liar is not below the host")
        let (honest, _) = try join(["--relay-slots", "2", "--no-media"])
        #expect(honest.waitFor("tree", timeout: 5) { $0["parent"] as? String == hostID } != nil, "the honest relay is not below the host")
        Thread.sleep(forTimeInterval: 1.5)
        let viewers = try (0..<3).map { _ in try join(["--relay-slots", "1"]).0 }
        Thread.sleep(forTimeInterval: excuses ? 9 : 6)

        var lied = 0
        for (i, v) in viewers.enumerated() {
            guard let warning = v.events.first(where: { $0["event"] as? String == "warning" && $0["kind"] as? String == "forged_media" }) else { continue }
            lied += 1
            #expect(warning["peer"] as? String == liarID, "viewer \(i) blamed \(warning)")
            let nacks = warning["nacks"] as? Int ?? -1, checks = warning["signature_checks"] as? Int ?? -1
            #expect(nacks >= 0 && nacks <= (excuses ? 300 : 60), "viewer \(i) sent the liar \(nacks) NACKs (\(checks) checks): \(warning)")
            #expect(checks >= 0, "\(warning)")
            print("lie price (excuses \(excuses)): viewer \(i) sent the liar \(nacks) NACKs, checked \(checks) signatures, refused \(warning["refusals"] as? Int ?? -1)")
            let moved = v.waitFor("tree", timeout: 5) { $0["parent"] as? String != nil && $0["parent"] as? String != liarID }
            #expect(moved != nil, "viewer \(i) found no other parent")
        }
        #expect(lied >= 1, "no viewer took the liar")
        for p in [host, liar, honest] {
            #expect(!p.events.contains { $0["kind"] as? String == "forged_media" }, "\(p.events.filter { $0["kind"] as? String == "forged_media" })")
        }
        for p in [host, liar, honest] + viewers { p.signal(SIGTERM) }
        for p in [host, liar, honest] + viewers { _ = p.waitExit() }
    }
}
