import Foundation
import LVBCore
import LVBCrypto
import LVBGossip
import LVBMedia
@testable import LVBReplay
import Testing

/// The recorder on real VP8 and Opus (libvpx, libopus), into a real directory.
@Suite struct ReplayRecorderTests {
    static let start: UInt64 = 1_800_000_000_000_000

    static func temporaryDirectory() -> String {
        let path = NSTemporaryDirectory() + "lvbreplay-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// `seconds` of a 320x180 picture at 30 fps (a keyframe each second) and
    /// mono sound in 20 ms packets, as a host publishes them, from `offset` µs.
    static func stream(into r: ReplayRecorder, seconds: Int, offset: UInt64 = 0) throws {
        let source = try SyntheticVideo(width: 320, height: 180)
        let encoder = try VP8Encoder(width: 320, height: 180, fps: 30, bitrateKbps: 300, keyframeInterval: 30)
        var sound = try SyntheticAudio()
        let opus = try OpusEncoder(channels: 1, bitrate: 32000)
        var audioAt: UInt64 = 0
        for n in 0..<(seconds * 30) {
            let at = UInt64(n) * 1_000_000 / 30
            while audioAt <= at {
                r.audio(try opus.encode(sound.next20ms()), captureMicros: start + offset + audioAt)
                audioAt += 20_000
            }
            for f in try encoder.encode(source.frame(number: n), pts: Int64(n)) {
                r.video(f.data, keyframe: f.isKeyframe, captureMicros: start + offset + at)
            }
        }
    }

    static func recorder(_ dir: String, budget: Int64 = ReplayConstants.defaultBudget, title: String = "six seconds",
                         isPrivate: Bool = false) throws -> ReplayRecorder {
        try ReplayRecorder(library: ReplayLibrary(root: dir), budget: budget, identity: ReplayFormatTests.host,
                           room: ReplayFormatTests.room, title: title, video: (320, 180), audioChannels: 1, isPrivate: isPrivate)
    }

    @Test func aLiveBecomesSignedSegmentsCutAtKeyframesAndExportsAsWebM() throws {
        let dir = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = try Self.recorder(dir)
        var events: [ReplayRecorder.Event] = []
        r.onEvent = { events.append($0) }
        try Self.stream(into: r, seconds: 6)
        // While live, the manifest on disk already lists the segments cut so far.
        let live = try #require(r.library.list().first)
        #expect(!live.manifest.ended && live.manifest.segments.count == 2)
        r.finish()
        let id = try #require(r.id)
        #expect(events == [.started(id, directory: dir + "/" + id.text)])
        let held = try #require(r.library.list().first)
        let m = held.manifest
        #expect(m.ended && held.isComplete && m.title == "six seconds" && m.startedMs == Self.start / 1000)
        #expect(m.segments.map(\.startMs) == [0, 2000, 4000])
        #expect(m.segments.allSatisfy { $0.startsWithKeyframe })
        #expect((5960...6040).contains(m.durationMs), "\(m.durationMs) ms")
        // Every segment parses, starts with a keyframe and holds its share of the frames.
        var video = 0, audio = 0
        for i in m.segments.indices {
            let frames = try ReplaySegment.parse(try r.library.segment(held, i)[...], index: UInt32(i))
            #expect(frames.first { $0.kind == .video }?.isKeyframe == true)
            video += frames.count { $0.kind == .video }
            audio += frames.count { $0.kind == .audio }
        }
        // 299 packets were said; the one before the first picture is not part of the replay.
        #expect(video == 180 && audio == 298)
        let webm = dir + "/export.webm"
        let exported = try r.library.export(id, to: webm)
        #expect(exported.frames == 478)
        if let ffprobe = Self.tool("ffprobe") {
            let out = try Self.run(ffprobe, ["-v", "error", "-show_entries", "format=duration:stream=codec_name",
                                             "-of", "default=noprint_wrappers=1", webm])
            #expect(out.contains("codec_name=vp8") && out.contains("codec_name=opus"), "\(out)")
            let duration = out.split(separator: "\n").first { $0.hasPrefix("duration=") }.flatMap { Double($0.dropFirst(9)) }
            #expect(duration.map { abs($0 - 6.0) < 0.1 } == true, "\(out)")
        }
    }

    @Test func aSegmentChangedOnDiskIsNeitherServedNorExported() throws {
        let dir = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = try Self.recorder(dir)
        try Self.stream(into: r, seconds: 3)
        r.finish()
        let id = try #require(r.id)
        let path = dir + "/" + id.text + "/000000.seg"
        var bytes = try #require(FileManager.default.contents(atPath: path))
        bytes[bytes.count - 5] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: path))
        let held = try r.library.replay(id)
        #expect(throws: ReplayError.self) { try r.library.segment(held, 0) }
        #expect(throws: ReplayError.self) { try r.library.export(id, to: dir + "/x.webm") }
        try r.library.delete(id)
        #expect(r.library.list().isEmpty)
        #expect(throws: ReplayError.unknown(id.text)) { try r.library.delete(id) }
    }

    @Test func theBudgetDeletesTheOldestReplaysThenStopsTheNewOneWithALine() throws {
        let dir = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try Self.recorder(dir, title: "first")
        try Self.stream(into: first, seconds: 4)
        first.finish()
        let size = first.library.totalBytes()
        // The second may hold about one replay: the first goes.
        let second = try Self.recorder(dir, budget: size + size / 2, title: "second")
        var events: [ReplayRecorder.Event] = []
        second.onEvent = { events.append($0) }
        try Self.stream(into: second, seconds: 4, offset: 10_000_000)
        second.finish()
        let firstID = try #require(first.id)
        #expect(events.contains(.evicted(firstID)))
        #expect(second.library.list().map(\.manifest.title) == ["second"])
        // A budget smaller than one replay: recording stops, with a line, and what was kept plays.
        let third = try Self.recorder(dir, budget: second.library.totalBytes() + size / 3, title: "third")
        var stops: [String] = []
        third.onEvent = { if case let .stopped(why) = $0 { stops.append(why) } }
        try Self.stream(into: third, seconds: 6, offset: 20_000_000)
        third.finish()
        #expect(stops.count == 1 && stops[0].contains("--replay-budget"), "\(stops)")
        let kept = try third.library.replay(try #require(third.id))
        #expect(kept.manifest.ended && kept.isComplete && kept.manifest.segments.count >= 1)
        #expect(third.library.totalBytes() <= second.library.totalBytes() + size / 3)
    }

    @Test func aDirectoryThatCannotHoldReplaysIsOneLineAtStart() throws {
        let dir = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/a-file"
        #expect(FileManager.default.createFile(atPath: file, contents: Data([1])))
        #expect(throws: ReplayError.file("--replay-dir \(file): not a directory; give a directory for replays")) {
            try Self.recorder(file)
        }
        #expect(throws: ReplayError.self) { try Self.recorder(file + "/below") }
    }

    static func tool(_ name: String) -> String? {
        (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":").map { "\($0)/\(name)" }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static func run(_ tool: String, _ arguments: [String]) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = arguments
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}
