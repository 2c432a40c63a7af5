#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// YUV4MPEG2 as ffmpeg and mjpegtools write it: one header line
//   YUV4MPEG2 W640 H360 F30:1 Ip A1:1 C420jpeg XYSCSS=420JPEG\n
// then per picture "FRAME[ params]\n" and the Y, U, V planes, tightly packed.

/// Reads 8-bit 4:2:0 pictures from a YUV4MPEG2 (Y4M) file or, for "-", stdin.
public final class Y4MReader {
    /// Longest header or FRAME line accepted; real headers are under 100 bytes.
    static let maxLineLength = 1024
    /// Colour spaces that are 8-bit 4:2:0 (they differ only in chroma siting).
    static let supportedColourSpaces: Set<String> = ["420jpeg", "420paldv", "420mpeg2", "420"]
    static let convertHint = "convert with ffmpeg -i IN -pix_fmt yuv420p OUT.y4m"

    public let width: Int
    public let height: Int
    /// Frame rate from the F parameter; 30:1 when the header has none.
    public let fps: (num: Int, den: Int)
    private let input: MediaInputFile
    private let loop: Bool
    private let firstFrameOffset: Int64
    private var framesSinceRewind = 0

    /// Opens `path` ("-" = stdin) and parses the stream header; with `loop`, a regular
    /// file starts over at its first frame when it ends (stdin never loops).
    public init(path: String, loop: Bool = false) throws(MediaError) {
        let input = try MediaInputFile(path: path)
        let name = input.name
        let magic = try input.readBytes(10)
        guard magic.count == 10, magic[0..<9].elementsEqual("YUV4MPEG2".utf8),
              magic[9] == 0x20 || magic[9] == 0x0A else {
            throw .file("\(name): not a YUV4MPEG2 (Y4M) file; \(Self.convertHint)")
        }
        var params: [Substring] = []
        if magic[9] == 0x20 {
            guard let line = try input.readLine(limit: Self.maxLineLength, what: "Y4M header") else {
                throw .file("\(name): Y4M header ends before its newline")
            }
            params = String(decoding: line, as: UTF8.self).split(separator: " ")
        }
        var w: Int?, h: Int?, rate = (num: 30, den: 1), colour = "420"
        for p in params {
            let value = p.dropFirst()
            switch p.first {
            case "W": w = Int(value)
            case "H": h = Int(value)
            case "F":
                let parts = value.split(separator: ":")
                guard parts.count == 2, let n = Int(parts[0]), let d = Int(parts[1]), n > 0, d > 0 else {
                    throw .file("\(name): Y4M frame rate '\(value)' is not a positive ratio like 30:1")
                }
                rate = (n, d)
            case "C": colour = String(value)
            default: break  // I (interlacing), A (aspect), X (comments) do not change the planes.
            }
        }
        guard let w, let h else { throw .file("\(name): Y4M header has no W or H size") }
        guard I420Frame.sizeRange.contains(w), I420Frame.sizeRange.contains(h),
              w % 2 == 0, h % 2 == 0 else {
            throw .file("\(name): Y4M frame size \(w)x\(h) is not supported; both edges must be even "
                + "and in \(I420Frame.sizeRange) (ffmpeg -i IN -vf scale=640:360 -pix_fmt yuv420p OUT.y4m)")
        }
        guard Self.supportedColourSpaces.contains(colour) else {
            throw .file("\(name): Y4M colour space C\(colour) is not supported; "
                + "use 4:2:0 (ffmpeg -pix_fmt yuv420p)")
        }
        self.input = input
        width = w
        height = h
        fps = rate
        self.loop = loop && input.isRegularFile
        firstFrameOffset = input.position
    }

    /// The next picture; nil at the end of the stream. A truncated last frame counts
    /// as the end; when looping, the file starts over instead.
    public func nextFrame() throws(MediaError) -> I420Frame? {
        if let frame = try readFrame() { return frame }
        guard loop, framesSinceRewind > 0 else { return nil }
        try input.seek(to: firstFrameOffset)
        framesSinceRewind = 0
        return try readFrame()
    }

