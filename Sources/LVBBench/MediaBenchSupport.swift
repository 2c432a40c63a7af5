#if canImport(Glibc)
import Glibc
#endif

// MediaBench's output rows, its reading of the binary's JSON lines, and its
// file and process helpers.

extension MediaBench {
    // MARK: - Printing

    static func printReceived(_ r: StreamResult) {
        var value = "video \(r.receivedVideoKbps.map { fixed($0, 0) } ?? "?") kbit/s at "
            + "\(r.receivedFPS.map { fixed($0, 1) } ?? "?") fps, audio \(r.receivedAudioKbps.map { fixed($0, 0) } ?? "?") kbit/s"
        if let target = r.hostTargetKbps { value += "; host target at the end \(fixed(target, 0)) kbit/s" }
        row("received (median of 2 s stats)", value)
    }

    static func latencyRow(_ kind: String, _ media: Substring, goal: Double?) {
        let p50 = jsonNumber(media, "\(kind)_latency_p50_ms"), p95 = jsonNumber(media, "\(kind)_latency_p95_ms")
        let value = "\(p50.map { fixed($0, 1) } ?? "?") / \(p95.map { fixed($0, 1) } ?? "?") ms"
        let label = "\(kind) glass-to-glass p50 / p95"
        if let goal {
            row(label, value, goal: "p95 ≤ \(fixed(goal, 0)) ms", ok: p95.map { $0 <= goal } ?? false)
        } else {
            row(label, value)
        }
    }

    static func printCPU(_ r: StreamResult, _ reference: Result<(encode: Double, decode: Double), TextError>?,
                         ffmpegInstalled: Bool) {
        func percent(_ v: Double?) -> String { v.map { fixed($0, 1) + " % of one core" } ?? "? (cannot read /proc)" }
        let window = fixed(r.cpuWindow, 1)
        var host = percent(r.hostCPU)
        if let encode = r.hostEncodeMS { host += " (encode \(fixed(encode, 1)) ms/frame)" }
        row("host CPU (\(window) s)", host)
        row("viewer CPU (\(window) s)", percent(r.viewerCPU))
        switch reference {
        case .success(let ref)?:
            row("ffmpeg libvpx encode (ref.)", fixed(ref.encode, 1) + " %",
                note: r.hostCPU.map { "host / ffmpeg encode \(fixed($0 / ref.encode, 2))" })
            row("ffmpeg VP8 decode, file (ref.)", fixed(ref.decode, 1) + " %",
                note: r.viewerCPU.map { "viewer / ffmpeg decode \(fixed($0 / ref.decode, 2))" })
            say("    reference: ffmpeg -re -stream_loop -1 -i IN.y4m " + referenceEncoderSettings.joined(separator: " ")
                + " -f webm - | ffmpeg -threads 1 -i - -f null -   (video only; the host also encodes Opus)")
        case .failure(let error)?:
            say("    no encode/decode reference: \(error)")
        case nil:
            say("    no encode/decode reference (" + (ffmpegInstalled ? "no Y4M source" : "ffmpeg not installed") + ")")
        }
        switch r.rtpReference {
        case .success(let cpu)?:
            let ratio = r.viewerCPU.map { $0 / cpu }
            row("ffmpeg RTP receive+decode (ref.)", fixed(cpu, 1) + " %")
            row("viewer / ffmpeg RTP receive+decode", ratio.map { fixed($0, 2) } ?? "?",
                goal: "≤ \(fixed(goalViewerOverRTPReference, 1))", ok: ratio.map { $0 <= goalViewerOverRTPReference } ?? false)
            say("    reference: a second viewer with --rtp-out and --sdp, then ffmpeg "
                + RTPReference.arguments.joined(separator: " ") + "   (video and audio, same window)")
        case .failure(let error)?:
            say("    no RTP reference: \(error)")
        case nil:
            if !ffmpegInstalled { say("    no RTP reference (ffmpeg not installed)") }
        }
    }

