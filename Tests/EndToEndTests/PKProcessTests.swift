import Foundation
import LVBMedia
import TestAssertions
import Testing

/// A PK between two rooms as real processes over loopback: a rendezvous,
/// two hosts (red with one tone, blue with another) and a viewer in each
/// room writing what it decodes. After `/pk ROOM-ID` and `/pk accept` each
/// viewer's pictures show its own host on the left and the other on the
/// right, and its sound holds both tones; likes and gifts score for their
/// own side and both rooms see both scores; `/pk end` gives each room its
/// own picture back; a host killed during a second PK ends it in the other
/// room within 3 s.
@Suite(.serialized, .ownThread) struct PKProcessTests {
    static let size = (width: 320, height: 180)
    static let red: (UInt8, UInt8, UInt8) = (81, 90, 240), blue: (UInt8, UInt8, UInt8) = (41, 240, 110)
    static let redTone = 440.0, blueTone = 1200.0

    private func writeSources(_ dir: String, _ name: String, colour: (UInt8, UInt8, UInt8), tone: Double) throws -> (String, String) {
        let y4m = "\(dir)/\(name).y4m", wav = "\(dir)/\(name).wav"
        try writeSolidY4M(y4m, width: Self.size.width, height: Self.size.height, colour: colour)
        let audio = try WAVWriter(path: wav)
        try audio.write((0..<48000).map { Int16((0.25 * 32767 * sin(2 * .pi * tone * Double($0) / 48000)).rounded()) })
        audio.close()
        return (y4m, wav)
    }

    /// Whole seconds of a 48 kHz WAV, each as (red tone dB, blue tone dB).
    private func toneSeconds(_ path: String) throws -> [(red: Double, blue: Double)] {
        let wav = try WAVReader(path: path)
        var out: [(Double, Double)] = []
        while let second = try wav.read(samplesPerChannel: 48000), second.count == 48000 {
            out.append((toneLevel(second, at: Self.redTone), toneLevel(second, at: Self.blueTone)))
        }
        return out
    }

