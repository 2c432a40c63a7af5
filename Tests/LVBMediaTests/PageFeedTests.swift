import LVBCore
@testable import LVBMedia
import LVBTestSupport
import Testing

/// A host's studio page as its picture and sound: decoded into the feed,
/// taken by the host's encoders in place of its own sources while live.
@Suite struct PageFeedTests {
    /// A 320x180 picture of one luma.
    func picture(_ luma: UInt8) throws -> I420Frame {
        var f = try I420Frame(width: 320, height: 180)
        for i in f.y.indices { f.y[i] = luma }
        return f
    }

    @Test func theFeedTakesThePlaceOfTheOwnSourcesOnlyWhileLive() throws {
        let feed = PageFeed(width: 640, height: 360)
        let own = try SyntheticVideoSource(width: 640, height: 360, clock: ManualClock())
        let video = try FeedVideoSource(own: own, feed: feed)
        let audio = FeedAudioSource(own: try SyntheticAudioSource(), feed: feed)
        // Not live: the node's own pattern and tone.
        let first = try #require(try video.next())
        #expect(first == (try SyntheticVideoSource(width: 640, height: 360, clock: ManualClock()).next()))
        #expect((try audio.next())?.contains { $0 != 0 } == true)
        // A picture pushed before the camera is live is not kept.
        try feed.push(picture(200))
        feed.start()
        // Live, nothing from the page yet: black, and silence.
        let black = try #require(try video.next())
        #expect(black.width == 640 && black.y.allSatisfy { $0 == 16 })
        #expect(try audio.next() == [Int16](repeating: 0, count: MediaConstants.audioFrameSamples))
        // The page's picture, scaled to the stream's size, again until a newer one comes.
        try feed.push(picture(200))
        for _ in 0..<2 {
            let shown = try #require(try video.next())
            #expect(shown.width == 640 && shown.height == 360 && shown.y[640 * 180 + 320] == 200)
        }
        // Sound in 20 ms frames, the rest padded with silence; too much queued drops the oldest.
        feed.push(samples: [Int16](repeating: 7, count: 1500))
        #expect(try audio.next() == [Int16](repeating: 7, count: 960))
        #expect(try audio.next() == [Int16](repeating: 7, count: 540) + [Int16](repeating: 0, count: 420))
        feed.push(samples: [Int16](repeating: 1, count: PageFeed.maxQueuedSamples) + [Int16](repeating: 2, count: 960))
        var last: [Int16] = []
        for _ in 0..<10 { last = try #require(try audio.next()) }
        #expect(last == [Int16](repeating: 2, count: 960))
        #expect(feed.counts.pictures == 1 && feed.counts.concealed == 2)
        // Stopped: the own pattern again, where it left off (its second picture).
        feed.stop()
        let reference = try SyntheticVideoSource(width: 640, height: 360, clock: ManualClock())
        _ = try reference.next()
        #expect(try video.next() == (try reference.next()))
        #expect(feed.latestPicture() == nil)
    }

    @Test func theDecoderWaitsForAKeyframeAndFeedsWhatItDecodes() throws {
        let feed = PageFeed(width: 320, height: 180)
        feed.start()
        let decoder = try PageFeedDecoder(feed: feed)
        let encoder = try VP8Encoder(width: 320, height: 180, fps: 30, bitrateKbps: 800, keyframeInterval: 60)
        var frames: [EncodedFrame] = []
        for n in 0..<5 { frames += try encoder.encode(picture(UInt8(100 + n * 20)), pts: Int64(n), forceKeyframe: n == 0) }
        #expect(frames.count == 5 && frames[0].isKeyframe && !frames[1].isKeyframe)
        // A delta frame first: a keyframe is asked for, nothing is shown.
        #expect(try decoder.video(frames[1].data, keyframe: false))
        #expect(feed.latestPicture() == nil)
        #expect(try !decoder.video(frames[0].data, keyframe: true))
        for f in frames.dropFirst() { #expect(try !decoder.video(f.data, keyframe: false)) }
        let shown = try #require(feed.latestPicture())
        #expect(abs(Int(shown.y[180 / 2 * 320 + 160]) - 180) < 12)
        // Garbage: an error, and the next frames wait for a keyframe again.
        #expect(throws: MediaError.self) { _ = try decoder.video([0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09], keyframe: true) }
        #expect(try decoder.video(frames[2].data, keyframe: false))
        // Opus from the page becomes samples in the feed.
        let opus = try OpusEncoder(channels: 1, bitrate: 48000)
        try decoder.audio(try opus.encode([Int16](repeating: 3000, count: 960)))
        #expect(feed.takeSamples(960).count == 960)
    }
}
