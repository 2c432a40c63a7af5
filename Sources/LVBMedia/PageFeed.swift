import LVBCore
import Synchronization

/// A host's studio page as its picture and sound: the page's camera and
/// microphone, encoded by the browser (WebCodecs VP8 and Opus), decoded
/// here on the node's loop and taken by the host's encoders in place of its
/// own sources while the page's camera is live (`FeedVideoSource`,
/// `FeedAudioSource`). The host's encoders go on as before — its guests
/// mixed in, its return streams, its rate control, its keyframes, its
/// replay — so the room's stream is the host's own whatever feeds it.
public final class PageFeed: Sendable {
    private struct State {
        var live = false
        var picture: I420Frame?
        var samples: [Int16] = []
        var pictures = 0
        var concealed = 0
    }
    private let state = Mutex(State())
    public let width: Int
    public let height: Int

    /// Sound queued ahead of the encoder at most (the page's capture runs a
    /// little ahead or behind the node's clock); beyond it the oldest goes.
    public static let maxQueuedSamples = MediaConstants.audioFrameSamples * 10

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// Whether the page's camera feeds the host's stream now.
    public var isLive: Bool { state.withLock { $0.live } }

    /// The page's pictures decoded so far, and the 20 ms frames the encoder found no sound for.
    public var counts: (pictures: Int, concealed: Int) { state.withLock { ($0.pictures, $0.concealed) } }

    public func start() {
        state.withLock { s in
            s.live = true
            s.picture = nil
            s.samples = []
        }
    }

    public func stop() {
        state.withLock { s in
            s.live = false
            s.picture = nil
            s.samples = []
        }
    }

    /// A decoded picture of the page's camera, scaled to the stream's size if it is not.
    public func push(_ picture: I420Frame) throws(MediaError) {
        let sized = picture.width == width && picture.height == height ? picture : try picture.scaled(width: width, height: height)
        state.withLock { s in
            guard s.live else { return }
            s.picture = sized
            s.pictures += 1
        }
    }

    /// Decoded sound of the page's microphone (mono, 48 kHz).
    public func push(samples: [Int16]) {
        state.withLock { s in
            guard s.live else { return }
            s.samples += samples
            if s.samples.count > Self.maxQueuedSamples { s.samples.removeFirst(s.samples.count - Self.maxQueuedSamples) }
        }
    }

    /// The latest picture (again, if no newer one came: the camera's rate may be below the stream's).
    func latestPicture() -> I420Frame? { state.withLock { $0.picture } }

    /// `count` samples, silence where the page sent none yet.
    func takeSamples(_ count: Int) -> [Int16] {
        state.withLock { s in
            guard s.samples.count >= count else {
                s.concealed += 1
                let some = s.samples
                s.samples = []
                return some + [Int16](repeating: 0, count: count - some.count)
            }
            let out = Array(s.samples.prefix(count))
            s.samples.removeFirst(count)
            return out
        }
    }
}

/// The host's picture: its page's camera while that is live, else its own
/// source (`--video`), or black when it has none (`--video page`).
public final class FeedVideoSource: VideoSource {
    private let own: VideoSource?
    private let feed: PageFeed
    private let black: I420Frame

    public init(own: VideoSource?, feed: PageFeed) throws(MediaError) {
        self.own = own
        self.feed = feed
        var black = try I420Frame(width: feed.width, height: feed.height)
        for i in black.y.indices { black.y[i] = 16 }
        self.black = black
    }

    public func next() throws(MediaError) -> I420Frame? {
        if feed.isLive { return feed.latestPicture() ?? black }
        guard let own else { return black }
        return try own.next()
    }
}

/// The host's sound: its page's microphone while the page's camera is
/// live, else its own source (`--audio`), or silence (`--audio page`).
public final class FeedAudioSource: AudioSource {
    private let own: AudioSource?
    private let feed: PageFeed

    public init(own: AudioSource?, feed: PageFeed) {
        self.own = own
        self.feed = feed
    }

    public func next() throws(MediaError) -> [Int16]? {
        if feed.isLive { return feed.takeSamples(MediaConstants.audioFrameSamples) }
        guard let own else { return [Int16](repeating: 0, count: MediaConstants.audioFrameSamples) }
        return try own.next()
    }
}

/// Decodes what a host's page sends into its feed (on the node's loop).
public final class PageFeedDecoder {
    private let feed: PageFeed
    private let video: VP8Decoder
    private let audio: OpusDecoder
    /// Waiting for a keyframe (at the start, after a frame that failed).
    private var needKeyframe = true

    public init(feed: PageFeed) throws(MediaError) {
        self.feed = feed
        video = try VP8Decoder()
        audio = try OpusDecoder(channels: 1)
    }

    /// A VP8 frame; returns whether the page should send a keyframe (this one
    /// could not be decoded, or came before any).
    public func video(_ frame: [UInt8], keyframe: Bool) throws(MediaError) -> Bool {
        if needKeyframe && !keyframe { return true }
        do {
            if let picture = try video.decode(frame) { try feed.push(picture) }
            needKeyframe = false
            return false
        } catch {
            needKeyframe = true
            throw error
        }
    }

    /// One Opus packet.
    public func audio(_ packet: [UInt8]) throws(MediaError) {
        feed.push(samples: try audio.decode(packet))
    }
}
