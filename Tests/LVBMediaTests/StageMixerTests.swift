#if canImport(Glibc)
import Glibc
#endif
@testable import LVBCore
@testable import LVBMedia
import TestAssertions
import Testing

/// The host's link-mic mixer between the node's loop (guest media in) and
/// the encoders (host pictures and blocks in, mixes out).
@Suite struct StageMixerTests {
    static let frameNTP = (UInt64(1) << 32) / 30
    static let blockNTP = (UInt64(1) << 32) / 50

    private func solid(_ luma: UInt8, _ width: Int = 320, _ height: Int = 180) throws -> I420Frame {
        var f = try I420Frame(width: width, height: height)
        f.y = [UInt8](repeating: luma, count: f.y.count)
        return f
    }

    private func picture(_ luma: UInt8, capture: UInt64?) throws -> ReceivedVideoFrame {
        ReceivedVideoFrame(image: try solid(luma, 160, 90), encoded: [], isKeyframe: false, rtpTimestamp: 0,
                           captureTime: capture, arrival: Instant(nanoseconds: 0))
    }

    private func block(_ frequency: Double, capture: UInt64?) -> ReceivedAudioFrame {
        let pcm = (0..<960).map { Int16((8000 * sin(2 * .pi * frequency * Double($0) / 48000)).rounded()) }
        return ReceivedAudioFrame(pcm: pcm, encoded: nil, rtpTimestamp: 0, captureTime: capture, concealed: false, arrival: nil)
    }

    /// Mean luma of a guest's pip tile in `frame`.
    private func tileLuma(_ frame: I420Frame, guest k: Int = 0, of n: Int = 1) -> Int {
        let r = StageRect.rects(for: .pip, participants: n + 1, width: frame.width, height: frame.height)[k + 1]
        var sum = 0
        for y in r.y..<(r.y + r.height) { for x in r.x..<(r.x + r.width) { sum += Int(frame.y[y * frame.width + x]) } }
        return sum / (r.width * r.height)
    }

    @Test func withNobodyOnStageThereIsNothingToMix() throws {
        let mixer = StageMixer(width: 320, height: 180)
        #expect(try mixer.mixVideo(solid(100)) == nil)
        #expect(mixer.mixAudio([Int16](repeating: 0, count: 960)) == nil)
    }

    @Test func aGuestIsShownInItsTileAndItsReturnLeavesItOut() throws {
        let mixer = StageMixer(width: 1280, height: 720)
        mixer.add(7, audioSSRC: 8)
        mixer.video(7, try picture(200, capture: nil))
        let mix = try #require(try mixer.mixVideo(solid(50, 1280, 720)))
        #expect(mix.keyframe)  // a guest came: the layout changed
        #expect(abs(tileLuma(mix.main) - 200) <= 2)
        let back = try #require(mix.returns.first { $0.guest == 7 }).frame
        #expect(back.width == MixConstants.returnMaxWidth && back.height == 360)
        #expect(abs(tileLuma(back) - 50) <= 2)
        // No new picture from the guest: its tile freezes on the last one, no keyframe.
        let next = try #require(try mixer.mixVideo(solid(50, 1280, 720)))
        #expect(!next.keyframe && abs(tileLuma(next.main) - 200) <= 2)
        // A layout change is one keyframe.
        #expect(mixer.setLayout(.split))
        #expect(try mixer.mixVideo(solid(50, 1280, 720))?.keyframe == true)
        #expect(try mixer.mixVideo(solid(50, 1280, 720))?.keyframe == false)
        #expect(!mixer.setLayout(.split))
        mixer.remove(7)
        #expect(try mixer.mixVideo(solid(50, 1280, 720)) == nil)
    }

    /// Mean luma of `r` in `frame`.
    private func luma(_ frame: I420Frame, _ r: StageRect) -> Int {
        var sum = 0
        for y in r.y..<(r.y + r.height) { for x in r.x..<(r.x + r.width) { sum += Int(frame.y[y * frame.width + x]) } }
        return sum / (r.width * r.height)
    }

