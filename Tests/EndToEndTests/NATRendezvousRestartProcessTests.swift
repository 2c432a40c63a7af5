import Foundation
import LVBMesh
import Testing

/// A rendezvous killed and started again under a running room (issue 47),
/// behind real NATs: a host behind a random-port NAT whose viewer, behind
/// another, takes the stream through the rendezvous's relay; a second host
/// serving the replay of its closed room. Started again with its home (the
/// same identity), the rendezvous lists the room and the replay again within
/// one announcement period (10 s), the relayed viewer's picture stalls no
/// longer than the rendezvous was away plus a moment, and a newcomer joins
/// by room id. Started again with a new identity on the same address, the
/// hosts follow it there as they did at start (listed again, joined by id)
/// and the relayed viewer moves its session onto the new one's relay.
@Suite(.serialized, .ownThread, .enabled(if: NATLab.available)) struct NATRendezvousRestartProcessTests {
    static let fps = 15

    private static func frames(_ stats: [String: Any]?) -> Int? { (stats?["media"] as? [String: Any])?["frames"] as? Int }

    @Test func aRestartedRendezvousListsTheRoomAndTheReplayAgainAndTheRoomPlaysOn() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let lab = try NATLab(tag: "lvz\(getpid() % 1000)", sites: 4, hard: [1, 3])
        defer { lab.remove() }
        let rendezvous = { (identity: [String]) in
            try lab.run("rv", ["rendezvous", "--listen", "0.0.0.0:7600", "--json", "--relay-kbps", "8000"] + identity)
        }
        var rv = try rendezvous(["--home", dir + "/rv"])
        var all: [NodeProcess] = []
        defer { for p in all + [rv] { p.signal(SIGTERM); _ = p.waitExit() } }
        let firstID = try #require(rv.waitFor("ready")?["id"] as? String, "rendezvous: \(rv.stderr)")
        let live = ["--size", "160x96", "--fps", "\(Self.fps)", "--gop", "1", "--bitrate", "150", "--audio", "none", "--json"]
        let host = try lab.run("1", ["host", "--ephemeral", "--listen", "0.0.0.0:7400", "--rendezvous", lab.rendezvous, "--title", "live"] + live)
        all.append(host)
        let room = try #require(host.waitFor("ready")?["room"] as? String, "host: \(host.stderr)")
        let holder = try lab.run("2", ["host", "--home", dir + "/holder", "--replay", "--listen", "0.0.0.0:7400",
                                       "--rendezvous", lab.rendezvous, "--title", "kept"] + live)
        all.append(holder)
        let replay = try #require(holder.waitFor("replay")?["id"] as? String, "holder: \(holder.stderr)")
        let viewer = try lab.run("3", ["join", room, "--rendezvous", lab.rendezvous, "--ephemeral", "--json", "--nick", "v3"])
        all.append(viewer)
        #expect(viewer.waitFor("first_frame", timeout: 15) != nil, "the viewer never played: \(viewer.stderr)")
        Thread.sleep(forTimeInterval: 3)
        holder.send("/close")
        #expect(holder.waitFor("serving", timeout: 10) != nil, "\(holder.stderr)")
        #expect(listedWithin(10, room: room, replay: replay, in: lab) != nil, "never listed before the restart")
        let path = ([viewer].snapshot().first??["tree"] as? [String: Any])?["parent_path"] as? String
        print("rendezvous restart: the viewer's link to the host runs \(path ?? "?")")

        for (round, identity) in [["--home", dir + "/rv"], ["--ephemeral"]].enumerated() {
            let framesAtKill = Self.frames([viewer].snapshot().first ?? nil) ?? 0
            rv.signal(SIGKILL)
            let killed = Date()
            _ = rv.waitExit()
            Thread.sleep(forTimeInterval: 0.5)
            rv = try rendezvous(identity)
            let id = try #require(rv.waitFor("ready")?["id"] as? String, "rendezvous: \(rv.stderr)")
            let restarted = Date()
            #expect((id == firstID) == (round == 0), "round \(round): the identity \(id) against \(firstID)")
            // Listed again within one announcement period, the replay with its holder too;
            // meanwhile the viewer's pictures: the longest wait for a new one since the kill.
            var stall = 0.0, lastFrames = framesAtKill, lastNew = killed
            var listedAfter: Double?
            while Date().timeIntervalSince(restarted) < 10 {
                if listedAfter == nil, listedWithin(0, room: room, replay: replay, in: lab) != nil {
                    listedAfter = Date().timeIntervalSince(restarted)
                }
                let frames = Self.frames([viewer].snapshot(timeout: 1).first ?? nil) ?? lastFrames
                if frames > lastFrames { lastFrames = frames; lastNew = Date() }
                stall = max(stall, Date().timeIntervalSince(lastNew))
                Thread.sleep(forTimeInterval: 0.25)
            }
            print("rendezvous restart \(round == 0 ? "(same identity)" : "(new identity)"): away \(String(format: "%.2f", restarted.timeIntervalSince(killed))) s, listed again \(listedAfter.map { String(format: "%.2f", $0) } ?? "never") s after; the relayed viewer's longest wait for a picture since the kill \(String(format: "%.2f", stall)) s")
            #expect(listedAfter != nil, "round \(round): the room or the replay was not listed again within 10 s")
            #expect(stall < restarted.timeIntervalSince(killed) + 3, "round \(round): the relayed viewer's picture stalled \(stall) s")
            // A newcomer joins by room id through the new rendezvous.
            let newcomer = try lab.run("4", ["join", room, "--rendezvous", lab.rendezvous, "--ephemeral", "--json", "--nick", "v4"])
            #expect(newcomer.waitFor("first_frame", timeout: 15) != nil, "round \(round): the newcomer never played: \(newcomer.stderr)")
            newcomer.send("/quit")
            _ = newcomer.waitExit()
        }
    }

    /// Seconds until `lvbnode rooms` lists both the live room and the replay with its holder (nil: not within `seconds`).
    private func listedWithin(_ seconds: Double, room: String, replay: String, in lab: NATLab) -> Double? {
        let start = Date()
        repeat {
            if let rooms = try? lab.run("rv", ["rooms", "--rendezvous", lab.rendezvous, "--json"]) {
                _ = rooms.waitExit()
                let events = rooms.events
                if events.contains(where: { $0["id"] as? String == room }),
                   events.contains(where: { $0["id"] as? String == replay && $0["holders"] as? Int == 1 }) {
                    return Date().timeIntervalSince(start)
                }
            }
            if seconds > 0 { Thread.sleep(forTimeInterval: 0.2) }
        } while Date().timeIntervalSince(start) < seconds
        return nil
    }
}
