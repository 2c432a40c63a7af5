import Foundation
import LVBMedia
import Testing

/// Quick switch between real processes over loopback: a rendezvous, two hosts
/// streaming different colours, and a viewer that joins one room by its id,
/// switches to the other with /next and back with /prev. Each switch finds
/// the room preloaded and shows its picture at once; the viewer's decoded
/// pictures go red, blue, red; each host sees the viewer come and go.
@Suite(.serialized, .ownThread) struct RoomSwitchProcessTests {
    static let size = (width: 320, height: 180)
    /// BT.601 red and blue.
    static let red: (UInt8, UInt8, UInt8) = (81, 90, 240), blue: (UInt8, UInt8, UInt8) = (41, 240, 110)

    private func colour(_ f: I420Frame) -> Character {
        let u = Double(f.u.reduce(0) { $0 + Int($1) }) / Double(f.u.count)
        let v = Double(f.v.reduce(0) { $0 + Int($1) }) / Double(f.v.count)
        if abs(u - 90) < 30 && abs(v - 240) < 30 { return "R" }
        if abs(u - 240) < 30 && abs(v - 110) < 30 { return "B" }
        return "?"
    }

    private func host(_ title: String, video: String, via rv: String) throws -> (NodeProcess, room: String) {
        let h = try NodeProcess(["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json", "--title", title,
                                 "--video", video, "--audio", "none", "--size", "\(Self.size.width)x\(Self.size.height)",
                                 "--rendezvous", rv])
        let ready = try #require(h.waitFor("ready"), "host never became ready: \(h.stderr)")
        return (h, try #require(ready["room"] as? String))
    }

    @Test func aViewerSwitchesToTheOtherRoomAndBackEachTimePreloaded() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try writeSolidY4M(dir + "/red.y4m", width: Self.size.width, height: Self.size.height, colour: Self.red)
        try writeSolidY4M(dir + "/blue.y4m", width: Self.size.width, height: Self.size.height, colour: Self.blue)
        let rv = try NodeProcess(["rendezvous", "--ephemeral", "--listen", "127.0.0.1:0", "--json"])
        defer { rv.signal(SIGTERM); _ = rv.waitExit() }
        let address = try #require(rv.waitFor("ready")?["listen"] as? String)
        let (a, roomA) = try host("red", video: dir + "/red.y4m", via: address)
        defer { a.signal(SIGTERM); _ = a.waitExit() }
        let (b, roomB) = try host("blue", video: dir + "/blue.y4m", via: address)
        defer { b.signal(SIGTERM); _ = b.waitExit() }
        // Both listed (a host prints ready before its first announcement arrives).
        for _ in 0..<25 {
            let (_, out, _) = try runToEnd(["rooms", "--rendezvous", address, "--json"])
            if out.contains(roomA) && out.contains(roomB) { break }
            Thread.sleep(forTimeInterval: 0.2)
        }

        let viewer = try NodeProcess(["join", roomA, "--rendezvous", address, "--ephemeral", "--json",
                                      "--video-out", dir + "/viewer.y4m"])
        defer { viewer.signal(SIGTERM); _ = viewer.waitExit() }
        let id = try #require(viewer.waitFor("ready")?["id"] as? String)
        #expect(viewer.waitFor("first_frame", where: { $0["room"] as? String == roomA }) != nil, "\(viewer.stderr)")
        // The other room is kept ready next to this one.
        #expect(viewer.waitFor("preloaded", timeout: 10, where: { $0["room"] as? String == roomB }) != nil, "\(viewer.stderr)")
        Thread.sleep(forTimeInterval: 2)

        viewer.send("/next")
        let toB = viewer.waitFor("switched", timeout: 5, where: { $0["to"] as? String == roomB })
        #expect(toB?["preloaded"] as? Bool == true, "\(String(describing: toB)) \(viewer.stderr)")
        let firstB = viewer.waitFor("first_frame", timeout: 5, where: { $0["room"] as? String == roomB })
        #expect(firstB?["preloaded"] as? Bool == true)
        #expect((firstB?["ms"] as? Double ?? 999) < 50, "\(String(describing: firstB))")
        #expect(b.waitFor("joined", timeout: 5, where: { $0["id"] as? String == id }) != nil)
        #expect(a.waitFor("left", timeout: 5, where: { $0["id"] as? String == id }) != nil)
        // Room a is now the neighbour kept ready.
        #expect(viewer.waitFor("preloaded", timeout: 10, where: { $0["room"] as? String == roomA }) != nil, "\(viewer.stderr)")
        Thread.sleep(forTimeInterval: 2)

        viewer.send("/prev")
        let toA = viewer.waitFor("switched", timeout: 5, where: { $0["to"] as? String == roomA })
        #expect(toA?["preloaded"] as? Bool == true, "\(String(describing: toA))")
        let firstA = viewer.events.filter { $0["event"] as? String == "first_frame" && $0["room"] as? String == roomA }
        #expect(viewer.waitFor("first_frame", timeout: 5, where: { $0["room"] as? String == roomA && $0["preloaded"] as? Bool == true }) != nil,
                "\(firstA)")
        Thread.sleep(forTimeInterval: 2)
        viewer.send("/quit")
        #expect(viewer.waitExit() == 0, "\(viewer.stderr)")
        #expect(a.events.filter { $0["event"] as? String == "joined" && $0["id"] as? String == id }.count == 2)

        // What the viewer decoded: red, then blue, then red again — never a picture of neither.
        let reader = try Y4MReader(path: dir + "/viewer.y4m")
        var states: [Character] = []
        while let f = try reader.nextFrame() { states.append(colour(f)) }
        let runs = states.reduce(into: [(Character, Int)]()) { r, s in
            if r.last?.0 == s { r[r.count - 1].1 += 1 } else { r.append((s, 1)) }
        }
        #expect(runs.map(\.0) == ["R", "B", "R"], "runs: \(runs)")
        #expect(runs.allSatisfy { $0.1 >= 30 }, "runs: \(runs)")
    }
}
