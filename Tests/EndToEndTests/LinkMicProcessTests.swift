import Foundation
import LVBMedia
import TestAssertions
import Testing

/// Link-mic between real processes over loopback: a host (one colour, one
/// tone), a guest (another colour, another tone) and a viewer writing what
/// it decodes. After /accept the viewer's pictures carry the guest's colour
/// in the picture-in-picture tile and its sound holds both tones; after
/// /hangup neither; the guest never hears its own tone come back.
@Suite(.serialized, .ownThread) struct LinkMicProcessTests {
    static let size = (width: 320, height: 180)
    /// BT.601 red and blue, and two tones far apart.
    static let hostColour: (UInt8, UInt8, UInt8) = (81, 90, 240), guestColour: (UInt8, UInt8, UInt8) = (41, 240, 110)
    static let hostTone = 440.0, guestTone = 1200.0

    private func writeSources(_ dir: String, _ name: String, colour: (UInt8, UInt8, UInt8), tone: Double) throws -> (String, String) {
        let y4m = "\(dir)/\(name).y4m", wav = "\(dir)/\(name).wav"
        try writeSolidY4M(y4m, width: Self.size.width, height: Self.size.height, colour: colour)
        let audio = try WAVWriter(path: wav)
        let samples = (0..<48000).map { Int16((0.25 * 32767 * sin(2 * .pi * tone * Double($0) / 48000)).rounded()) }
        try audio.write(samples)
        audio.close()
        return (y4m, wav)
    }

    /// Mean U and V in the middle of `rect`.
    private func chroma(_ f: I420Frame, _ rect: StageRect) -> (u: Double, v: Double) {
        var u = 0, v = 0, n = 0
        for y in (rect.y + rect.height / 4) / 2..<(rect.y + rect.height * 3 / 4) / 2 {
            for x in (rect.x + rect.width / 4) / 2..<(rect.x + rect.width * 3 / 4) / 2 {
                u += Int(f.u[y * f.chromaStride + x])
                v += Int(f.v[y * f.chromaStride + x])
                n += 1
            }
        }
        return (Double(u) / Double(n), Double(v) / Double(n))
    }

    private func isGuest(_ c: (u: Double, v: Double)) -> Bool { abs(c.u - 240) < 30 && abs(c.v - 110) < 30 }
    private func isHost(_ c: (u: Double, v: Double)) -> Bool { abs(c.u - 90) < 30 && abs(c.v - 240) < 30 }

    /// Whole seconds of `path` (48 kHz mono WAV), each as (host tone dB, guest tone dB).
    private func toneSeconds(_ path: String) throws -> [(host: Double, guest: Double)] {
        let wav = try WAVReader(path: path)
        var out: [(Double, Double)] = []
        while let second = try wav.read(samplesPerChannel: 48000), second.count == 48000 {
            out.append((toneLevel(second, at: Self.hostTone), toneLevel(second, at: Self.guestTone)))
        }
        return out
    }

    @Test func theViewerSeesAndHearsTheGuestOnlyWhileOnStageAndTheGuestNeverHearsItself() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (hostVideo, hostAudio) = try writeSources(dir, "host", colour: Self.hostColour, tone: Self.hostTone)
        let (guestVideo, guestAudio) = try writeSources(dir, "guest", colour: Self.guestColour, tone: Self.guestTone)
        let size = "\(Self.size.width)x\(Self.size.height)"
        let host = try NodeProcess(["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json", "--nick", "anchor",
                                    "--video", hostVideo, "--audio", hostAudio, "--size", size, "--gop", "1"])
        let ticket = try #require(host.waitFor("ready")?["ticket"] as? String, "host never became ready: \(host.stderr)")
        let guest = try NodeProcess(["join", ticket, "--ephemeral", "--json", "--nick", "singer",
                                     "--video", guestVideo, "--audio", guestAudio, "--size", size, "--audio-out", dir + "/guest-heard.wav"])
        let viewer = try NodeProcess(["join", ticket, "--ephemeral", "--json",
                                      "--video-out", dir + "/viewer.y4m", "--audio-out", dir + "/viewer.wav"])
        let guestID = try #require(guest.waitFor("ready")?["id"] as? String, "guest: \(guest.stderr)")
        #expect(guest.waitFor("admitted") != nil, "guest: \(guest.stderr)")
        #expect(viewer.waitFor("first_frame", timeout: 20) != nil, "viewer: \(viewer.stderr)")
        Thread.sleep(forTimeInterval: 2)

