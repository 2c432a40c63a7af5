import LVBCore
import LVBMedia

/// Where the host's pictures come from.
protocol VideoSource: AnyObject {
    /// The next picture, or nil when the source has ended (stdin closed).
    func next() throws(MediaError) -> I420Frame?
}

/// Where the host's sound comes from, 20 ms at a time (960 mono samples).
protocol AudioSource: AnyObject {
    func next() throws(MediaError) -> [Int16]?
}

final class SyntheticVideoSource: VideoSource {
    private let pattern: SyntheticVideo
    private var number = 0
    init(width: Int, height: Int) throws(MediaError) { pattern = try SyntheticVideo(width: width, height: height) }
    func next() throws(MediaError) -> I420Frame? {
        defer { number += 1 }
        return pattern.frame(number: number, captureMilliseconds: SystemClock.shared.wallTime().milliseconds)
    }
}

final class Y4MVideoSource: VideoSource {
    private let reader: Y4MReader
    private let size: (width: Int, height: Int)
    init(reader: Y4MReader, size: (width: Int, height: Int)) {
        self.reader = reader
        self.size = size
    }
    func next() throws(MediaError) -> I420Frame? {
        try reader.nextFrame()?.scaled(width: size.width, height: size.height)
    }
}

final class SyntheticAudioSource: AudioSource {
    private var tone: SyntheticAudio
    init() throws(MediaError) { tone = try SyntheticAudio(sampleRate: MediaConstants.audioClockRate, channels: 1) }
    func next() throws(MediaError) -> [Int16]? { tone.next20ms() }
}

final class WAVAudioSource: AudioSource {
    private let reader: WAVReader
    init(reader: WAVReader) { self.reader = reader }
    func next() throws(MediaError) -> [Int16]? { try reader.read(samplesPerChannel: MediaConstants.audioFrameSamples) }
}

/// The host's sources, opened (and so checked) before the node starts.
struct HostMediaSetup {
    var video: VideoSource?
    var audio: AudioSource?
    var width: Int
    var height: Int
    var fps: Int
    var gop: Double
    var bitrate: Int
    var gopCache: Bool
    /// A source reads standard input, so the console must not.
    var readsStdin: Bool

    /// Opens the sources the options name; a file that cannot be used throws
    /// one line naming it and what is supported.
    init(options o: HostMediaOptions) throws(MediaError) {
        var size = (width: 640, height: 360)
        if let s = o.size, let parsed = try? HostMediaOptions.parseSize(s) { size = parsed }
        var fps = o.fps ?? 30
        switch o.video.lowercased() {
        case "none": video = nil
        case "synthetic": video = try SyntheticVideoSource(width: size.width, height: size.height)
        default:
            let reader = try Y4MReader(path: o.video, loop: o.video != "-")
            if o.size == nil { size = (reader.width & ~1, reader.height & ~1) }
            if o.fps == nil, reader.fps.den > 0 { fps = min(120, max(1, (reader.fps.num + reader.fps.den / 2) / reader.fps.den)) }
            video = Y4MVideoSource(reader: reader, size: size)
        }
        switch o.audio.lowercased() {
        case "none": audio = nil
        case "synthetic": audio = try SyntheticAudioSource()
        default: audio = WAVAudioSource(reader: try WAVReader(path: o.audio, loop: o.audio != "-"))
        }
        (width, height, self.fps) = (size.width, size.height, fps)
        gop = o.gop
        bitrate = o.bitrate
        gopCache = !o.noGopCache
        readsStdin = o.video == "-" || o.audio == "-"
    }
}
