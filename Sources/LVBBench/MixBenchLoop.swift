import LVBCore
import LVBMedia

#if canImport(Glibc)
import Glibc
#endif

// The host's link-mic work, in process, on the library code, as fast as it
// goes: guests' RTP packets into VideoReceiver/AudioReceiver (depacketize,
// jitter buffer, VP8 and Opus decode), decoded media into StageMixer, and at
// each of the host's slots mixVideo/mixAudio and the encodes EncodePump does
// (each guest's mix-minus return stream, then the main mix). The receivers
// run on a virtual clock that the loop sets to each event's time; the CPU of
// each stage is this thread's CPU time (every codec here is single-threaded).

/// The clock the loop sets: the receivers' jitter buffers see the schedule, not the machine.
final class ScheduleClock: Clock {
    var nanoseconds: UInt64 = 0
    func now() -> Instant { Instant(nanoseconds: 1_000_000_000 + nanoseconds) }
    func wallTime() -> WallTime {
        WallTime(seconds: 1_700_000_000 + nanoseconds / 1_000_000_000, nanoseconds: UInt32(nanoseconds % 1_000_000_000))
    }
}

/// Thread CPU seconds per stage.
struct MixCosts {
    var videoDecode = 0.0, audioDecode = 0.0
    /// StageMixer.mixVideo: the main picture and every return picture, composed and scaled.
    var mixVideo = 0.0
    /// VideoCompositor composing the main picture alone from the same pictures (timed apart).
    var mainCompose = 0.0
    var mainVideoEncode = 0.0, returnVideoEncode = 0.0
    /// StageMixer.mixAudio: the main mix and each mix-minus, limited.
    var mixAudio = 0.0
    var mainAudioEncode = 0.0, returnAudioEncode = 0.0

    /// What the ffmpeg reference also does: decode, compose the main picture, mix, encode the main stream.
    var sameWork: Double { videoDecode + audioDecode + mainCompose + mainVideoEncode + mixAudio + mainAudioEncode }
    /// What only the node does: the return pictures inside mixVideo and the return encodes.
    var returns: Double { max(0, mixVideo - mainCompose) + returnVideoEncode + returnAudioEncode }
    var total: Double { sameWork + returns }
}

/// What one run measured, and the decoded streams the reference reads.
struct MixRun {
    var costs = MixCosts()
    var frames = 0
    var mainVideoBytes = 0
    /// Per shown guest picture (ms): hand-off to StageMixer → the main encode done,
    /// and its two parts: the wait for the host's slot (schedule) and mix + encodes (measured).
    var latencies: [Double] = []
    var waits: [Double] = []
    var work: [Double] = []
    /// Guest tiles with no readable frame number (black before the guest's first picture).
    var unread = 0
    var layout: StageLayout = .pip
    var returnSize = (width: 0, height: 0)
    /// Per guest: the VP8 frames and Opus packets the receivers decoded, with their media time (ms).
    var decodedVideo: [[(data: [UInt8], keyframe: Bool, ms: Int64)]] = []
    var decodedAudio: [[(packet: [UInt8], ms: Int64)]] = []
}

enum MixLoop {
    private enum Event {
        case guestVideo(Int, Int), guestAudio(Int, Int), hostVideo(Int), hostAudio(Int)
    }

