import Foundation
import Testing

/// A host's room-list thumbnail, end to end as processes: the host makes it
/// from its keyframes and sends it signed to its rendezvous, and `lvbnode
/// rooms --thumbnails DIR` writes it as a file that ffprobe and ffmpeg, knowing
/// nothing of lvbnode, read as a 160×90 JPEG with the host's colour bars.
@Suite(.serialized, .ownThread, .enabled(if: Tool.path("ffprobe") != nil && Tool.path("ffmpeg") != nil, "needs ffprobe and ffmpeg"))
struct ThumbnailProcessTests {
    /// The 75 % BT.601 bars left to right (SyntheticSource.swift) as Y, U, V.
    static let bars: [(Double, Double, Double)] = [
        (180, 128, 128), (162, 44, 142), (131, 156, 44), (112, 72, 58),
        (84, 184, 198), (65, 100, 212), (35, 212, 114), (16, 128, 128),
    ]

    @Test func roomsWritesEachListedRoomsThumbnailAsAJPEGOfTheHostsPicture() throws {
        let rv = try NodeProcess(["rendezvous", "--ephemeral", "--listen", "127.0.0.1:0", "--json"])
        defer { rv.signal(SIGTERM); _ = rv.waitExit() }
        let address = try #require(rv.waitFor("ready")?["listen"] as? String, "rendezvous never became ready: \(rv.stderr)")
        let host = try NodeProcess(["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json", "--title", "bars", "--size", "640x360",
                                    "--audio", "none", "--rendezvous", address])
        defer { host.signal(SIGTERM); _ = host.waitExit() }
        let room = try #require(host.waitFor("ready")?["room"] as? String, "host never became ready: \(host.stderr)")

        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/" + room + ".jpg"
        var lines: [[String: Any]] = []
        let deadline = Date().addingTimeInterval(15)
        while !FileManager.default.fileExists(atPath: path) && Date() < deadline {
            let (status, out, err) = try runToEnd(["rooms", "--rendezvous", address, "--thumbnails", dir, "--json"])
            #expect(status == 0, "\(err)")
            lines = out.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            if !FileManager.default.fileExists(atPath: path) { Thread.sleep(forTimeInterval: 0.3) }
        }
        let line = try #require(lines.first { $0["event"] as? String == "thumbnail" }, "no thumbnail line: \(lines)")
        #expect(line["path"] as? String == path && line["id"] as? String == room)
        let bytes = try #require(FileManager.default.contents(atPath: path))
        #expect(bytes.count == line["bytes"] as? Int && bytes.count <= 8192, "\(bytes.count) bytes")

        let probe = try Tool.run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=codec_name,width,height",
                                             "-of", "csv=p=0", path])
        #expect(String(decoding: probe, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == "mjpeg,160,90")

        // The colours: each bar's middle column, the median over rows clear of the barcode (top) and most of the moving box.
        let rgb = [UInt8](try Tool.run("ffmpeg", ["-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"]))
        try #require(rgb.count == 160 * 90 * 3, "\(rgb.count) bytes of RGB")
        for (i, bar) in Self.bars.enumerated() {
            let x = i * 20 + 10
            let expected = Self.rgb(bar)
            for c in 0..<3 {
                let values = (20..<86).map { Int(rgb[($0 * 160 + x) * 3 + c]) }.sorted()
                let median = values[values.count / 2]
                // JPEG's own loss (4:2:0 at thumbnail quality) only: the range is JFIF's.
                #expect(abs(median - expected[c]) <= 24, "bar \(i) channel \(c): \(median), expected about \(expected[c])")
            }
        }
    }

    /// BT.601 limited-range Y'CbCr to 8-bit R'G'B'.
    static func rgb(_ yuv: (Double, Double, Double)) -> [Int] {
        let (y, u, v) = (1.164 * (yuv.0 - 16), yuv.1 - 128, yuv.2 - 128)
        return [y + 1.596 * v, y - 0.392 * u - 0.813 * v, y + 2.017 * u].map { Int(max(0, min(255, $0)).rounded()) }
    }
}

/// A tool from PATH (ffprobe, ffmpeg), run to completion.
enum Tool {
    static func path(_ name: String) -> String? {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let candidate = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Its standard output; throws when it cannot start or exits with a failure.
    static func run(_ name: String, _ arguments: [String]) throws -> Data {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: try #require(path(name)))
        p.arguments = arguments
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        try #require(p.terminationStatus == 0, "\(name) \(arguments.joined(separator: " ")) exited \(p.terminationStatus)")
        return data
    }
}