    /// A PK: this host's side in the left half (its own guest in a pip tile
    /// within it), the other host in the right; the other host gets the left
    /// half alone, the own guest the whole without itself.
    @Test func aPKSplitsThePictureAndTheOtherHostGetsThisSideAlone() throws {
        let mixer = StageMixer(width: 640, height: 360)
        mixer.add(7, audioSSRC: 8)
        mixer.addPartner(9, audioSSRC: 10)
        #expect(mixer.partnerKey == 9 && mixer.guestCount == 1 && mixer.layout == .pip)
        mixer.video(7, try picture(200, capture: nil))
        mixer.video(9, try picture(150, capture: nil))
        let mix = try #require(try mixer.mixVideo(solid(50, 640, 360)))
        #expect(mix.keyframe)
        let left = StageRect(x: 8, y: 8, width: 100, height: 100), right = StageRect(x: 330, y: 8, width: 300, height: 340)
        let tile = StageRect.rects(for: .pip, participants: 2, width: 320, height: 360)[1]
        #expect(abs(luma(mix.main, left) - 50) <= 2 && abs(luma(mix.main, right) - 150) <= 2)
        #expect(abs(luma(mix.main, tile) - 200) <= 2)
        let other = try #require(mix.returns.first { $0.guest == 9 }).frame
        #expect(other.width == 320 && other.height == 360)
        #expect(abs(luma(other, left) - 50) <= 2 && abs(luma(other, tile) - 200) <= 2)
        let guest = try #require(mix.returns.first { $0.guest == 7 }).frame
        #expect(abs(luma(guest, tile) - 50) <= 2 && abs(luma(guest, right) - 150) <= 2)
        // Sound: the other host hears this side (host and guest), never itself.
        mixer.audio(7, block(650, capture: nil))
        mixer.audio(9, block(1500, capture: nil))
        let sound = try #require(mixer.mixAudio(block(450, capture: nil).pcm))
        let back = try #require(sound.returns.first { $0.guest == 9 }).pcm
        #expect(toneLevel(back, at: 1500) < -60 && toneLevel(back, at: 450) > -20 && toneLevel(back, at: 650) > -20)
        #expect(toneLevel(sound.main, at: 1500) > -20)
        // The PK ends: the picture is this side's whole again, in one keyframe.
        mixer.remove(9)
        #expect(mixer.partnerKey == nil)
        let after = try #require(try mixer.mixVideo(solid(50, 640, 360)))
        #expect(after.keyframe && abs(luma(after.main, StageRect(x: 330, y: 8, width: 200, height: 150)) - 50) <= 2)
    }

    /// Pictures captured later than the sound now heard from that guest wait
    /// for it: sound and picture leave the mixer together.
    @Test func aGuestsPictureIsShownWithTheSoundCapturedWithIt() throws {
        let mixer = StageMixer(width: 320, height: 180)
        mixer.add(1, audioSSRC: 2)
        let t0: UInt64 = 1 << 40
        // Ten pictures (100 ms apart in luma steps), captured every 1/30 s, all arrived at once.
        for i in 0..<10 { mixer.video(1, try picture(UInt8(40 + 20 * i), capture: t0 + UInt64(i) * Self.frameNTP)) }
        // Sound captured from t0 on arrives block by block.
        var shown: [Int] = []
        for b in 0..<15 {
            mixer.audio(1, block(660, capture: t0 + UInt64(b) * Self.blockNTP))
            _ = mixer.mixAudio([Int16](repeating: 0, count: 960))
            let mix = try #require(try mixer.mixVideo(solid(16)))
            shown.append((tileLuma(mix.main) - 40 + 10) / 20)
        }
        // Block b holds sound captured from b × 20 ms to (b + 1) × 20 ms: the
        // picture shown is the one captured at most one frame after its end
        // (frame ⌊(b + 1) × 0.6⌋ + 1), never later.
        for (b, frame) in shown.enumerated() {
            let latest = min(9, Int((Double(b + 1) * 0.6).rounded(.down)) + 1)
            #expect(frame <= latest && frame >= latest - 1, "block \(b): picture \(frame), expected about \(latest); \(shown)")
        }
    }