    /// A row like printGossip's: label, value, goal, ✓/✗ (or a note instead of a goal).
    static func row(_ label: String, _ value: String, goal: String? = nil, ok: Bool = false, note: String? = nil) {
        var line = "  " + pad(label, 34) + value
        if let goal {
            line = pad(line, 2 + 34 + 26) + pad("goal " + goal, 20) + (ok ? "✓" : "✗") + (note.map { "  " + $0 } ?? "")
        } else if let note {
            line = pad(line, 2 + 34 + 26) + note
        }
        say(line)
    }

    /// print, flushed (the steps take seconds each; stdout may be a pipe).
    static func say(_ line: String) {
        print(line)
        fflush(stdout)
    }

    static func pad(_ s: String, _ n: Int) -> String { s + String(repeating: " ", count: max(1, n - s.count)) }
    static func fixed(_ v: Double, _ decimals: Int) -> String { VP8Bench.fixed(v, decimals) }
    static func int(_ text: Substring, _ key: String) -> String { jsonNumber(text, key).map { fixed($0, 0) } ?? "?" }

    static func median(_ values: [Double]) -> Double? {
        values.isEmpty ? nil : percentile(values.sorted(), 0.5)
    }

    // MARK: - JSON lines (flat enough to scan for "key":)

    static func isEvent(_ line: String, _ name: String) -> Bool {
        line.hasPrefix("{\"event\":\"\(name)\"")
    }

    /// The text after `"key":` (for an object, everything from its opening brace on).
    static func section(_ line: Substring, _ key: String) -> Substring {
        line.firstRange(of: "\"\(key)\":").map { line[$0.upperBound...] } ?? ""
    }

    static func jsonString(_ line: Substring, _ key: String) -> String? {
        guard let range = line.firstRange(of: "\"\(key)\":\"") else { return nil }
        let rest = line[range.upperBound...]
        return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
    }

    static func jsonNumber(_ line: Substring, _ key: String) -> Double? {
        guard let range = line.firstRange(of: "\"\(key)\":") else { return nil }
        return Double(String(line[range.upperBound...].prefix { "+-.0123456789eE".contains($0) }))
    }

    // MARK: - Files and processes

    static func locateBinary() -> String? {
        if let path = getenv("LVBNODE_BIN").map({ String(cString: $0) }), !path.isEmpty {
            return access(path, X_OK) == 0 ? path : nil
        }
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        let me = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let slash = me.lastIndex(of: "/") else { return nil }
        let path = String(me[..<slash]) + "/lvbnode"
        return access(path, X_OK) == 0 ? path : nil
    }

    /// The binary and a fresh temporary directory for a bench that runs
    /// lvbnode as processes; nil (with one line said, after `prefix`) when
    /// either is missing. The caller removes the directory.
    static func processWorkspace(_ name: String, prefix: String) -> (binary: String, dir: String)? {
        guard let binary = locateBinary() else {
            say(prefix + "lvbnode binary not found: set LVBNODE_BIN to it (Scripts/bench builds .build/release/lvbnode)")
            return nil
        }
        switch ProcessRunner.makeTemporaryDirectory(name) {
        case .success(let dir):
            signal(SIGPIPE, SIG_IGN)
            return (binary, dir)
        case .failure(let error):
            say(prefix + "\(error)")
            return nil
        }
    }

    /// " (exit status N: last stderr line)" for a child that stopped, else "".
    static func exitNote(_ child: ChildProcess, _ log: String) -> String {
        guard !child.isRunning() else { return "" }
        let status = child.waitForExit(timeout: 0).map { "exit status \($0)" } ?? "exited"
        let last = ProcessRunner.lastLine(log)
        return " (\(status)" + (last.isEmpty ? ")" : ": \(last))")
    }

    static func removeDirectory(_ dir: String) {
        guard let d = opendir(dir) else { return }
        while let entry = readdir(d) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { unlink(dir + "/" + name) }
        }
        closedir(d)
        rmdir(dir)
    }
}
