import LVBMedia

#if canImport(Glibc)
import Glibc
#endif

// The host's link-mic mix (`LVBBench <seconds> mix` runs this alone):
//
// 1. CPU, in process on the library code (MixBenchLoop.swift), for 1 guest at
//    640x360 (pip) and 3 guests at 1280x720 (grid), against an ffmpeg doing the
//    same work on the same inputs in the same run (MixBenchReference.swift).
//    Both run as fast as they go over 2 × `seconds` of media (4–20 s); CPU
//    seconds per media second is the fraction of one core the work takes at
//    real time. "Same work as ffmpeg" leaves out the return (mix-minus) streams
//    the host also makes for its guests; the total has them.
// 2. Mix latency from the same run: a guest picture's hand-off to StageMixer →
//    the main encode of the first mix showing it done (the wait for the host's
//    slot on the virtual schedule, plus mix and encodes as measured).
// 3. Glass-to-glass through the real binary as processes (MixBenchStage.swift).

enum MixBench {
    static let fps = 30
    static let gopSeconds = 2.0
    static let scenarios = [
        // The host's defaults (PublisherSetup: 640x360, 1000 kbit/s), and 720p at a usual 2.5 Mbit/s.
        MixScenario(guests: 1, width: 640, height: 360, bitrateKbps: 1000),
        MixScenario(guests: 3, width: 1280, height: 720, bitrateKbps: 2500),
    ]
    static let goalRatio = 1.0, goalOneGuestPercent = 20.0

    static func runAndPrint(seconds: Double) {
        let mediaSeconds = min(20, max(4, (2 * seconds).rounded()))
        let frames = Int(mediaSeconds) * fps
        say("")
        say("link-mic mix, host CPU: the library's receivers, StageMixer and encoders in process, as fast as "
            + "they go, over \(fixed(mediaSeconds, 0)) s of media")
        say("  inputs: each guest's synthetic .guest stream pre-encoded (VideoStreamEncoder, AudioStreamEncoder) "
            + "as RTP; host pattern + tone in memory (the pattern needs far less than the target bitrate)")
        say("  CPU s per media s = fraction of one core at real time (thread CPU time per stage; codecs single-threaded)")
        let ffmpeg = ProcessRunner.findExecutable("ffmpeg")
        for scenario in scenarios {
            measure(scenario, frames: frames, ffmpeg: ffmpeg)
        }
        MixStage.runAndPrint(seconds: seconds)
    }

    static func measure(_ s: MixScenario, frames: Int, ffmpeg: String?) {
        let inputs: MixInputs, run: MixRun
        do {
            inputs = try MixInputs.make(s, frames: frames)
            run = try MixLoop.run(s, inputs)
        } catch {
            say("\(s.label): FAILED: \(error)")
            return
        }
        let media = Double(run.frames) / Double(fps)
        let c = run.costs
        func perSecond(_ v: Double) -> String { fixed(v / media, 3) + " s/s" }
        say("\(s.label), \(run.layout.rawValue), main \(s.bitrateKbps) kbit/s (got \(fixed(Double(run.mainVideoBytes) * 8 / 1000 / media, 0))), "
            + "\(s.guests) return\(s.guests == 1 ? "" : "s") \(run.returnSize.width)x\(run.returnSize.height) "
            + "at \(EncodePump.returnKbps(s.bitrateKbps)) kbit/s")
        row("guest VP8 decode (VideoReceiver)", perSecond(c.videoDecode))
        row("guest Opus decode (AudioReceiver)", perSecond(c.audioDecode))
        row("main picture composed", perSecond(c.mainCompose), note: "VideoCompositor alone, same pictures")
        row("main VP8 encode", perSecond(c.mainVideoEncode))
        row("mixAudio + main Opus encode", perSecond(c.mixAudio + c.mainAudioEncode))
        row("return pictures (in mixVideo)", perSecond(max(0, c.mixVideo - c.mainCompose)),
            note: "mixVideo \(perSecond(c.mixVideo)) less the main picture")
        row("return VP8 + Opus encodes", perSecond(c.returnVideoEncode + c.returnAudioEncode))
        row("same work as ffmpeg", perSecond(c.sameWork) + ", " + fixed(c.sameWork / media * 100, 1) + " % of a core")

        var reference: Double?
        if let ffmpeg {
            switch compare(s, inputs, run, ffmpeg: ffmpeg, frames: frames) {
            case .success(let r):
                reference = (r.cpu - r.startup) / media
                row("ffmpeg, same work (reference)", fixed((r.cpu - r.startup) / media, 3) + " s/s",
                    note: "\(fixed(r.cpu, 2)) s CPU in \(fixed(r.wall, 2)) s wall, less \(fixed(r.startup, 2)) s start-up")
            case .failure(let error):
                say("  no ffmpeg reference: \(error)")
            }
        } else {
            say("  no ffmpeg reference (ffmpeg not installed: Scripts/setup installs it)")
        }
        if let reference {
            let ratio = c.sameWork / media / reference
            row("ours / ffmpeg, same work", fixed(ratio, 2), goal: "≤ \(fixed(goalRatio, 2))", ok: ratio <= goalRatio)
        }
        let totalPercent = c.total / media * 100
        if s.guests == 1 && s.width == 640 {
            row("total with returns", perSecond(c.total) + ", " + fixed(totalPercent, 1) + " %",
                goal: "< \(fixed(goalOneGuestPercent, 0)) % of a core", ok: totalPercent < goalOneGuestPercent)
        } else {
            row("total with returns", perSecond(c.total) + ", " + fixed(totalPercent, 1) + " % of a core")
        }
        printLatency(run)
    }

