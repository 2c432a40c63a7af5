#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LVBCore
import TestAssertions
import Testing
@testable import LVBMedia

/// A private directory under /tmp, removed with everything in it by `remove()`.
private final class TempDir {
    let path = "/tmp/lvb-media-tests-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    init() { mkdir(path, 0o700) }
    func file(_ name: String) -> String { "\(path)/\(name)" }
    func remove() {
        if let dir = opendir(path) {
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name != ".", name != ".." { unlink(file(name)) }
            }
            closedir(dir)
        }
        rmdir(path)
    }
}

private func readFile(_ path: String) -> [UInt8] {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return [] }
    defer { close(fd) }
    var out: [UInt8] = [], chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n <= 0 { return out }
        out += chunk[0..<n]
    }
}

private func writeFile(_ path: String, _ bytes: [UInt8]) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    guard fd >= 0 else { return }
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
}

private func le32(_ b: [UInt8], _ i: Int) -> UInt32 {
    UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
}

@Suite("Media files")
struct MediaFileTests {
    // MARK: Y4M

    @Test("Y4M: three frames round-trip exactly; looping starts over at frame 0")
    func y4mRoundTrip() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let source = try SyntheticVideo(width: 64, height: 48)
        let frames = (0..<3).map { source.frame(number: $0) }
        let writer = try Y4MWriter(path: dir.file("a.y4m"), width: 64, height: 48, fps: 30)
        for f in frames { try writer.write(f) }
        writer.close()

        let reader = try Y4MReader(path: dir.file("a.y4m"))
        #expect(reader.width == 64 && reader.height == 48 && reader.fps == (30, 1))
        for f in frames { #expect(try reader.nextFrame() == f) }
        #expect(try reader.nextFrame() == nil)

        let looping = try Y4MReader(path: dir.file("a.y4m"), loop: true)
        let read = try (0..<5).map { _ in try looping.nextFrame() }
        #expect(read == [frames[0], frames[1], frames[2], frames[0], frames[1]])
    }

    @Test("Y4M: a truncated last frame ends the stream, or starts it over when looping")
    func y4mTruncated() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let source = try SyntheticVideo(width: 64, height: 48)
        let writer = try Y4MWriter(path: dir.file("t.y4m"), width: 64, height: 48, fps: 25)
        for n in 0..<2 { try writer.write(source.frame(number: n)) }
        writer.close()
        writeFile(dir.file("t.y4m"), readFile(dir.file("t.y4m")) + Array("FRAME\n".utf8) + [UInt8](repeating: 9, count: 100))

