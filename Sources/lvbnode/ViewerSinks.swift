#if canImport(Glibc)
import Glibc
#endif
import LVBCore
import LVBMedia
import LVBRoom

/// Where a viewer's stream goes: `--record` (WebM, as received), `--video-out`
/// (Y4M), `--audio-out` (WAV), `--rtp-out` (+ `--sdp`), the `first_frame`
/// event, and the glass-to-glass samples for `stats`. Lives on the node's loop.
final class ViewerSinks {
    private let options: ViewerMediaOptions
    private let out: Output
    private let clock: Clock
    private let startedAt: Instant
    private var firstFrameAt: Instant?
    private var y4m: Y4MWriter?
    /// Held until the second picture gives the frame rate.
    private var firstPicture: (image: I420Frame, timestamp: UInt32)?
    private var wav: WAVWriter?
    private var webm: WebMWriter?
    private(set) var recordingPath: String?
    private var recordingStart: UInt64?
    private var lastVideoMs: Int64?
    private var lastAudioMs: Int64?
    /// Frames captured before this viewer started are the host's cached GOP
    /// (catch-up), not live: they stay out of the glass-to-glass figures.
    private let liveFrom: UInt64
    private var firstAudioArrival: Instant?
    private let forwarder: RTPForwarder?
    private(set) var failed: String?
    var videoLatency = LatencySamples()
    var audioLatency = LatencySamples()
    private(set) var framesOut = 0

    /// Checks every path up front so a mistake fails before joining.
    init(options: ViewerMediaOptions, out: Output, clock: Clock, startedAt: Instant) throws(MediaError) {
        self.options = options
        self.out = out
        self.clock = clock
        self.startedAt = startedAt
        liveFrom = NTPTime.from(clock.wallTime())  // sinks open as the command starts
        if let dir = options.record { try Self.prepareDirectory(dir) }
        if let path = options.audioOut { wav = try WAVWriter(path: path) }
        if let path = options.videoOut, path != "-" { try Self.checkWritable(path) }
        if let rtp = options.rtpOut, let target = try? PeerAddress(parsing: rtp) {
            forwarder = try RTPForwarder(target: target)
            if let sdp = options.sdp { try Self.write(RTPForwarder.sdp(for: target), to: sdp) }
        } else {
            forwarder = nil
        }
    }

    func packet(_ packet: RTPPacket, _ bytes: ArraySlice<UInt8>) { forwarder?.forward(packet, bytes) }

    func video(_ frame: ReceivedVideoFrame) {
        let nowNTP = NTPTime.from(clock.wallTime())
        if let capture = frame.captureTime, capture >= liveFrom { videoLatency.add(NTPTime.milliseconds(from: capture, to: nowNTP)) }
        framesOut += 1
        if firstFrameAt == nil {
            let now = clock.now()
            firstFrameAt = now
            var line = JSONLine(event: "first_frame")
            line.add("ms", (now - startedAt).milliseconds)
            line.add("width", frame.image.width)
            line.add("height", frame.image.height)
            line.add("keyframe", frame.isKeyframe)
            out.emit(line, human: "first picture \((now - startedAt).millisecondsText) ms after starting (\(frame.image.width)x\(frame.image.height))", kind: "media")
        }
        guard failed == nil else { return }
        do {
            if let path = options.videoOut { try writeY4M(frame, to: path) }
            if options.record != nil {
                if webm == nil, frame.isKeyframe { try startRecording(video: (frame.image.width, frame.image.height), at: frame.captureTime ?? nowNTP) }
                if let webm, let start = recordingStart {
                    var ms = max(0, Int64(NTPTime.milliseconds(from: start, to: frame.captureTime ?? nowNTP)))
                    if let last = lastVideoMs, ms <= last { ms = last + 1 }  // strictly increasing per track
                    lastVideoMs = ms
                    try webm.writeVideo(frame.encoded, timestampMs: ms, keyframe: frame.isKeyframe)
                }
            }
        } catch { fail(error) }
    }

