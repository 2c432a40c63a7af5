import LVBMedia

#if canImport(Glibc)
import Glibc
#endif

// VP8 encode speed against libvpx's own command-line encoder. Both sides read the
// same Y4M file of the synthetic test pattern and encode every frame with the same
// settings (those VP8Encoder.init sets); both are timed as wall clock from start to
// the last frame, best of runs taken alternately (at least 3 each, more while the
// `seconds` budget lasts: one run is only ~0.1 s). Goal: ours ≥ 0.95 × vpxenc.

enum VP8Bench {
    static let width = 640, height = 360, fps = 30, bitrateKbps = 1000
    static let keyframeInterval = 60
    static let frames = 300
    static let minimumRuns = 3
    static let goal = 0.95

    /// vpxenc flags for the settings VP8Encoder uses (config fields and controls).
    static var vpxencSettings: [String] {
        [
            "--codec=vp8", "--rt", "--passes=1", "--threads=1", "--lag-in-frames=0",
            "--fps=\(fps)/1", "--timebase=1/\(fps)",
            "--end-usage=cbr", "--target-bitrate=\(bitrateKbps)",
            "--min-q=2", "--max-q=56",
            "--undershoot-pct=100", "--overshoot-pct=15",
            "--buf-initial-sz=500", "--buf-optimal-sz=600", "--buf-sz=1000",
            "--drop-frame=0", "--error-resilient=1",
            "--kf-min-dist=0", "--kf-max-dist=\(keyframeInterval)",
            "--cpu-used=-6", "--static-thresh=1", "--noise-sensitivity=0",
            "--max-intra-rate=900",
        ]
    }

    struct Side {
        var bestSeconds = Double.infinity
        var sizes: [Int] = []
        var frames: Int { sizes.count }
        var bytesPerFrame: Double { Double(sizes.reduce(0, +)) / Double(max(1, sizes.count)) }
        var fps: Double { Double(frames) / bestSeconds }
    }

    /// Runs the comparison and prints its lines (errors become a line, not a crash).
    /// - Parameter seconds: time budget for all runs of both sides together.
    static func runAndPrint(seconds: Double) {
        print("")
        let dir: String
        switch ProcessRunner.makeTemporaryDirectory("lvbbench-vp8") {
        case .success(let path): dir = path
        case .failure(let error): print("VP8 encode: \(error)"); return
        }
        let y4m = dir + "/pattern.y4m", ivf = dir + "/vpxenc.ivf", log = dir + "/vpxenc.log"
        defer {
            for file in [y4m, ivf, log] { unlink(file) }
            rmdir(dir)
        }
        do {
            try writePattern(to: y4m)
        } catch {
            print("VP8 encode: cannot write \(y4m): \(error)")
            return
        }

        let vpxenc = ProcessRunner.findExecutable("vpxenc")
        let arguments = vpxencSettings + ["--quiet", "--ivf", "-o", ivf, y4m]
        var reference = Side(), ours = Side()
        var referenceError: String?
        var runs = 0
        let budgetStart = ProcessRunner.now()
        while runs < minimumRuns || ProcessRunner.now() - budgetStart < seconds {
            runs += 1
            if let vpxenc, referenceError == nil {
                let start = ProcessRunner.now()
                let status = ProcessRunner.spawnAndWait(vpxenc, arguments, output: log)
                let elapsed = ProcessRunner.now() - start
                if status != 0 {
                    referenceError = "vpxenc exited with status \(status): " + ProcessRunner.readText(log)
                } else if let sizes = ivfFrameSizes(ivf) {
                    reference.bestSeconds = min(reference.bestSeconds, elapsed)
                    reference.sizes = sizes
                } else {
                    referenceError = "cannot read vpxenc's output \(ivf)"
                }
            }
            do {
                let start = ProcessRunner.now()
                let sizes = try encodeFile(y4m)
                let elapsed = ProcessRunner.now() - start
                ours.bestSeconds = min(ours.bestSeconds, elapsed)
                ours.sizes = sizes
            } catch {
                print("VP8 encode: lvbnode VP8Encoder failed: \(error)")
                return
            }
        }

        print("VP8 encode \(width)x\(height)@\(fps) \(bitrateKbps) kbit/s, \(frames) frames (best of \(runs))")
        let label = 36
        if vpxenc == nil {
            print("  vpxenc not installed (apt-get install vpx-tools): no reference")
        } else if let referenceError {
            print("  " + referenceError.split(separator: "\n").joined(separator: " / ") + ": no reference")
        } else {
            print("  " + pad("vpxenc --rt (reference)", label) + pad("\(format1(reference.fps)) fps", 13)
                + "\(Int(reference.bytesPerFrame.rounded())) B/frame")
        }
        var line = "  " + pad("lvbnode VP8Encoder", label) + pad("\(format1(ours.fps)) fps", 13)
            + "\(Int(ours.bytesPerFrame.rounded())) B/frame"
        let haveReference = vpxenc != nil && referenceError == nil
        if haveReference {
            let ratio = ours.fps / reference.fps
            line = pad(line, 2 + label + 13 + 15) + "ratio \(format2(ratio))   goal ≥ \(format2(goal)) " + (ratio >= goal ? "✓" : "✗")
        }
        print(line)
        if haveReference {
            let sizeRatio = ours.bytesPerFrame / reference.bytesPerFrame
            let same = zip(reference.sizes, ours.sizes).filter { $0 == $1 }.count
            print("  bytes/frame ours / vpxenc \(format2(sizeRatio)) (same settings give about 1.00); frames out: "
                + "vpxenc \(reference.frames), ours \(ours.frames), \(same) with identical sizes")
            print("  vpxenc " + arguments.dropLast(4).joined(separator: " ") + " --ivf -o OUT.ivf IN.y4m")
        }
    }

