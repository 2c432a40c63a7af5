import Foundation
import LVBMedia
import Testing

/// Viewers that keep a replay serve it: a player takes it from three
/// holders at once, the host serving less than half; a holder killed
/// mid-play costs no long stall; a segment changed on a holder's disk is
/// never passed on.
@Suite(.serialized, .ownThread) struct ReplayHoldersProcessTests {
    @Test func threeHoldersShareAReplayAndOneDyingOrHoldingABadSegmentCostsNothing() throws {
        let base = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let rv = try NodeProcess(["rendezvous", "--ephemeral", "--listen", "127.0.0.1:0", "--json"])
        let address = try #require(rv.waitFor("ready")?["listen"] as? String, "rendezvous never became ready: \(rv.stderr)")
        let host = try NodeProcess(["host", "--home", base + "/host", "--replay", "--rendezvous", address, "--listen", "127.0.0.1:0",
                                    "--json", "--size", "320x180", "--bitrate", "600"])
        let id = try #require(host.waitFor("replay")?["id"] as? String, "no replay: \(host.stderr)")
        Thread.sleep(forTimeInterval: 16)
        host.send("/close")
        #expect(host.waitFor("serving", timeout: 10) != nil, "\(host.stderr)")
        Thread.sleep(forTimeInterval: 0.5)

        // Two viewers keep it whole, then serve it from their homes.
        var servers: [NodeProcess] = []
        for name in ["a", "b"] {
            let keeper = try NodeProcess(["join", id, "--rendezvous", address, "--home", base + "/" + name, "--keep-replays", "--json"])
            #expect(keeper.waitFor("replay_kept", timeout: 15) != nil, "\(keeper.stderr)")
            keeper.send("/quit")
            #expect(keeper.waitExit() == 0)
            servers.append(try NodeProcess(["replays", "--serve", "--home", base + "/" + name, "--rendezvous", address,
                                            "--listen", "127.0.0.1:0", "--json"]))
            #expect(servers.last?.waitFor("ready") != nil)
        }
        // b's copy of segment 2 goes bad on its disk: b never serves it.
        let bad = base + "/b/replays/\(id)/000002.seg"
        var bytes = try #require(FileManager.default.contents(atPath: bad))
        bytes[bytes.count / 2] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: bad))
        // Until the rendezvous knows the three holders (a busy machine is slow).
        for _ in 0..<25 {
            let (_, listed, _) = try runToEnd(["rooms", "--rendezvous", address, "--json"])
            if listed.contains("\"holders\":3") { break }
            Thread.sleep(forTimeInterval: 0.2)
        }

        let y4m = base + "/played.y4m"
        let player = try NodeProcess(["join", id, "--rendezvous", address, "--ephemeral", "--json", "--video-out", y4m])
        let started = try #require(player.waitFor("replay", timeout: 10))
        #expect(started["holders"] as? Int == 3, "\(started)")
        #expect(player.waitFor("replay_frame", timeout: 10) != nil, "\(player.stderr)")
        Thread.sleep(forTimeInterval: 3)
        servers[0].signal(SIGKILL)
        #expect(player.waitFor("replay_ended", timeout: 30) != nil, "\(player.stderr)")
        #expect(player.waitExit() == 0)
        let exit = try #require(player.events.last { $0["event"] as? String == "exit" })
        let summary = try #require(exit["replay"] as? [String: Any])
        let from = try #require(summary["bytes_from"] as? [String: Int])
        let total = Double(from.values.reduce(0, +))
        let hostID = try #require(host.events.first { $0["event"] as? String == "ready" }?["id"] as? String)
        #expect(Double(from[hostID] ?? 0) / total < 0.5, "host's share: \(from)")
        #expect(summary["bad_files"] as? Int == 0)
        // No stall past a second after the first picture, and every picture in order.
        let stalls = player.events.filter { $0["event"] as? String == "replay_resumed" }.dropFirst().compactMap { $0["stalled_ms"] as? Double }
        #expect(stalls.allSatisfy { $0 < 1000 }, "\(stalls)")
        let reader = try Y4MReader(path: y4m)
        var numbers: [Int] = []
        while let frame = try reader.nextFrame() { numbers.append(SyntheticVideo.readFrameNumber(frame) ?? -1) }
        #expect(numbers.count > 400 && numbers == Array(0..<numbers.count), "\(numbers.count) pictures")
        host.send("/quit")
        _ = host.waitExit()
        servers[1].signal(SIGTERM)
        _ = servers[1].waitExit()
        rv.signal(SIGTERM)
        _ = rv.waitExit()
    }
}
