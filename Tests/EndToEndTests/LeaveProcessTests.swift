import Foundation
import Testing

/// Leaving, as processes on loopback: a member's leave reaches every member
/// (no ghost in anyone's viewer list), and a joiner that never got in does
/// not report success.
@Suite(.serialized, .ownThread) struct LeaveProcessTests {
    /// Host and three joiners (all --json, joiners --no-media); after chat,
    /// likes and a bullet comment reached everyone, one joiner types /quit:
    /// every other node prints its `left`. LVBNODE_LEAVE_RUNS repeats the room
    /// (default 3; `LVBNODE_LEAVE_RUNS=50 swift test --filter LeaveProcess` for
    /// the stress run).
    @Test func aLeaveReachesEveryMemberEveryTime() throws {
        let runs = Int(ProcessInfo.processInfo.environment["LVBNODE_LEAVE_RUNS"] ?? "") ?? 3
        var lost: [String] = []
        for run in 0..<runs {
            // The host streams (a small picture), as a host usually does.
            let host = try NodeProcess(["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json", "--size", "320x180"])
            let ticket = try #require(host.waitFor("ready")?["ticket"] as? String, "host never became ready: \(host.stderr)")
            let joiners = try ["ana", "ben", "cy"].map { try NodeProcess(["join", ticket, "--ephemeral", "--json", "--no-media", "--nick", $0]) }
            let everyone = [host] + joiners
            for j in joiners { #expect(j.waitFor("admitted") != nil, "run \(run): not admitted: \(j.stderr)") }
            joiners[0].send("hello")
            joiners[1].send("/like 2")
            joiners[2].send("/danmaku wow")
            for p in everyone {
                #expect(p.waitFor("chat", where: { $0["text"] as? String == "hello" }) != nil)
                #expect(p.waitFor("like", where: { $0["total"] as? Int == 2 }) != nil)
                #expect(p.waitFor("danmaku", where: { $0["text"] as? String == "wow" }) != nil)
            }
            let leaver = joiners[2]
            let leaverID = try #require(leaver.waitFor("ready")?["id"] as? String)
            leaver.send("/quit")
            #expect(leaver.waitExit() == 0)
            // Every member acknowledged the leave (the process has exited: its output is all here).
            #expect(!leaver.events.contains { $0["event"] as? String == "warning" }, "run \(run): \(leaver.events.filter { $0["event"] as? String == "warning" })")
            for (name, p) in zip(["host", "ana", "ben"], [host, joiners[0], joiners[1]]) {
                if p.waitFor("left", timeout: 10, where: { $0["id"] as? String == leaverID && $0["reason"] as? String == "left" }) == nil {
                    lost.append("run \(run): \(name)")
                }
            }
            for p in [host, joiners[0], joiners[1]] { p.signal(SIGTERM) }
            for p in [host, joiners[0], joiners[1]] { _ = p.waitExit() }
        }
        #expect(lost.isEmpty, "lost leaves in \(runs) runs: \(lost)")
    }

    /// `join --duration` against an address where nothing answers: status 1
    /// and one line saying it never got into the room, how long, and where.
    @Test func aJoinerThatNeverGotInDoesNotSucceed() throws {
        let (status, out, err) = try runToEnd(["join", "127.0.0.1:9", "--ephemeral", "--json", "--duration", "1.5"])
        #expect(status == 1, "\(out) \(err)")
        #expect(err.contains("never connected") && err.contains("127.0.0.1:9"), "\(err)")
        #expect(err.split(separator: "\n").count == 1, "\(err)")
        #expect(out.contains("\"event\":\"exit\""))
    }
}
