import LVBMedia

#if canImport(Glibc)
import Glibc
#endif

// MixBench's reference: one ffmpeg doing the work the host's mix shares with
// it, on the same inputs, in the same run, as fast as it goes: the host's
// pictures (Y4M) and tone (WAV), each guest's stream as the host's receivers
// decoded it (WebM: the same VP8 frames and Opus packets); VP8 and Opus
// decode, scale + overlay (pip) or a 2×2 stack (grid) where StageRect puts
// the tiles, amix + alimiter, libvpx and libopus encode at our encoders'
// settings. Its CPU is user + system time of the child (getrusage
// RUSAGE_CHILDREN around its run: the bench has no other child then).

extension MixBench {
    /// Writes the reference's input files into `dir`: host.y4m, host.wav, guestN.webm.
    static func writeReferenceInputs(_ s: MixScenario, _ inputs: MixInputs, _ run: MixRun,
                                     dir: String) throws(MediaError) -> (host: String, sound: String, guests: [String]) {
        let host = dir + "/host.y4m", sound = dir + "/host.wav"
        let y4m = try Y4MWriter(path: host, width: s.width, height: s.height, fps: fps)
        defer { y4m.close() }
        for picture in inputs.hostPictures { try y4m.write(picture) }
        let wav = try WAVWriter(path: sound)
        for block in inputs.hostSound { try wav.write(block) }
        wav.close()
        var guests: [String] = []
        for g in 0..<s.guests {
            let path = dir + "/guest\(g).webm"
            let webm = try WebMWriter(path: path, video: (s.width, s.height), audioChannels: 1)
            // Interleaved by time, as a live recording is.
            var video = run.decodedVideo[g][...], audio = run.decodedAudio[g][...]
            while let v = video.first {
                if let a = audio.first, a.ms < v.ms {
                    try webm.writeAudio(a.packet, timestampMs: a.ms)
                    audio = audio.dropFirst()
                } else {
                    try webm.writeVideo(v.data, timestampMs: v.ms, keyframe: v.keyframe)
                    video = video.dropFirst()
                }
            }
            for a in audio { try webm.writeAudio(a.packet, timestampMs: a.ms) }
            try webm.close()
            guests.append(path)
        }
        return (host, sound, guests)
    }

    /// The filter graph: guests where StageRect puts them (the layout the mixer chose), then the sound mix.
    static func referenceGraph(_ s: MixScenario, layout: StageLayout) -> String {
        let rects = StageRect.rects(for: layout, participants: 1 + s.guests, width: s.width, height: s.height)
        // Every picture on one 1/30 s grid by its number: with the WebM's ms and
        // the Y4M's 1/30 s apart, xstack would emit a picture whenever any input's
        // time differs and the encoder would get duplicates instead of 180 pictures.
        let grid = "settb=1/\(fps),setpts=N"
        var parts: [String] = []
        // Input 0 is the host's video, 1 its sound, 2… the guests.
        if layout == .pip {
            parts.append("[0:v]\(grid)[h]")
            var last = "h"
            for g in 0..<s.guests {
                let r = rects[g + 1]
                parts.append("[\(g + 2):v]\(grid),scale=\(r.width):\(r.height):flags=area[g\(g)]")
                parts.append("[\(last)][g\(g)]overlay=x=\(r.x):y=\(r.y)" + (g == s.guests - 1 ? "[v]" : "[o\(g)]"))
                last = "o\(g)"
            }
        } else {
            // split and grid cells have the canvas's aspect or are centre-cropped by us; this
            // reference scales (grid: the same aspect, so the same work).
            let inputs = ["0:v"] + (0..<s.guests).map { "\($0 + 2):v" }
            for (i, input) in inputs.enumerated() {
                parts.append("[\(input)]\(grid),scale=\(rects[i].width):\(rects[i].height):flags=area[c\(i)]")
            }
            let cells = inputs.indices.map { "[c\($0)]" }.joined()
            let positions = rects.map { "\($0.x)_\($0.y)" }.joined(separator: "|")
            parts.append(cells + "xstack=inputs=\(inputs.count):layout=\(positions):fill=black[v]")
        }
        let sounds = "[1:a]" + (0..<s.guests).map { "[\($0 + 2):a]" }.joined()
        // Fixed gain as AudioMixer (no 1/n), then a limiter at its threshold, attack and release.
        parts.append(sounds + "amix=inputs=\(1 + s.guests):duration=first:normalize=0,"
            + "alimiter=limit=0.89:attack=1:release=100:level=0[a]")
        return parts.joined(separator: ";")
    }

    /// libvpx and libopus as VP8Encoder and OpusEncoder set them (see VP8Bench.vpxencSettings).
    static func referenceEncoders(_ s: MixScenario) -> [String] {
        let kbps = "\(s.bitrateKbps)k"
        return [
            "-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "-6", "-threads", "1",
            "-b:v", kbps, "-minrate", kbps, "-maxrate", kbps, "-bufsize", kbps,  // CBR, 1 s buffer
            "-qmin", "2", "-qmax", "56", "-undershoot-pct", "100", "-overshoot-pct", "15",
            "-g", "\(Int(gopSeconds) * fps)", "-keyint_min", "0", "-lag-in-frames", "0",
            "-error-resilient", "default", "-static-thresh", "1", "-noise-sensitivity", "0", "-max-intra-rate", "900",
            "-c:a", "libopus", "-b:a", "\(MediaConstants.audioBitrate / 1000)k", "-application", "audio",
            "-frame_duration", "20", "-fec", "1", "-packet_loss", "10", "-ac", "1",
        ]
    }

    /// The whole command after `ffmpeg`: `frames` pictures out (and `audioPackets` Opus packets, when given).
    static func referenceArguments(_ s: MixScenario, layout: StageLayout, files: (host: String, sound: String, guests: [String]),
                                   frames: Int, audioPackets: Int? = nil) -> [String] {
        var arguments = ["-v", "error", "-nostdin", "-threads", "1", "-i", files.host, "-i", files.sound]
        for guest in files.guests { arguments += ["-threads", "1", "-i", guest] }
        arguments += ["-filter_complex", referenceGraph(s, layout: layout), "-filter_complex_threads", "1",
                      "-map", "[v]", "-map", "[a]", "-frames:v", "\(frames)"]
        if let audioPackets { arguments += ["-frames:a", "\(audioPackets)"] }
        return arguments + referenceEncoders(s) + ["-f", "null", "-"]
    }

    /// Runs ffmpeg to the end; its CPU seconds (user + system, all threads) and wall seconds.
    static func runReference(_ ffmpeg: String, _ arguments: [String], log: String) -> Result<(cpu: Double, wall: Double), TextError> {
        func childrenCPU() -> Double {
            var usage = rusage()
            getrusage(RUSAGE_CHILDREN.rawValue, &usage)
            func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
            return seconds(usage.ru_utime) + seconds(usage.ru_stime)
        }
        let c0 = childrenCPU(), t0 = ProcessRunner.now()
        let status = ProcessRunner.spawnAndWait(ffmpeg, arguments, output: log)
        let c1 = childrenCPU(), t1 = ProcessRunner.now()
        guard status == 0 else {
            return .failure(TextError("ffmpeg exited with status \(status): " + ProcessRunner.lastLine(log)))
        }
        return .success((c1 - c0, t1 - t0))
    }
}
