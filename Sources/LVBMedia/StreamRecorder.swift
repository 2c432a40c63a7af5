#if canImport(Glibc)
import Glibc
#endif
import LVBCore

/// `--record DIR`: the stream as received (no re-encoding) in a WebM file
/// named after the local time it started. Recording starts at the first
/// keyframe, or after two seconds of sound without a picture (an audio-only
/// stream). Never overwrites a file: another viewer may record into the same
/// directory in the same second.
final class StreamRecorder {
    private let directory: String
    private let clock: Clock
    private var webm: WebMWriter?
    private(set) var path: String?
    private var start: UInt64?
    private var lastVideoMs: Int64?
    private var lastAudioMs: Int64?
    private var firstAudioArrival: Instant?

    init(directory: String, clock: Clock) throws(MediaError) {
        self.directory = directory
        self.clock = clock
        try Self.prepare(directory)
    }

    /// Records one picture; returns the file's path when this started it.
    func video(_ frame: ReceivedVideoFrame, now: UInt64) throws(MediaError) -> String? {
        var started: String?
        if webm == nil, frame.isKeyframe {
            started = try begin(video: (frame.image.width, frame.image.height), at: frame.captureTime ?? now)
        }
        guard let webm, let start else { return started }
        var ms = max(0, Int64(NTPTime.milliseconds(from: start, to: frame.captureTime ?? now)))
        if let last = lastVideoMs, ms <= last { ms = last + 1 }  // strictly increasing per track
        lastVideoMs = ms
        try webm.writeVideo(frame.encoded, timestampMs: ms, keyframe: frame.isKeyframe)
        return started
    }

    /// Records one audio block; returns the file's path when this started it.
    func audio(_ block: ReceivedAudioFrame, picturesSeen: Bool) throws(MediaError) -> String? {
        guard let encoded = block.encoded, let capture = block.captureTime else { return nil }
        let now = clock.now()
        if firstAudioArrival == nil { firstAudioArrival = now }
        var started: String?
        if webm == nil, !picturesSeen, let first = firstAudioArrival, now - first >= MediaConstants.audioOnlyRecordingWait {
            started = try begin(video: nil, at: capture)
        }
        guard let webm, let start, capture >= start else { return started }
        var ms = Int64(NTPTime.milliseconds(from: start, to: capture))
        if let last = lastAudioMs, ms <= last { ms = last + 1 }
        lastAudioMs = ms
        try webm.writeAudio(encoded, timestampMs: ms)
        return started
    }

    private func begin(video: (width: Int, height: Int)?, at capture: UInt64) throws(MediaError) -> String {
        let base = "\(directory)/lvbnode-\(LocalTime(clock.wallTime()).compactText)"
        var candidate = base + ".webm"
        for n in 2...99 where access(candidate, F_OK) == 0 { candidate = "\(base)-\(n).webm" }
        webm = try WebMWriter(path: candidate, video: video, audioChannels: 1, createNew: true)
        path = candidate
        start = capture
        return candidate
    }

    func close() throws(MediaError) { try webm?.close() }

    private static func prepare(_ dir: String) throws(MediaError) {
        var st = stat()
        if stat(dir, &st) != 0 {
            guard mkdir(dir, 0o755) == 0 else { throw .file("--record \(dir): cannot create the directory (\(String(cString: strerror(errno))))") }
            return
        }
        guard st.st_mode & S_IFMT == S_IFDIR else { throw .file("--record \(dir): not a directory; give a directory to record into") }
        guard access(dir, W_OK) == 0 else { throw .file("--record \(dir): directory is not writable") }
    }
}
