import Foundation
import LVBCore
import LVBMedia
@testable import LVBReplay
import LVBTestSupport
import Testing

/// The player on a real recorded replay (libvpx pictures whose barcode is
/// the frame number: frame n was captured at n/30 s).
@Suite struct ReplayPlayerTests {
    final class Run {
        let clock = ManualClock()
        let player: ReplayPlayer
        let segments: [Int: [UInt8]]
        var shown: [(number: Int, ms: UInt32, at: Instant)] = []
        var sounds = 0
        var events: [ReplayPlayer.Event] = []

        init(seconds: Int) throws {
            let dir = ReplayRecorderTests.temporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let r = try ReplayRecorderTests.recorder(dir)
            try ReplayRecorderTests.stream(into: r, seconds: seconds)
            r.finish()
            let held = try #require(r.library.list().first)
            var s: [Int: [UInt8]] = [:]
            for i in held.manifest.segments.indices { s[i] = try r.library.segment(held, i) }
            segments = s
            player = ReplayPlayer(manifest: held.manifest, clock: clock)
            player.onVideo = { [unowned self] frame, ms in
                shown.append((SyntheticVideo.readFrameNumber(frame.image) ?? -1, ms, clock.now()))
            }
            player.onAudio = { [unowned self] _, _ in sounds += 1 }
            player.onEvent = { [unowned self] in events.append($0) }
        }

        func loadAll() { for (i, b) in segments { player.add(i, b) } }

        func run(for d: Duration) {
            let end = clock.now() + d
            while clock.now() < end {
                player.tick()
                clock.advance(by: .milliseconds(5))
            }
        }
    }

    @Test func framesComeInOrderAtTheirTimesAndTheEndIsSaid() throws {
        let run = try Run(seconds: 4)
        run.loadAll()
        let start = run.clock.now()
        run.player.play()
        run.run(for: .seconds(5))
        #expect(run.shown.map(\.number) == Array(0..<120))
        // Each at its time (the clock steps 5 ms).
        for s in run.shown { #expect(abs((s.at - start).seconds * 1000 - Double(s.ms)) <= 6, "\(s)") }
        #expect(run.sounds >= 195)
        #expect(run.events.first == .firstFrame(afterMs: 0, atMs: 0) && run.events.last == .ended)
    }

    @Test func aSeekShowsTheFrameAskedForAtOnce() throws {
        let run = try Run(seconds: 6)
        run.loadAll()
        run.player.play()
        run.run(for: .milliseconds(500))
        run.shown = []
        run.player.seek(to: 3500)
        run.player.tick()
        // Frame 105 was captured at 3.5 s: it (or the one just after) is shown in the same tick, nothing before it.
        let first = try #require(run.shown.first)
        #expect((105...106).contains(first.number), "\(first)")
        #expect(run.events.contains { if case let .firstFrame(after, at) = $0 { after == 0 && at >= 3500 } else { false } })
        run.run(for: .milliseconds(1000))
        #expect(run.shown.map(\.number) == Array(first.number..<(first.number + run.shown.count)))
        // Back, before the first keyframe segment boundary.
        run.player.seek(to: 100)
        run.shown = []
        run.player.tick()
        #expect(run.shown.first?.number == 3)
    }

    @Test func pauseHoldsSpeedScalesAndAMissingSegmentStalls() throws {
        let run = try Run(seconds: 6)
        for (i, b) in run.segments where i != 1 { run.player.add(i, b) }
        run.player.play()
        run.run(for: .milliseconds(1000))
        let before = run.shown.count
        run.player.pause()
        run.run(for: .seconds(2))
        #expect(run.shown.count == before)
        run.player.play()
        // Segment 1 (from 2 s) is missing: the position holds at its start and the player says so.
        run.run(for: .seconds(3))
        #expect(run.events.contains(.waiting(1)) && run.player.wanted.first == 1)
        #expect((1990...2010).contains(run.player.positionMs), "\(run.player.positionMs)")
        let stalled = run.shown.count
        run.player.add(1, run.segments[1]!)
        run.run(for: .milliseconds(100))
        #expect(run.shown.count > stalled && run.shown.map(\.number) == Array(0..<run.shown.count))
        // Twice the speed: a second of the replay in half a second.
        run.player.setSpeed(2)
        let at = run.shown.count
        run.run(for: .milliseconds(500))
        #expect((29...31).contains(run.shown.count - at), "\(run.shown.count - at)")
    }
}