        guest.send("/linkmic may I sing?")
        let request = try #require(host.waitFor("linkmic_request", timeout: 10), "host: \(host.stderr)")
        #expect(request["id"] as? String == guestID && request["nick"] as? String == "singer" && request["message"] as? String == "may I sing?")
        host.send("/accept singer")
        #expect(guest.waitFor("linkmic_accepted", timeout: 10) != nil, "guest: \(guest.stderr)")
        for p in [host, guest, viewer] {
            #expect(p.waitFor("linkmic_started", timeout: 10, where: { $0["id"] as? String == guestID }) != nil)
        }
        viewer.send("/viewers")
        let list = try #require(viewer.waitFor("viewers", timeout: 5)?["viewers"] as? [[String: Any]])
        #expect(list.first { $0["id"] as? String == guestID }?["cohost"] as? Bool == true)
        Thread.sleep(forTimeInterval: 5)
        // The stats lines (every 2 s with --json) show the mix and the guest on
        // stage: the next ones from now (the first on-stage line can come
        // before the guest's first frame went out, on a busy machine).
        let printed = [host, guest].map { $0.events.count }
        func media(_ p: NodeProcess, _ match: @escaping ([String: Any]) -> Bool) -> [String: Any]? {
            p.waitFor("stats", after: p === host ? printed[0] : printed[1], timeout: 5,
                      where: { ($0["media"] as? [String: Any]).map(match) ?? false })?["media"] as? [String: Any]
        }
        let mixing = try #require(media(host) { $0["guests"] as? Int == 1 }, "no stats with a guest: \(host.events.suffix(3))")
        #expect(mixing["layout"] as? String == "pip" && (mixing["mix_ms"] as? Double ?? 0) > 0, "\(mixing)")
        let stageStats = try #require(media(guest) { $0["on_stage"] as? Bool == true }, "no stats on stage")
        #expect((stageStats["stage_frames"] as? Int ?? 0) > 30, "\(stageStats)")

        host.send("/hangup")
        for p in [host, guest, viewer] {
            let ended = p.waitFor("linkmic_ended", timeout: 10, where: { $0["id"] as? String == guestID })
            #expect(ended?["reason"] as? String == "host_hung_up")
        }
        Thread.sleep(forTimeInterval: 4)
        for p in [viewer, guest] { p.send("/quit") }
        #expect(viewer.waitExit(timeout: 20) == 0 && guest.waitExit(timeout: 20) == 0, "\(viewer.stderr) \(guest.stderr)")
        host.signal(SIGTERM)
        #expect(host.waitExit() == 0)

        // Pictures: host only, then the guest in the pip tile for about the
        // five seconds on stage, then host only again.
        let tile = StageRect.rects(for: .pip, participants: 2, width: Self.size.width, height: Self.size.height)[1]
        let reader = try Y4MReader(path: dir + "/viewer.y4m")
        var states: [Character] = []
        while let f = try reader.nextFrame() {
            let c = chroma(f, tile)
            states.append(isGuest(c) ? "G" : isHost(c) ? "H" : "?")
        }
        let runs = states.reduce(into: [(Character, Int)]()) { r, s in
            if r.last?.0 == s { r[r.count - 1].1 += 1 } else { r.append((s, 1)) }
        }.filter { $0.1 >= 3 }.map(\.0)
        #expect(runs == ["H", "G", "H"], "runs of tile states: \(runs), \(states.count) frames")
        let onStage = states.filter { $0 == "G" }.count
        #expect(onStage >= 30 * 3 && onStage <= 30 * 7, "\(onStage) pictures with the guest")
        // Outside the tile the viewer always sees the host's colour.
        let corner = StageRect(x: 8, y: 8, width: 80, height: 60)
        let reread = try Y4MReader(path: dir + "/viewer.y4m")
        while let f = try reread.nextFrame() { #expect(isHost(chroma(f, corner))); break }

        // Sound: the viewer hears the guest's tone only during the stage; the guest never hears its own.
        let heard = try toneSeconds(dir + "/viewer.wav")
        let withGuest = heard.filter { $0.guest > -30 }.count
        #expect((3...7).contains(withGuest), "seconds with the guest's tone: \(heard.map { Int($0.guest) })")
        // (The first and last seconds may hold the start and end of the stream.)
        #expect(heard.dropFirst().dropLast().allSatisfy { $0.host > -30 }, "the host is heard throughout: \(heard.map { Int($0.host) })")
        #expect(heard.dropLast().suffix(2).allSatisfy { $0.guest < -50 }, "after hangup: \(heard.map { Int($0.guest) })")
        let own = try toneSeconds(dir + "/guest-heard.wav")
        #expect(own.count >= 8)
        #expect(own.allSatisfy { $0.guest < -50 }, "the guest heard itself: \(own.map { Int($0.guest) })")
        #expect(own.dropFirst().dropLast().allSatisfy { $0.host > -30 }, "the guest hears the host: \(own.map { Int($0.host) })")
    }
}