    /// The synthetic pattern as a Y4M file, the common input of both sides.
    static func writePattern(to path: String) throws(MediaError) {
        let video = try SyntheticVideo(width: width, height: height)
        let writer = try Y4MWriter(path: path, width: width, height: height, fps: fps)
        defer { writer.close() }
        for n in 0..<frames { try writer.write(video.frame(number: n)) }
    }

    /// Reads `path` and encodes every frame; returns the compressed size of each frame out.
    static func encodeFile(_ path: String) throws(MediaError) -> [Int] {
        let reader = try Y4MReader(path: path)
        let encoder = try VP8Encoder(width: reader.width, height: reader.height, fps: fps,
                                     bitrateKbps: bitrateKbps, keyframeInterval: keyframeInterval)
        var pts: Int64 = 0, sizes: [Int] = []
        sizes.reserveCapacity(frames)
        while let frame = try reader.nextFrame() {
            for out in try encoder.encode(frame, pts: pts) { sizes.append(out.data.count) }
            pts += 1
        }
        return sizes
    }

    // MARK: - Files (spawning, clocks and reading files: ProcessRunner.swift)

    /// Frame sizes from an IVF file: a 32-byte file header ("DKIF"), then per frame a
    /// 12-byte header (4-byte little-endian size, 8-byte pts) and the frame.
    static func ivfFrameSizes(_ path: String) -> [Int]? {
        guard let data = ProcessRunner.readFile(path), data.count >= 32, data[0..<4].elementsEqual("DKIF".utf8) else {
            return nil
        }
        let headerSize = Int(data[6]) | Int(data[7]) << 8
        var sizes: [Int] = [], i = max(32, headerSize)
        while i + 12 <= data.count {
            let size = Int(data[i]) | Int(data[i + 1]) << 8 | Int(data[i + 2]) << 16 | Int(data[i + 3]) << 24
            i += 12 + size
            guard i <= data.count else { break }
            sizes.append(size)
        }
        return sizes
    }

    static func pad(_ s: String, _ n: Int) -> String { s + String(repeating: " ", count: max(1, n - s.count)) }
    /// `v` with exactly `decimals` decimals (1.00, not 1.0).
    static func fixed(_ v: Double, _ decimals: Int) -> String {
        guard v.isFinite else { return String(v) }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = Int((abs(v) * scale).rounded())
        var digits = String(scaled / Int(scale))
        if decimals > 0 {
            let fraction = String(scaled % Int(scale))
            digits += "." + String(repeating: "0", count: decimals - fraction.count) + fraction
        }
        return (v < 0 && scaled != 0 ? "-" : "") + digits
    }
    static func format1(_ v: Double) -> String { fixed(v, 1) }
    static func format2(_ v: Double) -> String { fixed(v, 2) }
}