    private func readFrame() throws(MediaError) -> I420Frame? {
        guard let line = try input.readLine(limit: Self.maxLineLength, what: "Y4M FRAME line") else {
            return nil
        }
        guard line.starts(with: "FRAME".utf8), line.count == 5 || line[5] == 0x20 else {
            throw .malformed("\(input.name): Y4M frame \(framesSinceRewind + 1) does not start with FRAME")
        }
        var frame = I420Frame(uncheckedWidth: width, height: height)
        guard try input.read(into: &frame.y) == frame.y.count,
              try input.read(into: &frame.u) == frame.u.count,
              try input.read(into: &frame.v) == frame.v.count else { return nil }
        framesSinceRewind += 1
        return frame
    }
}

/// Writes 8-bit 4:2:0 pictures as a YUV4MPEG2 (Y4M) stream to a file or, for "-", stdout.
public final class Y4MWriter {
    public let width: Int
    public let height: Int
    private let output: MediaOutputFile

    /// Creates `path` ("-" = stdout) and writes the stream header.
    public init(path: String, width: Int, height: Int, fps: Int) throws(MediaError) {
        guard I420Frame.sizeRange.contains(width), I420Frame.sizeRange.contains(height),
              width % 2 == 0, height % 2 == 0 else {
            throw .invalidParameter("Y4M size \(width)x\(height): both edges must be even and in \(I420Frame.sizeRange)")
        }
        guard (1...1000).contains(fps) else { throw .invalidParameter("Y4M frame rate \(fps): use 1...1000 fps") }
        output = try MediaOutputFile(path: path)
        self.width = width
        self.height = height
        try output.write(Array("YUV4MPEG2 W\(width) H\(height) F\(fps):1 Ip A1:1 C420jpeg\n".utf8))
    }

    /// Appends one picture, which must have the header's size.
    public func write(_ frame: I420Frame) throws(MediaError) {
        guard frame.width == width, frame.height == height else {
            throw .invalidParameter("frame is \(frame.width)x\(frame.height), the Y4M stream is \(width)x\(height)")
        }
        let chroma = frame.chromaStride * frame.chromaHeight
        guard frame.y.count == width * height, frame.u.count == chroma, frame.v.count == chroma else {
            throw .invalidParameter("frame planes do not match \(width)x\(height)")
        }
        var bytes: [UInt8] = Array("FRAME\n".utf8)
        bytes.reserveCapacity(6 + frame.y.count + 2 * chroma)
        bytes += frame.y
        bytes += frame.u
        bytes += frame.v
        try output.write(bytes)
    }

    /// Closes the file (stdout stays open); later writes throw.
    public func close() { output.close() }
}

// MARK: - File descriptors shared by the media file readers and writers

func errnoText(_ code: Int32 = errno) -> String { String(cString: strerror(code)) }

// Inside the classes below, `read`, `write` and `close` name their own methods.
private func sysRead(_ fd: Int32, _ p: UnsafeMutableRawPointer?, _ n: Int) -> Int { read(fd, p, n) }
private func sysWrite(_ fd: Int32, _ p: UnsafeRawPointer, _ n: Int) -> Int { write(fd, p, n) }
private func sysClose(_ fd: Int32) { _ = close(fd) }