        let reader = try Y4MReader(path: dir.file("t.y4m"))
        #expect(try reader.nextFrame() == source.frame(number: 0))
        #expect(try reader.nextFrame() == source.frame(number: 1))
        #expect(try reader.nextFrame() == nil)
        let looping = try Y4MReader(path: dir.file("t.y4m"), loop: true)
        _ = try looping.nextFrame()
        _ = try looping.nextFrame()
        #expect(try looping.nextFrame() == source.frame(number: 0))
    }

    @Test("Y4M: a non-Y4M file, 4:4:4, odd sizes and a missing file are refused with one clear line")
    func y4mRefusals() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.file("bad.y4m")
        writeFile(path, Array("RIFF....WAVEfmt \n".utf8))
        expectError(.file("\(path): not a YUV4MPEG2 (Y4M) file; convert with ffmpeg -i IN -pix_fmt yuv420p OUT.y4m")) {
            () throws(MediaError) in try Y4MReader(path: path)
        }
        writeFile(path, Array("YUV4MPEG2 W64 H48 F30:1 Ip A1:1 C444\nFRAME\n".utf8))
        expectError(.file("\(path): Y4M colour space C444 is not supported; use 4:2:0 (ffmpeg -pix_fmt yuv420p)")) {
            () throws(MediaError) in try Y4MReader(path: path)
        }
        writeFile(path, Array("YUV4MPEG2 W63 H48 F30:1\n".utf8))
        expectError(.file("\(path): Y4M frame size 63x48 is not supported; both edges must be even and in 16...4096 "
            + "(ffmpeg -i IN -vf scale=640:360 -pix_fmt yuv420p OUT.y4m)")) { () throws(MediaError) in try Y4MReader(path: path) }
        writeFile(path, Array("YUV4MPEG2 W64 H48 F30:1 ".utf8) + [UInt8](repeating: 0x41, count: 2000) + [0x0A])
        expectError(.file("\(path): Y4M header is longer than 1024 bytes")) {
            () throws(MediaError) in try Y4MReader(path: path)
        }
        let missing = dir.file("missing.y4m")
        expectError(.file("\(missing): cannot open (No such file or directory)")) {
            () throws(MediaError) in try Y4MReader(path: missing)
        }
        let writer = try Y4MWriter(path: dir.file("w.y4m"), width: 64, height: 48, fps: 30)
        #expect(throws: MediaError.self) { try writer.write(try I420Frame(width: 32, height: 32)) }
    }

    // MARK: WAV

    @Test("WAV: mono round-trips, close patches the RIFF and data sizes, a short tail is zero-padded once")
    func wavRoundTrip() throws {
        let dir = TempDir()
        defer { dir.remove() }
        var tone = try SyntheticAudio()
        let blocks = (0..<3).map { _ in tone.next20ms() }
        let tail = Array(tone.next20ms()[0..<100])
        let writer = try WAVWriter(path: dir.file("a.wav"))
        for b in blocks { try writer.write(b) }
        try writer.write(tail)
        writer.close()

        let bytes = readFile(dir.file("a.wav"))
        let dataBytes = UInt32((3 * 960 + 100) * 2)
        #expect(bytes.count == 44 + Int(dataBytes))
        #expect(le32(bytes, 4) == 36 + dataBytes && le32(bytes, 40) == dataBytes)

        let reader = try WAVReader(path: dir.file("a.wav"))
        #expect(reader.channels == 1)
        for b in blocks { #expect(try reader.read(samplesPerChannel: 960) == b) }
        #expect(try reader.read(samplesPerChannel: 960) == tail + [Int16](repeating: 0, count: 860))
        #expect(try reader.read(samplesPerChannel: 960) == nil)

        let looping = try WAVReader(path: dir.file("a.wav"), loop: true)
        for _ in 0..<3 { _ = try looping.read(samplesPerChannel: 960) }
        #expect(try looping.read(samplesPerChannel: 960) == tail + Array(blocks[0][0..<860]))
    }

    @Test("WAV: stereo is averaged to mono; unknown chunks and an open-ended data size (a pipe) are accepted")
    func wavStereoStream() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.file("s.wav")
        // RIFF, an odd-sized LIST chunk (padded), WAVE_FORMAT_EXTENSIBLE PCM, data of size 0xFFFFFFFF.
        var b: [UInt8] = Array("RIFF".utf8) + [0xFF, 0xFF, 0xFF, 0xFF] + Array("WAVELIST".utf8) + [3, 0, 0, 0, 1, 2, 3, 0]
        b += Array("fmt ".utf8) + [40, 0, 0, 0, 0xFE, 0xFF, 2, 0, 0x80, 0xBB, 0, 0, 0x00, 0xEE, 2, 0, 4, 0, 16, 0]
        b += [22, 0, 16, 0, 3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xAA, 0, 0x38, 0x9B, 0x71]
        b += Array("data".utf8) + [0xFF, 0xFF, 0xFF, 0xFF]
        b += [0xE8, 0x03, 0xB8, 0x0B]  // L 1000, R 3000
        b += [0xFD, 0xFF, 0xFC, 0xFF]  // L -3, R -4
        writeFile(path, b)
        let reader = try WAVReader(path: path)
        #expect(reader.channels == 2)
        #expect(try reader.read(samplesPerChannel: 2) == [2000, -3])
        #expect(try reader.read(samplesPerChannel: 2) == nil)
    }

    @Test("WAV: 44.1 kHz, float and non-RIFF files are refused naming what was found")
    func wavRefusals() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.file("r.wav")
        let hint = "use 48000 Hz 16-bit PCM mono or stereo (ffmpeg -i IN -ar 48000 -ac 1 -c:a pcm_s16le OUT.wav)"
        let writer = try WAVWriter(path: path, sampleRate: 44100, channels: 1)
        writer.close()
        expectError(.file("\(path): 44100 Hz audio is not supported; \(hint)")) {
            () throws(MediaError) in try WAVReader(path: path)
        }
        var float = readFile(path)
        float[20] = 3  // IEEE float
        float[34] = 32
        writeFile(path, float)
        expectError(.file("\(path): 44100 Hz 32-bit float audio is not supported; \(hint)")) {
            () throws(MediaError) in try WAVReader(path: path)
        }
        writeFile(path, Array("YUV4MPEG2 W64 H48\n".utf8))
        expectError(.file("\(path): not a WAV (RIFF/WAVE) file; convert with ffmpeg -i IN -ar 48000 -ac 1 -c:a pcm_s16le OUT.wav")) {
            () throws(MediaError) in try WAVReader(path: path)
        }
    }

    // MARK: WebM

    @Test("WebM: 2 s of VP8 and Opus give both tracks, every block, the duration; a cut file still parses")
    func webmRecording() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.file("rec.webm"), cutPath = dir.file("cut.webm")
        let source = try SyntheticVideo(width: 160, height: 120)
        let vp8 = try VP8Encoder(width: 160, height: 120, fps: 30, bitrateKbps: 300, keyframeInterval: 30)
        let opus = try OpusEncoder(channels: 1, bitrate: 32000)
        var tone = try SyntheticAudio()
        let writer = try WebMWriter(path: path, video: (160, 120), audioChannels: 1)
        var videoTimes: [Int64] = [], audioCount = 0
        func audio(upTo t: Int64) throws {
            while audioCount < 100, Int64(audioCount * 20) <= t {
                try writer.writeAudio(try opus.encode(tone.next20ms()), timestampMs: Int64(audioCount * 20))
                audioCount += 1
            }
        }
        for n in 0..<60 {
            let t = Int64(n * 33)
            for frame in try vp8.encode(source.frame(number: n), pts: Int64(n)) {
                try writer.writeVideo(frame.data, timestampMs: t, keyframe: frame.isKeyframe)
                videoTimes.append(t)
            }
            try audio(upTo: t - 50)  // audio arrives 50 ms behind, across keyframe clusters
        }
        try audio(upTo: .max)
        writeFile(cutPath, readFile(path))  // what a kill before close() would leave
        try writer.close()

        let file = WebMSummary(readFile(path))
        #expect(file.docType == "webm")
        #expect(file.segmentSize == .known(matchesFile: true))
        #expect(file.codecs == ["V_VP8", "A_OPUS"])
        #expect(videoTimes.count == 60)
        #expect(file.blocks.count == videoTimes.count + 100)
        #expect(file.blocks.filter { $0.track == 1 }.map(\.time) == videoTimes)
        #expect(file.blocks.filter { $0.track == 2 }.map(\.time) == (0..<100).map { Int64($0 * 20) })
        #expect(file.duration == 2000)
        #expect(file.clusters == file.clusters.sorted() && file.clusters.first == 0)
        // Each video keyframe opens a cluster (whose late audio may start up to 50 ms before it).
        let keyframes = file.blocks.filter { $0.track == 1 && $0.keyframe }
        #expect(keyframes.count >= 2 && keyframes.count == file.clusters.count)
        #expect(file.negativeOffsets == 0)
        // Players seek: the SeekHead points at the Cues, one per keyframe cluster, each at its cluster.
        #expect(file.seekToCues != nil && file.seekToCues == file.cuesAt)
        #expect(file.cues.map(\.time) == file.clusters && file.cues.map(\.position) == file.clusterPositions)

        let cut = WebMSummary(readFile(cutPath))
        #expect(cut.segmentSize == .unknown && cut.duration == 0 && cut.codecs == ["V_VP8", "A_OPUS"])
        #expect(cut.seekToCues == nil && cut.cues.isEmpty)
        #expect(!cut.blocks.isEmpty && cut.blocks.count < file.blocks.count)

        if let ffprobe = findExecutable("ffprobe") {
            for p in [path, cutPath] {
                let (status, output) = run(ffprobe, ["-v", "error", "-show_entries", "stream=codec_name,duration",
                                                     "-of", "csv=p=0", p])
                let lines = output.split(separator: "\n")
                #expect(status == 0, "\(output)")
                #expect(lines.contains { $0.hasPrefix("vp8") } && lines.contains { $0.hasPrefix("opus") }, "\(output)")
            }
        }
    }

    @Test("WebM: video before the first keyframe is dropped; a late track keeps its times; backwards ones are clamped; 5 s starts a cluster")
    func webmTimestamps() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.file("t.webm")
        let writer = try WebMWriter(path: path, video: (64, 48), audioChannels: 1)
        let opusPacket: [UInt8] = [0xF8, 0xFF, 0xFE]  // config 31 (CELT 20 ms), one frame
        try writer.writeVideo([1, 2, 3], timestampMs: 50, keyframe: false)
        try writer.writeVideo([4, 5, 6], timestampMs: 100, keyframe: true)
        try writer.writeAudio(opusPacket, timestampMs: 90)  // behind the keyframe: the cluster starts at 90
        try writer.writeAudio(opusPacket, timestampMs: 120)
        try writer.writeAudio(opusPacket, timestampMs: 110)  // goes backwards
        try writer.writeAudio(opusPacket, timestampMs: 6000)
        try writer.close()
        #expect(throws: MediaError.self) { try writer.writeAudio(opusPacket, timestampMs: 7000) }

        let file = WebMSummary(readFile(path))
        #expect(file.blocks.map(\.track) == [1, 2, 2, 2, 2])
        #expect(file.blocks.map(\.time) == [100, 90, 120, 120, 6000])
        #expect(file.blocks.first?.data == [4, 5, 6])
        #expect(file.clusters == [90, 6000])
        #expect(file.duration == 6020)
    }
}

