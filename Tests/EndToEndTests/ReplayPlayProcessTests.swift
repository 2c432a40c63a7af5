import Foundation
import LVBMedia
import Testing

/// A live ends; the rendezvous lists its replay after the live rooms; a
/// viewer plays it from the start and after a seek, from the host that
/// stayed to serve it.
@Suite(.serialized, .ownThread) struct ReplayPlayProcessTests {
    @Test func aReplayIsListedAfterTheLiveRoomsAndPlaysFromTheStartAndAfterASeek() throws {
        let home = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let rv = try NodeProcess(["rendezvous", "--ephemeral", "--listen", "127.0.0.1:0", "--json"])
        let address = try #require(rv.waitFor("ready")?["listen"] as? String, "rendezvous never became ready: \(rv.stderr)")
        let live = try NodeProcess(["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json", "--video", "none", "--audio", "none",
                                    "--title", "still live", "--rendezvous", address])
        let host = try NodeProcess(["host", "--home", home, "--replay", "--rendezvous", address, "--listen", "127.0.0.1:0", "--json",
                                    "--size", "320x180", "--title", "ten seconds"])
        let id = try #require(host.waitFor("replay")?["id"] as? String, "no replay: \(host.stderr)")
        Thread.sleep(forTimeInterval: 10)
        host.send("/close")
        #expect(host.waitFor("serving", timeout: 10)?["id"] as? String == id, "\(host.stderr)")
        // Live rooms first, then the replay (once the host told the rendezvous: polled, a busy machine is slow).
        var rooms: [[String: Any]] = [], out = ""
        for _ in 0..<25 where rooms.count < 2 {
            let (status, text, err) = try runToEnd(["rooms", "--rendezvous", address, "--json"])
            #expect(status == 0, "\(err)")
            out = text
            rooms = text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                .filter { $0["event"] as? String == "room" }
            if rooms.count < 2 { Thread.sleep(forTimeInterval: 0.2) }
        }
        #expect(rooms.map { $0["title"] as? String } == ["still live", "ten seconds"], "\(out)")
        #expect(rooms.last?["replay"] as? Bool == true && rooms.last?["id"] as? String == id)
        let duration = try #require(rooms.last?["duration_ms"] as? Int)
        #expect((9000...11_500).contains(duration), "\(duration) ms")
        // The replay's thumbnail: its live's last, signed by the host, kept with the replay and handed on by its holder.
        let thumbs = home + "/thumbs"
        try FileManager.default.createDirectory(atPath: thumbs, withIntermediateDirectories: true)
        let (listed, listing, why) = try runToEnd(["rooms", "--rendezvous", address, "--json", "--thumbnails", thumbs])
        #expect(listed == 0, "\(why)")
        #expect(listing.contains("\"event\":\"thumbnail\",\"id\":\"\(id)\""), "\(listing)")
        let jpeg = try Data(contentsOf: URL(fileURLWithPath: thumbs + "/\(id).jpg"))
        #expect(jpeg.starts(with: [0xFF, 0xD8]) && jpeg.count > 500, "\(jpeg.count) bytes")

        let y4m = home + "/played.y4m", wav = home + "/played.wav", recordings = home + "/recorded", sdp = home + "/replay.sdp"
        // A UDP socket standing in for ffplay behind --rtp-out.
        let rtp = try UDPReceiver()
        let viewer = try NodeProcess(["join", id, "--rendezvous", address, "--ephemeral", "--json", "--video-out", y4m,
                                      "--audio-out", wav, "--record", recordings, "--rtp-out", "127.0.0.1:\(rtp.port)", "--sdp", sdp])
        let start = try #require(viewer.waitFor("replay_frame", timeout: 10), "\(viewer.stderr)")
        #expect(start["at_ms"] as? Int == 0)
        Thread.sleep(forTimeInterval: 1.5)
        viewer.send("/seek 0:06")
        let seek = try #require(viewer.waitFor("replay_frame", where: { ($0["at_ms"] as? Int ?? 0) > 0 }))
        let at = try #require(seek["at_ms"] as? Int)
        #expect((6000...6040).contains(at), "\(at)")
        #expect((seek["after_ms"] as? Double ?? 1000) < 300, "\(seek)")
        #expect(viewer.waitFor("replay_ended", timeout: 15) != nil)
        #expect(viewer.waitExit() == 0)
        // The pictures: frame numbers from 0 on, then from the one captured at 6 s (frame 180 at 30 fps) on.
        let reader = try Y4MReader(path: y4m)
        var numbers: [Int] = []
        while let frame = try reader.nextFrame() { numbers.append(SyntheticVideo.readFrameNumber(frame) ?? -1) }
        let jump = try #require(numbers.indices.dropFirst().first { numbers[$0] != numbers[$0 - 1] + 1 }, "\(numbers)")
        #expect(numbers[0] == 0 && numbers[..<jump] == ArraySlice(0..<jump))
        #expect(abs(numbers[jump] - at * 30 / 1000) <= 1, "frame \(numbers[jump]) shown for \(at) ms")
        #expect(numbers[jump...] == ArraySlice(numbers[jump]..<(numbers[jump] + numbers.count - jump)))
        #expect(numbers.last.map { $0 >= duration * 30 / 1000 - 2 } == true, "\(numbers.last ?? -1)")
        // The sound and the recording, as for a live stream: about 1.5 s before the seek and 4 s after it.
        let samples = ((try? FileManager.default.attributesOfItem(atPath: wav)[.size] as? Int) ?? 0) / 2
        #expect((4 * 48000...7 * 48000).contains(samples), "\(samples) samples")
        let recorded = try FileManager.default.contentsOfDirectory(atPath: recordings).filter { $0.hasSuffix(".webm") }
        #expect(recorded.count == 1)
        if let file = recorded.first, Tool.path("ffprobe") != nil {
            let probed = String(decoding: try Tool.run("ffprobe", ["-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0",
                                                                   recordings + "/" + file]), as: UTF8.self)
            #expect(probed.contains("vp8") && probed.contains("opus"), "\(probed)")
        }
        // Plain RTP of the replay reached --rtp-out (VP8 on this port), as the SDP says.
        #expect(rtp.payloadTypes.contains(96))
        #expect((try? String(contentsOfFile: sdp, encoding: .utf8))?.contains("a=rtpmap:96 VP8/90000") == true)
        // Issue 47: a /seek typed before the replay's manifest is here is kept, said so, and done when it comes.
        let early = try NodeProcess(["join", id, "--rendezvous", address, "--ephemeral", "--json"])
        early.send("/seek 0:06")
        let kept = early.waitFor("replay_state", timeout: 10) { ($0["text"] as? String)?.contains("not here yet") == true }
        #expect(kept?["text"] as? String == "the replay is not here yet: seeking to 0:06 once it is", "\(early.events)")
        let shown = try #require(early.waitFor("replay_frame", timeout: 10), "\(early.stderr)")
        #expect((6000...6040).contains(shown["at_ms"] as? Int ?? 0), "the first picture: \(shown)")
        #expect(!early.events.contains { $0["event"] as? String == "error" }, "no usage line: \(early.events)")
        early.send("/quit")
        _ = early.waitExit()
        host.send("/quit")
        #expect(host.waitExit() == 0)
        live.send("/quit")
        _ = live.waitExit()
        rv.signal(SIGTERM)
        _ = rv.waitExit()
    }
}
