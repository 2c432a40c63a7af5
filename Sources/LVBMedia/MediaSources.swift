import LVBCore

/// Where a publisher's pictures come from.
public protocol VideoSource: AnyObject {
    /// The next picture, or nil when the source has ended (stdin closed).
    func next() throws(MediaError) -> I420Frame?
}

/// Where a publisher's sound comes from, 20 ms at a time (960 mono samples at 48 kHz).
public protocol AudioSource: AnyObject {
    func next() throws(MediaError) -> [Int16]?
}

/// The test pattern: colour bars, a moving box, and the frame number and
/// capture time (ms mod 65536, from `clock`) as bar codes.
public final class SyntheticVideoSource: VideoSource {
    private let pattern: SyntheticVideo
    private let clock: Clock
    private var number = 0

    public init(width: Int, height: Int, clock: Clock, look: SyntheticLook = .host) throws(MediaError) {
        pattern = try SyntheticVideo(width: width, height: height, look: look)
        self.clock = clock
    }

    public func next() throws(MediaError) -> I420Frame? {
        defer { number += 1 }
        return pattern.frame(number: number, captureMilliseconds: clock.wallTime().milliseconds)
    }
}

/// Pictures from a Y4M file or pipe, scaled to the stream's size.
public final class Y4MVideoSource: VideoSource {
    public let reader: Y4MReader
    private let size: (width: Int, height: Int)

    public init(reader: Y4MReader, size: (width: Int, height: Int)) {
        self.reader = reader
        self.size = size
    }

    public func next() throws(MediaError) -> I420Frame? {
        try reader.nextFrame()?.scaled(width: size.width, height: size.height)
    }
}

/// A tone that beeps each second.
public final class SyntheticAudioSource: AudioSource {
    private var tone: SyntheticAudio
    public init(look: SyntheticLook = .host) throws(MediaError) {
        tone = try SyntheticAudio(sampleRate: MediaConstants.audioClockRate, channels: 1, look: look)
    }
    public func next() throws(MediaError) -> [Int16]? { tone.next20ms() }
}

/// Sound from a WAV file or pipe (48 kHz 16-bit; stereo is mixed down).
public final class WAVAudioSource: AudioSource {
    private let reader: WAVReader
    public init(reader: WAVReader) { self.reader = reader }
    public func next() throws(MediaError) -> [Int16]? { try reader.read(samplesPerChannel: MediaConstants.audioFrameSamples) }
}

/// What a publisher encodes and how: its sources (opened, so checked, before
/// the node starts) and the encoder settings.
public struct PublisherSetup {
    public var video: VideoSource?
    public var audio: AudioSource?
    public var width = 640
    public var height = 360
    public var fps = 30
    public var gopSeconds = 2.0
    public var bitrateKbps = 1000
    public var gopCache = true
    /// A host's studio page's camera and microphone, when they may feed it (`feedFromPage`).
    public var pageFeed: PageFeed?

    public init(video: VideoSource?, audio: AudioSource?) {
        self.video = video
        self.audio = audio
    }

    public var isEmpty: Bool { video == nil && audio == nil }

    /// A source named as users name it: `synthetic`, `none`, a file path, or
    /// `-` for standard input. A file that cannot be used throws one line
    /// naming it and what is supported.
    public enum Input: Equatable, Sendable {
        /// `page`: the host's studio page's camera or microphone (`PageFeed`), nothing until it is live.
        case synthetic, none, stdin, page
        case file(String)

        public init(_ text: String) {
            switch text.lowercased() {
            case "synthetic": self = .synthetic
            case "none": self = .none
            case "page": self = .page
            case "-": self = .stdin
            default: self = .file(text)
            }
        }
    }

    /// Opens the sources. `size` and `fps` left nil follow a Y4M input's own
    /// size and rate (else 640x360 at 30); `look` picks the synthetic pattern and tone.
    public static func open(video: Input, audio: Input, size: (width: Int, height: Int)?, fps: Int?,
                            clock: Clock, look: SyntheticLook = .host) throws(MediaError) -> PublisherSetup {
        var setup = PublisherSetup(video: nil, audio: nil)
        var chosen = size ?? (640, 360)
        var rate = fps ?? 30
        switch video {
        case .none, .page: break
        case .synthetic: setup.video = try SyntheticVideoSource(width: chosen.width, height: chosen.height, clock: clock, look: look)
        case .stdin, .file:
            let reader: Y4MReader
            if case .file(let path) = video { reader = try Y4MReader(path: path, loop: true) } else { reader = try Y4MReader(path: "-") }
            if size == nil { chosen = (reader.width & ~1, reader.height & ~1) }
            if fps == nil, reader.fps.den > 0 { rate = min(120, max(1, (reader.fps.num + reader.fps.den / 2) / reader.fps.den)) }
            setup.video = Y4MVideoSource(reader: reader, size: chosen)
        }
        switch audio {
        case .none, .page: break
        case .synthetic: setup.audio = try SyntheticAudioSource(look: look)
        case .stdin: setup.audio = WAVAudioSource(reader: try WAVReader(path: "-"))
        case .file(let path): setup.audio = WAVAudioSource(reader: try WAVReader(path: path, loop: true))
        }
        (setup.width, setup.height, setup.fps) = (chosen.width, chosen.height, rate)
        return setup
    }

    /// A host whose studio page may put its camera and microphone in place
    /// of its own sources: each track it has (or that is `page`) takes the
    /// page's feed while that is live. Call once the sources are open.
    public mutating func feedFromPage(video: Bool, audio: Bool) throws(MediaError) {
        let feed = PageFeed(width: width, height: height)
        if video || self.video != nil { self.video = try FeedVideoSource(own: self.video, feed: feed) }
        if audio || self.audio != nil { self.audio = FeedAudioSource(own: self.audio, feed: feed) }
        if self.video != nil || self.audio != nil { pageFeed = feed }
    }
}