// MARK: - A small EBML reader (RFC 8794) to check what WebMWriter wrote

private struct WebMSummary {
    enum SegmentSize: Equatable { case unknown, known(matchesFile: Bool) }
    var docType = "", codecs: [String] = [], duration = -1.0, clusters: [Int64] = []
    var segmentSize = SegmentSize.unknown
    /// Each cluster's position in the Segment (from its data's start).
    var clusterPositions: [Int64] = []
    /// Where the SeekHead says the Cues are, where they are, and their (time, cluster position) points.
    var seekToCues: Int64?, cuesAt: Int64?
    var cues: [(time: Int64, position: Int64)] = []
    /// SimpleBlocks placed before their cluster's Timestamp.
    var negativeOffsets = 0
    var blocks: [(track: UInt64, time: Int64, keyframe: Bool, data: [UInt8])] = []

    init(_ b: [UInt8]) {
        for top in Self.children(b, 0..<b.count) {
            if top.id == 0x1A45_DFA3 {
                for e in Self.children(b, top.data) where e.id == 0x4282 { docType = String(decoding: b[e.data], as: UTF8.self) }
            }
            guard top.id == 0x1853_8067 else { continue }
            segmentSize = top.unknownSize ? .unknown : .known(matchesFile: top.data.upperBound == b.count)
            let number = { (r: Range<Int>) in Int64(b[r].reduce(0) { $0 << 8 | UInt64($1) }) }
            for e in Self.children(b, top.data) {
                // The element's own start (its ID), from the Segment's data.
                let position = Int64(e.start - top.data.lowerBound)
                switch e.id {
                case 0x114D_9B74:
                    for seek in Self.children(b, e.data) where seek.id == 0x4DBB {
                        let kids = Self.children(b, seek.data)
                        if let id = kids.first(where: { $0.id == 0x53AB }), number(id.data) == 0x1C53_BB6B,
                           let at = kids.first(where: { $0.id == 0x53AC }) { seekToCues = number(at.data) }
                    }
                case 0x1C53_BB6B:
                    cuesAt = position
                    for point in Self.children(b, e.data) where point.id == 0xBB {
                        let kids = Self.children(b, point.data)
                        guard let time = kids.first(where: { $0.id == 0xB3 }), let track = kids.first(where: { $0.id == 0xB7 }),
                              let at = Self.children(b, track.data).first(where: { $0.id == 0xF1 }) else { continue }
                        cues.append((number(time.data), number(at.data)))
                    }
                case 0x1549_A966:
                    for d in Self.children(b, e.data) where d.id == 0x4489 {
                        duration = Double(bitPattern: b[d.data].reduce(0) { $0 << 8 | UInt64($1) })
                    }
                case 0x1654_AE6B:
                    for entry in Self.children(b, e.data) where entry.id == 0xAE {
                        for c in Self.children(b, entry.data) where c.id == 0x86 { codecs.append(String(decoding: b[c.data], as: UTF8.self)) }
                    }
                case 0x1F43_B675:
                    clusterPositions.append(position)
                    var start: Int64 = 0
                    for c in Self.children(b, e.data) {
                        if c.id == 0xE7 { start = Int64(b[c.data].reduce(0) { $0 << 8 | UInt64($1) }); clusters.append(start) }
                        guard c.id == 0xA3 else { continue }
                        var i = c.data.lowerBound
                        guard let track = Self.vint(b, &i, keepMarker: false), i + 3 <= c.data.upperBound else { continue }
                        let relative = Int16(bitPattern: UInt16(b[i]) << 8 | UInt16(b[i + 1]))
                        if relative < 0 { negativeOffsets += 1 }
                        blocks.append((track.value, start + Int64(relative), b[i + 2] & 0x80 != 0, Array(b[(i + 3)..<c.data.upperBound])))
                    }
                default: break
                }
            }
        }
    }