    static func run(_ s: MixScenario, _ inputs: MixInputs) throws(MediaError) -> MixRun {
        let clock = ScheduleClock()
        let random = SeededRandom(seed: 0x686F_7374)
        let mixer = StageMixer(width: s.width, height: s.height)
        let keys = (0..<s.guests).map { UInt32(0x5000 + $0) }
        for (g, key) in keys.enumerated() { mixer.add(key, audioSSRC: 0x6000 + UInt32(g)) }

        var videoIn: [VideoReceiver] = [], audioIn: [AudioReceiver] = []
        for g in 0..<s.guests {
            videoIn.append(try VideoReceiver(clock: clock, ssrc: 0x7000 + UInt32(g)))
            audioIn.append(try AudioReceiver(clock: clock, ssrc: 0x7100 + UInt32(g)))
        }
        // As EncodePump: the main stream at the host's settings, each return at
        // the mixer's return size and half the bitrate (made up front, untimed).
        let mainVideo = try VideoStreamEncoder(width: s.width, height: s.height, fps: MixBench.fps, bitrateKbps: s.bitrateKbps,
                                               gopSeconds: MixBench.gopSeconds, ssrc: 0x100, maxPacketSize: MixInputs.maxPacketSize,
                                               random: random)
        let mainAudio = try AudioStreamEncoder(ssrc: 0x101, random: random)
        var returnVideo: [UInt32: VideoStreamEncoder] = [:], returnAudio: [UInt32: AudioStreamEncoder] = [:]
        for key in keys {
            returnVideo[key] = try VideoStreamEncoder(width: mixer.returnSize.width, height: mixer.returnSize.height,
                                                      fps: MixBench.fps, bitrateKbps: EncodePump.returnKbps(s.bitrateKbps),
                                                      gopSeconds: MixBench.gopSeconds, ssrc: key,
                                                      maxPacketSize: MixInputs.maxPacketSize, random: random)
            returnAudio[key] = try AudioStreamEncoder(ssrc: mixer.audioSSRC(of: key) ?? 0, random: random)
        }
        let compositor = VideoCompositor()

        var events: [(at: UInt64, event: Event)] = []
        for (g, stream) in inputs.guests.enumerated() {
            events += stream.video.indices.map { (stream.video[$0].at, .guestVideo(g, $0)) }
            events += stream.audio.indices.map { (stream.audio[$0].at, .guestAudio(g, $0)) }
        }
        events += inputs.hostPictures.indices.map { (MixInputs.hostStart + MixInputs.pictureTime($0), .hostVideo($0)) }
        events += inputs.hostSound.indices.map { (MixInputs.hostStart + UInt64($0) * MixInputs.blockNanos, .hostAudio($0)) }
        // Guests' deliveries before a host slot at the same instant.
        events.sort { a, b in
            if a.at != b.at { return a.at < b.at }
            switch (a.event, b.event) {
            case (.guestVideo, _), (.guestAudio, _): return true
            default: return false
            }
        }

        var run = MixRun()
        run.frames = inputs.hostPictures.count
        run.returnSize = mixer.returnSize
        run.decodedVideo = Array(repeating: [], count: s.guests)
        run.decodedAudio = Array(repeating: [], count: s.guests)
        var handedAt: [[Int: UInt64]] = Array(repeating: [:], count: s.guests)
        var latest: [I420Frame?] = Array(repeating: nil, count: s.guests)
        var lastShown: [Int?] = Array(repeating: nil, count: s.guests)

        for (at, event) in events {
            clock.nanoseconds = at
            switch event {
            case let .guestVideo(g, k):
                let c0 = threadCPUSeconds()
                for packet in inputs.guests[g].video[k].packets { videoIn[g].receive(packet) }
                let out = videoIn[g].poll()
                for case let .frame(frame) in out { mixer.video(keys[g], frame) }
                run.costs.videoDecode += threadCPUSeconds() - c0
                for case let .frame(frame) in out {
                    let number = Int((frame.rtpTimestamp &- inputs.guests[g].firstVideoTimestamp) / 3000)
                    handedAt[g][number] = at
                    latest[g] = frame.image
                    run.decodedVideo[g].append((frame.encoded, frame.isKeyframe, Int64(number) * 1000 / Int64(MixBench.fps)))
                }
            case let .guestAudio(g, j):
                let c0 = threadCPUSeconds()
                audioIn[g].receive(inputs.guests[g].audio[j].packet)
                let out = audioIn[g].poll()
                for case let .audio(block) in out { mixer.audio(keys[g], block) }
                run.costs.audioDecode += threadCPUSeconds() - c0
                for case let .audio(block) in out {
                    guard let packet = block.encoded else { continue }
                    let ms = Int64((block.rtpTimestamp &- inputs.guests[g].firstAudioTimestamp) / 48)
                    run.decodedAudio[g].append((packet, ms))
                }
            case let .hostVideo(n):
                let host = inputs.hostPictures[n]
                let mediaTime = Duration.nanoseconds(Int64(MixInputs.pictureTime(n)))
                let w0 = ProcessRunner.now()
                var c0 = threadCPUSeconds()
                guard let mix = try mixer.mixVideo(host) else { continue }
                var c1 = threadCPUSeconds()
                run.costs.mixVideo += c1 - c0
                c0 = c1
                for (key, picture) in mix.returns {
                    _ = try returnVideo[key]?.encode(picture, mediaTime: mediaTime, captureTime: 0, forceKeyframe: false)
                }
                c1 = threadCPUSeconds()
                run.costs.returnVideoEncode += c1 - c0
                c0 = c1
                let encoded = try mainVideo.encode(mix.main, mediaTime: mediaTime, captureTime: 0, forceKeyframe: mix.keyframe)
                c1 = threadCPUSeconds()
                let w1 = ProcessRunner.now()
                run.costs.mainVideoEncode += c1 - c0
                run.mainVideoBytes += encoded?.bytes ?? 0

                c0 = threadCPUSeconds()
                _ = try compositor.compose(host: host, guests: latest, layout: mixer.layout)
                run.costs.mainCompose += threadCPUSeconds() - c0

                // Which guest picture each tile shows: its frame number, read from the tile.
                run.layout = mixer.layout
                let tiles = StageRect.rects(for: mixer.layout, participants: 1 + s.guests, width: s.width, height: s.height)
                for g in 0..<s.guests {
                    let number = tilePicture(mix.main, tiles[g + 1], width: s.width, height: s.height)
                        .flatMap(SyntheticVideo.readFrameNumber)
                    guard let number, let handed = handedAt[g][number] else { run.unread += 1; continue }
                    // A picture shown again (the guest had no newer one) was counted the first time.
                    guard number != lastShown[g] else { continue }
                    lastShown[g] = number
                    let wait = Double(at - handed) / 1e6, work = (w1 - w0) * 1000
                    run.waits.append(wait)
                    run.work.append(work)
                    run.latencies.append(wait + work)
                }
            case let .hostAudio(m):
                let mediaTime = Duration.nanoseconds(Int64(UInt64(m) * MixInputs.blockNanos))
                var c0 = threadCPUSeconds()
                guard let mix = mixer.mixAudio(inputs.hostSound[m]) else { continue }
                var c1 = threadCPUSeconds()
                run.costs.mixAudio += c1 - c0
                c0 = c1
                for (key, pcm) in mix.returns {
                    _ = try returnAudio[key]?.encode(pcm, mediaTime: mediaTime, captureTime: 0)
                }
                c1 = threadCPUSeconds()
                run.costs.returnAudioEncode += c1 - c0
                c0 = c1
                _ = try mainAudio.encode(mix.main, mediaTime: mediaTime, captureTime: 0)
                run.costs.mainAudioEncode += threadCPUSeconds() - c0
            }
        }
        return run
    }

    /// The picture in `tile` of `mix`, scaled back up to a guest's `width`×`height`
    /// so SyntheticVideo's barcode readers find their strips where they drew them.
    static func tilePicture(_ mix: I420Frame, _ tile: StageRect, width: Int, height: Int) -> I420Frame? {
        guard tile.x + tile.width <= mix.width, tile.y + tile.height <= mix.height,
              var crop = try? I420Frame(width: tile.width, height: tile.height) else { return nil }
        for row in 0..<tile.height {
            let from = (tile.y + row) * mix.lumaStride + tile.x
            crop.y.withUnsafeMutableBufferPointer { out in
                mix.y.withUnsafeBufferPointer { src in
                    (out.baseAddress! + row * tile.width).update(from: src.baseAddress! + from, count: tile.width)
                }
            }
        }
        return try? crop.scaled(width: width, height: height)
    }
}