    /// Sound arriving ahead of its pictures is held (once) until they come,
    /// at most `alignBlocks` blocks, then plays on.
    @Test func soundWaitsForLatePicturesOnlySoLong() throws {
        let mixer = StageMixer(width: 320, height: 180)
        mixer.add(1, audioSSRC: 2)
        let t0: UInt64 = 1 << 40
        mixer.video(1, try picture(100, capture: t0))
        var heard: [Bool] = []
        for b in 0..<30 {
            mixer.audio(1, block(660, capture: t0 + UInt64(b + 5) * Self.blockNTP))
            let mix = try #require(mixer.mixAudio([Int16](repeating: 0, count: 960)))
            heard.append(toneLevel(mix.main, at: 660) > -30)
        }
        let held = heard.prefix { !$0 }.count
        #expect(held > 0 && held <= MixConstants.alignBlocks, "\(heard)")
        #expect(heard.dropFirst(held).allSatisfy { $0 }, "once playing, no gaps: \(heard)")
    }

    @Test func eachGuestsReturnSoundLeavesItOut() throws {
        let mixer = StageMixer(width: 320, height: 180)
        mixer.add(1, audioSSRC: 11)
        mixer.add(2, audioSSRC: 12)
        #expect(mixer.audioSSRC(of: 2) == 12 && mixer.layout == .grid)
        let host = block(450, capture: nil).pcm
        mixer.audio(1, block(650, capture: nil))
        mixer.audio(2, block(1500, capture: nil))
        // Whole periods in 20 ms, so the tones do not leak into each other's measure.
        let mix = try #require(mixer.mixAudio(host))
        #expect(toneLevel(mix.main, at: 450) > -20 && toneLevel(mix.main, at: 650) > -20 && toneLevel(mix.main, at: 1500) > -20)
        var back: [UInt32: [Int16]] = [:]
        for r in mix.returns { back[r.guest] = r.pcm }
        let one = try #require(back[1]), two = try #require(back[2])
        #expect(toneLevel(one, at: 650) < -60 && toneLevel(one, at: 1500) > -20 && toneLevel(one, at: 450) > -20)
        #expect(toneLevel(two, at: 1500) < -60 && toneLevel(two, at: 650) > -20)
    }

    /// A burst of the guest's sound beyond what its pictures need is skipped,
    /// so the guest is not heard (and seen) later for the rest of the stage.
    @Test func aBurstOfSoundIsNotKeptAsLatency() throws {
        let mixer = StageMixer(width: 320, height: 180)
        mixer.add(1, audioSSRC: 2)
        let t0: UInt64 = 1 << 40
        // Pictures are up to date; ten blocks of sound arrive at once.
        mixer.video(1, try picture(100, capture: t0 + 10 * Self.blockNTP))
        for b in 0..<10 { mixer.audio(1, block(650, capture: t0 + UInt64(b) * Self.blockNTP)) }
        _ = mixer.mixAudio([Int16](repeating: 0, count: 960))
        // From then on one block a slot arrives and one leaves: the backlog stays small.
        var depth: [Int] = []
        for b in 10..<20 {
            mixer.audio(1, block(650, capture: t0 + UInt64(b) * Self.blockNTP))
            mixer.video(1, try picture(100, capture: t0 + UInt64(b + 1) * Self.blockNTP))
            _ = mixer.mixAudio([Int16](repeating: 0, count: 960))
            depth.append(mixer.queuedSound(1))
        }
        #expect(depth.allSatisfy { $0 <= MixConstants.soundBacklog }, "\(depth)")
    }
}