    struct Element { let start: Int, id: UInt32, data: Range<Int>, unknownSize: Bool }

    /// RFC 8794 §4: the VINT at `i`; IDs keep the marker bit, sizes drop it.
    static func vint(_ b: [UInt8], _ i: inout Int, keepMarker: Bool) -> (value: UInt64, allOnes: Bool)? {
        guard i < b.count, b[i] != 0 else { return nil }
        let width = b[i].leadingZeroBitCount + 1
        guard i + width <= b.count else { return nil }
        var v = UInt64(keepMarker ? b[i] : b[i] & (0xFF >> width))
        for k in 1..<width { v = v << 8 | UInt64(b[i + k]) }
        i += width
        return (v, v == (UInt64(1) << (7 * UInt64(width))) - 1)
    }

    /// The elements in `range`; an unknown size runs to the end of the range.
    static func children(_ b: [UInt8], _ range: Range<Int>) -> [Element] {
        var out: [Element] = []
        var i = range.lowerBound
        while i < range.upperBound {
            let start = i
            guard let id = vint(b, &i, keepMarker: true), let size = vint(b, &i, keepMarker: false) else { break }
            let end = size.allOnes ? range.upperBound : min(range.upperBound, i + Int(clamping: size.value))
            out.append(Element(start: start, id: UInt32(clamping: id.value), data: i..<end, unknownSize: size.allOnes))
            i = end
        }
        return out
    }
}