    func audio(_ block: ReceivedAudioFrame) {
        let nowNTP = NTPTime.from(clock.wallTime())
        if !block.concealed, let capture = block.captureTime, capture >= liveFrom { audioLatency.add(NTPTime.milliseconds(from: capture, to: nowNTP)) }
        guard failed == nil else { return }
        do {
            try wav?.write(block.pcm)
            guard options.record != nil, let encoded = block.encoded, let capture = block.captureTime else { return }
            // Audio-only stream: start recording once 2 s passed without a picture.
            let now = clock.now()
            if firstAudioArrival == nil { firstAudioArrival = now }
            if webm == nil, framesOut == 0, let first = firstAudioArrival, now - first >= .seconds(2) {
                try startRecording(video: nil, at: capture)
            }
            if let webm, let start = recordingStart, capture >= start {
                var ms = Int64(NTPTime.milliseconds(from: start, to: capture))
                if let last = lastAudioMs, ms <= last { ms = last + 1 }
                lastAudioMs = ms
                try webm.writeAudio(encoded, timestampMs: ms)
            }
        } catch { fail(error) }
    }

    private func writeY4M(_ frame: ReceivedVideoFrame, to path: String) throws(MediaError) {
        if y4m == nil {
            // The Y4M header needs the frame rate: take it from the first two
            // pictures' RTP timestamps (90 kHz).
            guard let first = firstPicture else {
                firstPicture = (frame.image, frame.rtpTimestamp)
                return
            }
            let ticks = Int(frame.rtpTimestamp &- first.timestamp)
            let fps = ticks > 0 ? min(120, max(1, (MediaConstants.videoClockRate + ticks / 2) / ticks)) : 30
            y4m = try Y4MWriter(path: path, width: first.image.width, height: first.image.height, fps: fps)
            try y4m?.write(first.image)
            firstPicture = nil
        }
        try y4m?.write(frame.image)
    }

    private func startRecording(video: (width: Int, height: Int)?, at capture: UInt64) throws(MediaError) {
        guard let dir = options.record else { return }
        // Never overwrite: another viewer may record into the same
        // directory in the same second.
        let base = "\(dir)/lvbnode-\(Self.timestampText())"
        var path = base + ".webm"
        for n in 2...99 where access(path, F_OK) == 0 { path = "\(base)-\(n).webm" }
        webm = try WebMWriter(path: path, video: video, audioChannels: 1, createNew: true)
        recordingPath = path
        recordingStart = capture
        var line = JSONLine(event: "recording")
        line.add("path", path)
        out.emit(line, human: "recording to \(path)", kind: "media")
    }

    private func fail(_ error: MediaError) {
        failed = "\(error)"
        Output.fail("\(error) — media output stopped (the room goes on)")
    }

    /// Finishes the files (sizes, durations) before exit.
    func close() {
        if y4m == nil, let first = firstPicture, let path = options.videoOut {
            // A single picture: write it at the default rate.
            y4m = try? Y4MWriter(path: path, width: first.image.width, height: first.image.height, fps: 30)
            try? y4m?.write(first.image)
        }
        y4m?.close()
        wav?.close()
        do { try webm?.close() } catch { Output.fail("--record: \(error)") }
    }

    var rtpForwarded: (sent: Int, dropped: Int)? { forwarder.map { ($0.sent, $0.dropped) } }

    private static func prepareDirectory(_ dir: String) throws(MediaError) {
        var st = stat()
        if stat(dir, &st) != 0 {
            guard mkdir(dir, 0o755) == 0 else { throw .file("--record \(dir): cannot create the directory (\(String(cString: strerror(errno))))") }
            return
        }
        guard st.st_mode & S_IFMT == S_IFDIR else { throw .file("--record \(dir): not a directory; give a directory to record into") }
        guard access(dir, W_OK) == 0 else { throw .file("--record \(dir): directory is not writable") }
    }

    private static func checkWritable(_ path: String) throws(MediaError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .file("\(path): cannot write (\(String(cString: strerror(errno))))") }
        Glibc.close(fd)
    }

    private static func write(_ text: String, to path: String) throws(MediaError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .file("\(path): cannot write (\(String(cString: strerror(errno))))") }
        defer { Glibc.close(fd) }
        let bytes = Array(text.utf8)
        guard bytes.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
            throw .file("\(path): short write")
        }
    }

    static func timestampText() -> String {
        let tm = Output.localNow().tm
        let two = Output.two
        return "\(tm.tm_year + 1900)\(two(tm.tm_mon + 1))\(two(tm.tm_mday))-\(two(tm.tm_hour))\(two(tm.tm_min))\(two(tm.tm_sec))"
    }
}