/// A file read in large chunks; "-" is stdin. Owns its descriptor unless it is stdin.
final class MediaInputFile {
    static let chunkSize = 256 * 1024
    /// The path for messages ("stdin" for "-").
    let name: String
    /// Only regular files can seek back (to loop).
    let isRegularFile: Bool
    private let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: chunkSize)
    private var start = 0, end = 0
    /// Stream offset of `buffer[0]`.
    private var base: Int64 = 0

    init(path: String) throws(MediaError) {
        if path == "-" {
            fd = 0
            name = "stdin"
        } else {
            fd = open(path, O_RDONLY | O_CLOEXEC)
            name = path
            guard fd >= 0 else { throw .file("\(path): cannot open (\(errnoText()))") }
        }
        var info = stat()
        isRegularFile = path != "-" && fstat(fd, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }

    deinit { if fd != 0 { sysClose(fd) } }

    /// Bytes consumed since the start of the stream.
    var position: Int64 { base + Int64(start) }

    private func refill() throws(MediaError) -> Bool {
        base += Int64(end)
        start = 0
        end = 0
        while true {
            let n = buffer.withUnsafeMutableBytes { sysRead(fd, $0.baseAddress, $0.count) }
            if n > 0 { end = n; return true }
            if n == 0 { return false }
            if errno != EINTR { throw .file("\(name): cannot read (\(errnoText()))") }
        }
    }

    /// One line without its "\n"; nil when the stream ends before a newline.
    func readLine(limit: Int, what: String) throws(MediaError) -> [UInt8]? {
        var line: [UInt8] = []
        while true {
            if start == end, !(try refill()) { return nil }
            var i = start
            while i < end, buffer[i] != 0x0A { i += 1 }
            line += buffer[start..<i]
            guard line.count <= limit else { throw .file("\(name): \(what) is longer than \(limit) bytes") }
            start = i
            if i < end { start += 1; return line }
        }
    }

    /// Fills `dest` from index `offset` on (at most `count` bytes); returns how many bytes
    /// it got (fewer only at the end of the stream).
    func read(into dest: inout [UInt8], from offset: Int = 0, count: Int? = nil) throws(MediaError) -> Int {
        var filled = offset
        let limit = min(dest.count, offset + (count ?? dest.count))
        while filled < limit {
            if start == end, !(try refill()) { break }
            let n = min(end - start, limit - filled)
            let from = start, to = filled
            dest.withUnsafeMutableBufferPointer { d in
                buffer.withUnsafeBufferPointer { b in
                    guard let dp = d.baseAddress, let bp = b.baseAddress else { return }
                    (dp + to).update(from: bp + from, count: n)
                }
            }
            filled += n
            start += n
        }
        return filled - offset
    }

    /// Up to `count` bytes (fewer only at the end).
    func readBytes(_ count: Int) throws(MediaError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let got = try read(into: &bytes)
        bytes.removeLast(count - got)
        return bytes
    }

    /// Discards `count` bytes; false when the stream ends first.
    func skip(_ count: Int64) throws(MediaError) -> Bool {
        var left = count
        while left > 0 {
            if start == end, !(try refill()) { return false }
            let n = Int(min(Int64(end - start), left))
            start += n
            left -= Int64(n)
        }
        return true
    }

    /// Moves to `offset` of a regular file.
    func seek(to offset: Int64) throws(MediaError) {
        guard lseek(fd, off_t(offset), SEEK_SET) == off_t(offset) else {
            throw .file("\(name): cannot seek (\(errnoText()))")
        }
        base = offset
        start = 0
        end = 0
    }
}

/// A file written whole-buffer at a time; "-" is stdout. Owns its descriptor unless it is stdout.
final class MediaOutputFile {
    let name: String
    /// A regular file, so headers can be patched after the data.
    let isSeekable: Bool
    private let fd: Int32
    private var closed = false
    /// Bytes written by this writer.
    private(set) var position: Int64 = 0

    /// `createNew`: fail if `path` exists instead of truncating it.
    init(path: String, createNew: Bool = false) throws(MediaError) {
        if path == "-" {
            fd = 1
            name = "stdout"
        } else {
            fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (createNew ? O_EXCL : O_TRUNC), 0o644)
            name = path
            guard fd >= 0 else { throw .file("\(path): cannot create (\(errnoText()))") }
        }
        var info = stat()
        isSeekable = path != "-" && fstat(fd, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }

    deinit { close() }

    /// Writes all of `bytes`, retrying short writes and EINTR.
    func write(_ bytes: [UInt8]) throws(MediaError) {
        guard !closed else { throw .invalidParameter("\(name): write after close") }
        let failure: String? = bytes.withUnsafeBytes { raw in
            guard let p = raw.baseAddress else { return nil }
            var done = 0
            while done < raw.count {
                let n = sysWrite(fd, p + done, raw.count - done)
                if n > 0 { done += n; continue }
                if n < 0 && errno == EINTR { continue }
                return n < 0 ? errnoText() : "no progress"
            }
            return nil
        }
        if let failure { throw .file("\(name): cannot write (\(failure))") }
        position += Int64(bytes.count)
    }

    /// Overwrites bytes at `offset` of a seekable file, then returns to the end.
    func patch(_ bytes: [UInt8], at offset: Int64) throws(MediaError) {
        guard isSeekable, !closed else { return }
        let end = position
        guard lseek(fd, off_t(offset), SEEK_SET) == off_t(offset) else {
            throw .file("\(name): cannot seek (\(errnoText()))")
        }
        position = offset
        try write(bytes)
        position = end
        guard lseek(fd, off_t(end), SEEK_SET) == off_t(end) else {
            throw .file("\(name): cannot seek (\(errnoText()))")
        }
    }

    /// Flushes a regular file to disk and closes it; stdout stays open.
    func close() {
        guard !closed else { return }
        closed = true
        guard fd != 1 else { return }
        if isSeekable { _ = fsync(fd) }
        sysClose(fd)
    }
}