// MARK: - Running ffprobe when it is installed

private func findExecutable(_ name: String) -> String? {
    guard let path = getenv("PATH") else { return nil }
    return String(cString: path).split(separator: ":").map { "\($0)/\(name)" }.first { access($0, X_OK) == 0 }
}

/// Runs `executable` with `arguments`; returns its exit status and stdout + stderr.
private func run(_ executable: String, _ arguments: [String]) -> (status: Int32, output: String) {
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { return (-1, "pipe failed") }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
    posix_spawn_file_actions_adddup2(&actions, fds[1], 2)
    posix_spawn_file_actions_addclose(&actions, fds[0])
    posix_spawn_file_actions_addclose(&actions, fds[1])
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { for a in argv { free(a) } }
    var pid = pid_t()
    let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
    close(fds[1])
    defer { close(fds[0]) }
    guard spawned == 0 else { return (-1, "posix_spawn: \(String(cString: strerror(spawned)))") }
    var output: [UInt8] = [], chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fds[0], $0.baseAddress, $0.count) }
        if n > 0 { output += chunk[0..<n] } else if n == 0 || errno != EINTR { break }
    }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    return (status & 0x7F == 0 ? (status >> 8) & 0xFF : -1, String(decoding: output, as: UTF8.self))
}
