import Foundation
import LVBMedia
import LVBMesh
import Testing

/// Replays behind real NATs (issue 47): a host behind its home NAT keeps a
/// replay of its live and serves it once the room is closed; players behind
/// another home's NAT join it by its id, ten in a row, each playing from
/// the start and from a seek with every picture the one asked for. With
/// ordinary NATs, with random-port NATs on both sides and the rendezvous
/// relaying, and with the replay served by a viewer that kept it
/// (`--keep-replays`, then `replays --serve` from its own home) after the
/// host left. Before, the player dialled the holder's addresses before its
/// session with the rendezvous was up, so nobody introduced the two and
/// the holder's NAT dropped every request.
@Suite(.serialized, .ownThread, .enabled(if: NATLab.available)) struct NATReplayProcessTests {
    enum Variant: String, CustomStringConvertible, CaseIterable {
        case ordinaryNATs, hardNATsRelayed, keptByAViewer
        var description: String { rawValue }
        var internet: NATLab.Internet { self == .keptByAViewer ? .privateRange : .publicRange }
        /// The holder's and the players' homes with random-port NATs.
        var hard: Set<Int> { self == .hardNATsRelayed ? [1, 2] : [] }
        var relayKbps: Int { self == .hardNATsRelayed ? 8000 : 0 }
    }

    static let runs = 10, fps = 30, seekTo = 4000

    @Test(arguments: Variant.allCases)
    func playersBehindANATPlayAReplayHeldBehindAnotherFromTheStartAndAfterASeek(_ variant: Variant) throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let lab = try NATLab(tag: "lvy\(getpid() % 1000)", sites: 3, internet: variant.internet, hard: variant.hard)
        defer { lab.remove() }
        let (rv, host, _, _) = try lab.room(relayKbps: variant.relayKbps, hostArguments: [
            "--home", dir + "/host", "--replay", "--size", "320x180", "--fps", "\(Self.fps)", "--bitrate", "300", "--title", "behind a NAT"])
        var holders = [host]
        defer { for p in holders + [rv] { p.signal(SIGTERM); _ = p.waitExit() } }
        let id = try #require(host.waitFor("replay")?["id"] as? String, "no replay: \(host.stderr)")
        Thread.sleep(forTimeInterval: 7)
        host.send("/close")
        #expect(host.waitFor("serving", timeout: 10)?["id"] as? String == id, "\(host.stderr)")
        #expect(try listed(id, holders: 1, in: lab), "the rendezvous never listed the replay with its holder")

        var playersSite = "2"
        if variant == .keptByAViewer {
            // A viewer behind home 2's NAT plays it and keeps it, then serves it from its home; the host leaves.
            let keeper = try lab.run("2", ["join", id, "--rendezvous", lab.rendezvous, "--home", dir + "/keeper", "--keep-replays", "--json"])
            #expect(keeper.waitFor("replay_kept", timeout: 30) != nil, "the keeper never kept it: \(keeper.stderr)")
            keeper.send("/quit")
            #expect(keeper.waitExit() == 0)
            let server = try lab.run("2", ["replays", "--serve", "--home", dir + "/keeper", "--rendezvous", lab.rendezvous,
                                           "--listen", "0.0.0.0:7500", "--json"])
            holders.append(server)
            #expect(server.waitFor("ready") != nil, "\(server.stderr)")
            host.send("/quit")
            #expect(host.waitExit() == 0)
            holders.removeFirst()
            #expect(try listed(id, holders: 1, in: lab, held: true), "the rendezvous never listed the keeper alone")
            playersSite = "3"
        }

        var failures: [String] = []
        for run in 1...Self.runs {
            if let failure = try play(id, from: playersSite, in: lab, y4m: dir + "/run\(run).y4m") {
                failures.append("run \(run): \(failure)")
            }
        }
        print("NAT replay (\(variant)): \(Self.runs - failures.count) of \(Self.runs) players played from the start and from \(Self.seekTo) ms")
        #expect(failures.isEmpty, "(\(variant)) \(failures.joined(separator: "; "))")
        if variant == .hardNATsRelayed {
            rv.signal(SIGTERM)
            _ = rv.waitExit()
            let relayed = (rv.waitFor("exit", timeout: 1)?["stats"] as? [String: Any])?["relayed_datagrams"] as? Int ?? 0
            #expect(relayed > 100, "past two random-port NATs the rendezvous relays: \(relayed) datagrams")
        }
    }

    /// Whether `lvbnode rooms` lists the replay with `holders` holders
    /// (polled for 10 s; `held`: wait for the count to be exactly that after a holder left).
    private func listed(_ id: String, holders: Int, in lab: NATLab, held: Bool = false) throws -> Bool {
        for _ in 0..<50 {
            let rooms = try lab.run("rv", ["rooms", "--rendezvous", lab.rendezvous, "--json"])
            _ = rooms.waitExit()
            if rooms.events.contains(where: { $0["id"] as? String == id && $0["holders"] as? Int == holders }) { return true }
            Thread.sleep(forTimeInterval: 0.2)
        }
        return false
    }

    /// One player behind home `site`: the first picture from 0, then a
    /// seek, then to the end; nil when every picture was the one asked for.
    private func play(_ id: String, from site: String, in lab: NATLab, y4m: String) throws -> String? {
        let player = try lab.run(site, ["join", id, "--rendezvous", lab.rendezvous, "--ephemeral", "--json", "--video-out", y4m])
        defer { player.signal(SIGTERM); _ = player.waitExit() }
        let summary = { (player.events.last { $0["event"] as? String == "exit" }?["replay"]).map { "\($0)" } ?? player.stderr }
        guard let first = player.waitFor("replay_frame", timeout: 15) else {
            player.send("/quit")
            _ = player.waitExit()
            return "no first picture in 15 s: \(summary())"
        }
        guard first["at_ms"] as? Int == 0 else { return "first picture at \(first["at_ms"] ?? "?") ms" }
        Thread.sleep(forTimeInterval: 0.5)
        player.send("/seek \(Self.seekTo / 1000)")
        guard let seek = player.waitFor("replay_frame", timeout: 10, where: { ($0["at_ms"] as? Int ?? 0) > 0 }),
              let at = seek["at_ms"] as? Int else { return "no picture after the seek: \(summary())" }
        // The first recorded picture at or after the target: within a frame
        // interval, or two where the live host, busy beside the other NAT
        // suites, recorded no picture there (4043 ms for 4000 in every run
        // of one recording: its picture at 4010 was never encoded).
        guard (Self.seekTo...(Self.seekTo + 2 * 1000 / Self.fps + 5)).contains(at) else { return "the seek to \(Self.seekTo) ms showed \(at) ms" }
        guard player.waitFor("replay_ended", timeout: 15) != nil else { return "never reached the end: \(summary())" }
        guard player.waitExit() == 0 else { return "exit status \(player.process.terminationStatus)" }
        let reader = try Y4MReader(path: y4m)
        var numbers: [Int] = []
        while let frame = try reader.nextFrame() { numbers.append(SyntheticVideo.readFrameNumber(frame) ?? -1) }
        guard let jump = numbers.indices.dropFirst().first(where: { numbers[$0] != numbers[$0 - 1] + 1 }) else {
            return "no jump in \(numbers.count) pictures"
        }
        guard numbers[0] == 0, numbers[..<jump] == ArraySlice(0..<jump) else { return "before the seek: \(numbers[..<jump])" }
        guard abs(numbers[jump] - at * Self.fps / 1000) <= 1 else { return "frame \(numbers[jump]) shown for \(at) ms" }
        guard numbers[jump...] == ArraySlice(numbers[jump]..<(numbers[jump] + numbers.count - jump)) else {
            return "after the seek, pictures out of order: \(numbers[jump...].prefix(40))…"
        }
        return nil
    }
}