    /// Writes the reference's files, runs ffmpeg, and removes them. Its start-up
    /// (loading, opening, first keyframe: the same command stopped after one
    /// picture) is measured too, since ours creates its codecs untimed.
    static func compare(_ s: MixScenario, _ inputs: MixInputs, _ run: MixRun, ffmpeg: String,
                        frames: Int) -> Result<(cpu: Double, wall: Double, startup: Double), TextError> {
        let dir: String
        switch ProcessRunner.makeTemporaryDirectory("lvbbench-mix") {
        case .success(let path): dir = path
        case .failure(let error): return .failure(error)
        }
        defer { MediaBench.removeDirectory(dir) }
        let files: (host: String, sound: String, guests: [String])
        do {
            files = try writeReferenceInputs(s, inputs, run, dir: dir)
        } catch {
            return .failure(TextError("cannot write the reference's inputs: \(error)"))
        }
        let arguments = referenceArguments(s, layout: run.layout, files: files, frames: frames)
        let startup = referenceArguments(s, layout: run.layout, files: files, frames: 1, audioPackets: 1)
        return runReference(ffmpeg, arguments, log: dir + "/ffmpeg.log").flatMap { full in
            runReference(ffmpeg, startup, log: dir + "/ffmpeg-startup.log").map { (full.cpu, full.wall, $0.cpu) }
        }
    }

    static func printLatency(_ run: MixRun) {
        guard !run.latencies.isEmpty else {
            say("  mix latency: no guest picture identified in the mix (\(run.unread) tiles unread)")
            return
        }
        let l = run.latencies.sorted(), w = run.waits.sorted(), e = run.work.sorted()
        let frame = 1000 / Double(fps), goal = frame + percentile(e, 0.95)
        let held = run.waits.filter { $0 > frame }.count
        row("mix latency p50 / p95", "\(fixed(percentile(l, 0.5), 1)) / \(fixed(percentile(l, 0.95), 1)) ms",
            goal: "≤ 1 frame + encodes", ok: percentile(l, 0.95) <= goal)
        say("    hand-off to StageMixer → main encode done, \(l.count) guest pictures; of which waiting for the host's "
            + "slot \(fixed(percentile(w, 0.5), 1)) / \(fixed(percentile(w, 0.95), 1)) ms (virtual schedule: guests at "
            + "every phase), mix + return and main encodes \(fixed(percentile(e, 0.5), 1)) / \(fixed(percentile(e, 0.95), 1)) ms (measured); "
            + "\(held) waited over a frame (held by StageMixer for the guest's sound captured with them)")
    }

    static func row(_ label: String, _ value: String, goal: String? = nil, ok: Bool = false, note: String? = nil) {
        MediaBench.row(label, value, goal: goal, ok: ok, note: note)
    }
    static func say(_ line: String) { MediaBench.say(line) }
    static func fixed(_ v: Double, _ decimals: Int) -> String { VP8Bench.fixed(v, decimals) }
}
