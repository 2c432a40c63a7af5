import Foundation
import Testing

/// A room of a hundred and one processes over loopback (issue 28): a host
/// without media and 100 `--no-media` viewers. Every member counts the
/// whole room without hearing from every member, hears every chat line,
/// sees the host's kick, and counts again after ten leave; what each
/// viewer lists stays bounded (the host, the latest joiners the census
/// names, itself), not the hundred.
@Suite(.serialized, .ownThread) struct LargeRoomProcessTests {
    static let viewers = 100
    static let batch = 10

    @Test func aHundredViewersAreCountedHearEveryLineSeeTheKickAndABoundedList() throws {
        let host = try NodeProcess(["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json", "--nick", "hana",
                                    "--video", "none", "--audio", "none"])
        let ticket = try #require(host.waitFor("ready")?["ticket"] as? String, "host never became ready: \(host.stderr)")
        var viewers: [NodeProcess] = []
        // In batches, as a live room fills: ten at once, the next ten once those are in.
        for b in 0..<(Self.viewers / Self.batch) {
            let started = try (0..<Self.batch).map { i in
                try NodeProcess(["join", ticket, "--ephemeral", "--json", "--nick", "v\(b * Self.batch + i)",
                                 "--listen", "127.0.0.1:0", "--no-media"])
            }
            for (i, v) in started.enumerated() {
                try #require(v.waitFor("admitted", timeout: 30) != nil, "v\(b * Self.batch + i) not admitted: \(v.stderr)")
            }
            viewers += started
        }
        let everyone = [host] + viewers
        defer { for p in everyone where p.process.isRunning { p.process.terminate() } }

        // Every member counts the whole room (the census, from the counting tree).
        let total = Self.viewers + 1
        for (i, p) in everyone.enumerated() {
            #expect(p.waitFor("count", timeout: 40, where: { $0["count"] as? Int == total }) != nil,
                    "member \(i) never counted \(total): last count \(p.events.last { $0["event"] as? String == "count" }?["count"] ?? "none")")
        }

        // Five viewers speak: every member hears every line.
        let speakers = [0, 20, 40, 60, 80]
        for s in speakers { viewers[s].send("line from v\(s)") }
        for (i, p) in everyone.enumerated() {
            for s in speakers {
                #expect(p.waitFor("chat", timeout: 20, where: { $0["text"] as? String == "line from v\(s)" }) != nil,
                        "member \(i) never heard v\(s)")
            }
        }

        // A viewer lists the host, the census's latest joiners (10) and
        // itself, not the hundred; `/viewers` says so beside the count. It
        // heard of joiners only as the host listed them (3 every 2 s).
        let seen = viewers.map { v in Set(v.events.filter { $0["event"] as? String == "joined" }.compactMap { $0["id"] as? String }).count }
        print("joins a viewer saw: \(seen.min() ?? 0)...\(seen.max() ?? 0) of \(Self.viewers)")
        #expect(seen.allSatisfy { $0 <= Self.viewers / 2 }, "a viewer saw \(seen.max() ?? 0) joins of \(Self.viewers)")
        for i in [0, 33, 66, 99] {
            let v = viewers[i], mark = v.events.count
            v.send("/viewers")
            let list = v.waitFor("viewers", after: mark, timeout: 10)
            #expect(list?["count"] as? Int == total, "v\(i): /viewers counts \(list?["count"] ?? "nothing")")
            #expect((list?["listed"] as? Int).map { $0 <= 12 } == true, "v\(i): /viewers lists \(list?["listed"] ?? "nothing")")
        }

        // The host kicks one by name: every member sees it, wherever it sits.
        let kicked = viewers[50]
        let kickedID = try #require(kicked.waitFor("ready")?["id"] as? String)
        host.send("/kick v50")
        #expect(kicked.waitExit(timeout: 20) == 3)
        for (i, p) in everyone.enumerated() where p !== kicked {
            #expect(p.waitFor("kicked", timeout: 20, where: { $0["id"] as? String == kickedID }) != nil, "member \(i) never saw the kick")
        }

        // Ten leave: every member counts the rest within the census's bounds.
        let marks = everyone.map { $0.events.count }
        let leavers = Array(viewers[90..<100])
        for v in leavers { v.send("/quit") }
        for v in leavers { #expect(v.waitExit() == 0) }
        let rest = total - 1 - leavers.count
        for (i, p) in everyone.enumerated() where p !== kicked && !leavers.contains(where: { $0 === p }) {
            #expect(p.waitFor("count", after: marks[i], timeout: 40, where: { $0["count"] as? Int == rest }) != nil,
                    "member \(i) never counted \(rest): last count \(p.events.last { $0["event"] as? String == "count" }?["count"] ?? "none")")
        }

        host.send("/close")
        for p in everyone where p !== kicked && !leavers.contains(where: { $0 === p }) {
            #expect(p.waitExit(timeout: 20) == 0)
        }
    }
}