    @Test func bothAudiencesSeeAndHearBothHostsScoresReachBothRoomsAndAKilledHostEndsIt() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let size = "\(Self.size.width)x\(Self.size.height)"
        let rv = try NodeProcess(["rendezvous", "--ephemeral", "--listen", "127.0.0.1:0", "--json"])
        defer { rv.signal(SIGTERM); _ = rv.waitExit() }
        let address = try #require(rv.waitFor("ready")?["listen"] as? String)
        func host(_ name: String, _ colour: (UInt8, UInt8, UInt8), _ tone: Double) throws -> (NodeProcess, String) {
            let (video, audio) = try writeSources(dir, name, colour: colour, tone: tone)
            let h = try NodeProcess(["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json", "--title", name, "--nick", name + "-host",
                                     "--video", video, "--audio", audio, "--size", size, "--gop", "1", "--rendezvous", address])
            let ready = try #require(h.waitFor("ready"), "host never became ready: \(h.stderr)")
            return (h, try #require(ready["room"] as? String))
        }
        let (a, roomA) = try host("red", Self.red, Self.redTone)
        let (b, roomB) = try host("blue", Self.blue, Self.blueTone)
        defer { for h in [a, b] { h.signal(SIGKILL); _ = h.waitExit() } }
        for _ in 0..<25 {
            let (_, out, _) = try runToEnd(["rooms", "--rendezvous", address, "--json"])
            if out.contains(roomA) && out.contains(roomB) { break }
            Thread.sleep(forTimeInterval: 0.2)
        }
        func viewer(_ room: String, _ name: String) throws -> NodeProcess {
            try NodeProcess(["join", room, "--rendezvous", address, "--ephemeral", "--json", "--nick", name,
                             "--video-out", "\(dir)/\(name).y4m", "--audio-out", "\(dir)/\(name).wav"])
        }
        let va = try viewer(roomA, "va"), vb = try viewer(roomB, "vb")
        defer { for v in [va, vb] { v.signal(SIGKILL); _ = v.waitExit() } }
        for v in [va, vb] { #expect(v.waitFor("first_frame", timeout: 20) != nil, "viewer: \(v.stderr)") }
        Thread.sleep(forTimeInterval: 2)

        // A mistyped PK is one line; then red asks blue for a one-minute PK, found through the rendezvous.
        a.send("/pk nowhere")
        #expect(a.waitFor("error", timeout: 5)?["message"] as? String ?? "" != "")
        a.send("/pk \(roomB) 1")
        let request = try #require(b.waitFor("pk_request", timeout: 15), "blue: \(b.stderr)")
        #expect(request["room"] as? String == roomA && request["title"] as? String == "red" && request["minutes"] as? Int == 1)
        b.send("/pk accept")
        for (p, other, title) in [(a, roomB, "blue"), (va, roomB, "blue"), (b, roomA, "red"), (vb, roomA, "red")] {
            let started = p.waitFor("pk_started", timeout: 10)
            #expect(started?["room"] as? String == other && started?["title"] as? String == title, "\(String(describing: started))")
        }
        Thread.sleep(forTimeInterval: 3)
        // Three likes for red, a rose (1) and a heart (10) for blue: both rooms see both scores.
        for _ in 0..<3 { va.send("/like") }
        vb.send("/gift rose")
        vb.send("/gift heart")
        for (v, ours, theirs) in [(va, 3, 11), (vb, 11, 3)] {
            let score = v.waitFor("pk_score", timeout: 10, where: { $0["ours"] as? Int == ours && $0["theirs"] as? Int == theirs })
            #expect(score != nil, "\(v.events.filter { ($0["event"] as? String ?? "").hasPrefix("pk") })")
        }
        Thread.sleep(forTimeInterval: 2)
        a.send("/pk end")
        for (p, reason, result) in [(va, "ended_by_host", "lost"), (vb, "ended_by_other", "won")] {
            let ended = p.waitFor("pk_ended", timeout: 10)
            #expect(ended?["reason"] as? String == reason && ended?["result"] as? String == result, "\(String(describing: ended))")
        }
        Thread.sleep(forTimeInterval: 4)

        // A second PK; red's host is killed in it: blue's room hears it is over within 3 s.
        let (markB, markVB) = (b.events.count, vb.events.count)
        a.send("/pk \(roomB) 1")
        #expect(b.waitFor("pk_request", after: markB, timeout: 15) != nil, "blue: \(b.stderr)")
        b.send("/pk accept")
        #expect(vb.waitFor("pk_started", after: markVB, timeout: 10) != nil)
        Thread.sleep(forTimeInterval: 4)
        a.signal(SIGKILL)
        let killed = Date()
        let silent = b.waitFor("pk_ended", after: markB, timeout: 8)
        let took = Date().timeIntervalSince(killed)
        #expect(silent?["reason"] as? String == "other_host_silent" && took <= 3.5, "\(String(describing: silent)) after \(took) s")
        #expect(vb.waitFor("pk_ended", after: markVB, timeout: 5)?["reason"] as? String == "other_host_silent")
        Thread.sleep(forTimeInterval: 3)
        va.signal(SIGTERM)
        vb.send("/quit")
        #expect(vb.waitExit(timeout: 20) == 0, "\(vb.stderr)")
        _ = va.waitExit(timeout: 20)

        // Pictures: own host whole, both side by side (own on the left), own whole again, side by side, whole.
        #expect(try SideBySide.runs(dir + "/vb.y4m") == ["BB", "BR", "BB", "BR", "BB"], "blue's viewer")
        let red = try SideBySide.runs(dir + "/va.y4m")
        #expect(Array(red.prefix(4)) == ["RR", "RB", "RR", "RB"], "red's viewer: \(red)")
        // Sound: blue's viewer hears red's tone only during the PKs; blue's throughout.
        let heard = try toneSeconds(dir + "/vb.wav")
        let withRed = heard.filter { $0.red > -30 }.count
        #expect(withRed >= 10 && withRed <= 24, "seconds with red's tone: \(heard.map { Int($0.red) })")
        #expect(heard.dropFirst().dropLast().allSatisfy { $0.blue > -30 }, "blue throughout: \(heard.map { Int($0.blue) })")
        #expect(heard.dropLast().suffix(2).allSatisfy { $0.red < -50 }, "after the PK: \(heard.map { Int($0.red) })")
    }
}
