#if canImport(Glibc)
import Glibc
#endif
import LVBCore

/// Where a received stream goes.
public struct SinkOptions: Sendable {
    /// Record the stream as received (no re-encoding) to a WebM file in this directory.
    public var record: String?
    /// Decoded video as Y4M to this file, or `-` for stdout.
    public var videoOut: String?
    /// Decoded audio as WAV (48 kHz mono) to this file, or `-` for stdout.
    public var audioOut: String?
    /// Plain RTP to this address (video) and the port two above (audio).
    public var rtpOut: PeerAddress?
    /// An SDP file describing `rtpOut`.
    public var sdp: String?
    /// `first_frame` is measured from here (the user's command); default: when the sinks open.
    public var startedAt: Instant?

    public init(record: String? = nil, videoOut: String? = nil, audioOut: String? = nil,
                rtpOut: PeerAddress? = nil, sdp: String? = nil) {
        self.record = record
        self.videoOut = videoOut
        self.audioOut = audioOut
        self.rtpOut = rtpOut
        self.sdp = sdp
    }
}

/// What the sinks tell the user interfaces.
public enum SinkEvent: Sendable {
    /// The first decoded picture, `ms` after the sinks opened (the command
    /// started) or after a room switch; `preloaded`: that room was kept ready.
    case firstFrame(ms: Double, width: Int, height: Int, keyframe: Bool, preloaded: Bool)
    /// Recording started into `path`.
    case recording(path: String)
    /// An output failed (disk full, closed pipe): it stops, the room goes on.
    case failed(String)
}

/// A received stream's outputs: the WebM recorder, Y4M and WAV files, the
/// RTP forwarder, the first-frame report and the glass-to-glass samples.
/// Lives on the node's loop; time comes from `clock`.
public final class MediaSinks {
    public var onEvent: ((SinkEvent) -> Void)?
    public var videoLatency = LatencySamples()
    public var audioLatency = LatencySamples()
    public private(set) var framesOut = 0
    public private(set) var failure: String?
    public var recordingPath: String? { recorder?.path }
    public var rtpForwarded: (sent: Int, dropped: Int)? { forwarder.map { ($0.sent, $0.dropped) } }

    private let options: SinkOptions
    private let clock: Clock
    private var openedAt: Instant
    /// Frames captured before the sinks opened (or the room switched) are the
    /// sender's cached GOP (catch-up), not live: they stay out of the
    /// glass-to-glass figures.
    private var liveFrom: UInt64
    private var firstFrameAt: Instant?
    private var preloaded = false
    private var y4m: Y4MWriter?
    /// Held until the second picture gives the frame rate.
    private var firstPicture: (image: I420Frame, timestamp: UInt32)?
    private var wav: WAVWriter?
    private var recorder: StreamRecorder?
    private let forwarder: RTPForwarder?

    /// Opens the outputs, checking every path up front so a mistake fails
    /// before the node starts.
    public init(options: SinkOptions, clock: Clock) throws(MediaError) {
        self.options = options
        self.clock = clock
        openedAt = options.startedAt ?? clock.now()
        liveFrom = NTPTime.from(clock.wallTime())
        if let dir = options.record { recorder = try StreamRecorder(directory: dir, clock: clock) }
        if let path = options.audioOut { wav = try WAVWriter(path: path) }
        if let path = options.videoOut, path != "-" { try OutputFile.checkWritable(path) }
        if let target = options.rtpOut {
            forwarder = try RTPForwarder(target: target)
            if let sdp = options.sdp { try OutputFile.write(RTPForwarder.sdp(for: target), to: sdp) }
        } else {
            forwarder = nil
        }
    }

    /// The stream now comes from another room (a switch at `at`): the next
    /// picture is reported as a first frame again, timed from the switch.
    /// The outputs go on (a Y4M file keeps its size: other pictures are scaled to it).
    public func restart(at: Instant, preloaded: Bool) {
        openedAt = at
        firstFrameAt = nil
        self.preloaded = preloaded
        liveFrom = NTPTime.from(clock.wallTime())
    }

    /// Every RTP packet as it arrived (`--rtp-out`).
    public func packet(_ packet: RTPPacket) { forwarder?.forward(packet, packet.serialized()[...]) }

    public func video(_ frame: ReceivedVideoFrame) {
        let nowNTP = NTPTime.from(clock.wallTime())
        if let capture = frame.captureTime, capture >= liveFrom { videoLatency.add(NTPTime.milliseconds(from: capture, to: nowNTP)) }
        framesOut += 1
        if firstFrameAt == nil {
            let now = clock.now()
            firstFrameAt = now
            onEvent?(.firstFrame(ms: (now - openedAt).milliseconds, width: frame.image.width,
                                 height: frame.image.height, keyframe: frame.isKeyframe, preloaded: preloaded))
        }
        guard failure == nil else { return }
        do {
            if let path = options.videoOut { try writeY4M(frame, to: path) }
            if let recorder, let path = try recorder.video(frame, now: nowNTP) { onEvent?(.recording(path: path)) }
        } catch { fail(error) }
    }

    public func audio(_ block: ReceivedAudioFrame) {
        let nowNTP = NTPTime.from(clock.wallTime())
        if !block.concealed, let capture = block.captureTime, capture >= liveFrom {
            audioLatency.add(NTPTime.milliseconds(from: capture, to: nowNTP))
        }
        guard failure == nil else { return }
        do {
            try wav?.write(block.pcm)
            if let recorder, let path = try recorder.audio(block, picturesSeen: framesOut > 0) { onEvent?(.recording(path: path)) }
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
        guard let y4m else { return }
        // Another room's stream may have another size.
        let image = frame.image.width == y4m.width && frame.image.height == y4m.height
            ? frame.image : try frame.image.scaled(width: y4m.width, height: y4m.height)
        try y4m.write(image)
    }

    private func fail(_ error: MediaError) {
        failure = "\(error)"
        onEvent?(.failed("\(error) — media output stopped (the room goes on)"))
    }

    /// Finishes the files (sizes, durations) before exit.
    public func close() {
        if y4m == nil, let first = firstPicture, let path = options.videoOut {
            // A single picture: write it at the default rate.
            y4m = try? Y4MWriter(path: path, width: first.image.width, height: first.image.height, fps: 30)
            try? y4m?.write(first.image)
        }
        y4m?.close()
        wav?.close()
        do { try recorder?.close() } catch { onEvent?(.failed("--record: \(error)")) }
    }
}

/// Small file helpers for the sinks' up-front checks.
enum OutputFile {
    static func checkWritable(_ path: String) throws(MediaError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .file("\(path): cannot write (\(String(cString: strerror(errno))))") }
        Glibc.close(fd)
    }

    static func write(_ text: String, to path: String) throws(MediaError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .file("\(path): cannot write (\(String(cString: strerror(errno))))") }
        defer { Glibc.close(fd) }
        let bytes = Array(text.utf8)
        guard bytes.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
            throw .file("\(path): short write")
        }
    }
}
