import Foundation
import Testing

/// A host keeps its live as a replay; `lvbnode replays` lists, exports and
/// deletes it; mistakes in the options are one line.
@Suite(.serialized, .ownThread) struct ReplayProcessTests {
    private func replays(_ home: String, _ arguments: [String]) throws -> (Int32, String, String) {
        try runToEnd(["replays"] + arguments + ["--home", home])
    }

    @Test func aHostKeepsItsLiveAsAReplayThatExportsToASeekableWebM() throws {
        let home = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let host = try NodeProcess(["host", "--home", home, "--listen", "127.0.0.1:0", "--json", "--size", "320x180",
                                    "--title", "six seconds", "--duration", "6"])
        let started = try #require(host.waitFor("replay"), "no replay event: \(host.stderr)")
        let id = try #require(started["id"] as? String)
        #expect(started["path"] as? String == home + "/replays/" + id)
        _ = host.waitFor("exit", timeout: 20)
        let (status, out, err) = try replays(home, ["list", "--json"])
        #expect(status == 0, "\(err)")
        let listed = out.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(listed.count == 1)
        let r = try #require(listed.first)
        #expect(r["id"] as? String == id && r["title"] as? String == "six seconds" && r["ended"] as? Bool == true)
        let ms = try #require(r["duration_ms"] as? Int)
        #expect((5000...6500).contains(ms), "\(ms) ms kept of a 6 s live")
        let segments = try #require(r["segments"] as? Int)
        #expect(segments >= 2 && r["held"] as? Int == segments)

        let file = home + "/export.webm"
        let (exported, said, exportErr) = try replays(home, ["export", id, file])
        #expect(exported == 0 && said.hasPrefix("wrote \(file)"), "\(exportErr)")
        if Tool.path("ffprobe") != nil {
            let probed = String(decoding: try Tool.run("ffprobe", ["-v", "error", "-show_entries", "format=duration:stream=codec_name",
                                                                   "-of", "default=noprint_wrappers=1", file]), as: UTF8.self)
            #expect(probed.contains("codec_name=vp8") && probed.contains("codec_name=opus"), "\(probed)")
            let seconds = probed.split(separator: "\n").first { $0.hasPrefix("duration=") }.flatMap { Double($0.dropFirst(9)) }
            #expect(seconds.map { abs($0 * 1000 - Double(ms)) < 100 } == true, "\(probed) against \(ms) ms")
            // A player seeks into it (Cues) and decodes from there.
            let frames = String(decoding: try Tool.run("ffprobe", ["-v", "error", "-read_intervals", "3%+1", "-select_streams", "v:0",
                                                                   "-show_entries", "frame=pts_time", "-of", "csv=p=0", file]), as: UTF8.self)
            let times = frames.split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
            #expect(!times.isEmpty && times.allSatisfy { $0 >= 1.9 && $0 <= 4.1 }, "\(times)")
        }
        let (deleted, _, _) = try replays(home, ["delete", id])
        #expect(deleted == 0)
        let (_, after, _) = try replays(home, ["--json"])
        #expect(after.isEmpty)
    }

    @Test func withoutAHomeOrWithNoReplayNothingIsKept() throws {
        let home = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let (status, out, _) = try runToEnd(["host", "--home", home, "--no-replay", "--listen", "127.0.0.1:0", "--json", "--duration", "2"])
        #expect(status == 0 && !out.contains("\"event\":\"replay\""))
        #expect(!FileManager.default.fileExists(atPath: home + "/replays"))
        let dir = home + "/chosen"
        let (ephemeral, said, _) = try runToEnd(["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json", "--duration", "2", "--replay-dir", dir])
        #expect(ephemeral == 0 && !said.contains("\"event\":\"replay\""))
        #expect(!FileManager.default.fileExists(atPath: dir))
    }

    @Test func replayMistakesAreOneLine() throws {
        let home = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let file = home + "/a-file"
        #expect(FileManager.default.createFile(atPath: file, contents: Data([1])))
        let (notDir, _, err) = try runToEnd(["host", "--home", home, "--listen", "127.0.0.1:0", "--duration", "2", "--replay-dir", file])
        #expect(notDir == 1 && err == "lvbnode: error: --replay-dir \(file): not a directory; give a directory for replays\n")
        let (budget, _, budgetErr) = try runToEnd(["host", "--home", home, "--listen", "127.0.0.1:0", "--replay-budget", "1M"])
        #expect(budget == 64 && budgetErr.contains("--replay-budget 1M: give at least 16M"))
        let (badID, _, badErr) = try replays(home, ["export", "nope", home + "/x.webm"])
        #expect(badID == 64 && badErr.contains("nope is not a replay id"))
        let missing = String(repeating: "a", count: 26)
        let (unknown, _, unknownErr) = try replays(home, ["delete", missing])
        #expect(unknown == 1 && unknownErr == "lvbnode: error: no replay \(missing) is held here; `lvbnode replays` lists those that are\n")
    }
}
