import LVBCore
import LVBCrypto
import LVBMedia
import LVBRoom
import LVBTransport
import NIOCore

/// What a node does with media: host streams (`HostMediaSetup`), viewer
/// plays (`ViewerMediaOptions`), or nothing (`--no-media`).
enum MediaPlan {
    case none
    case host(HostMediaSetup)
    case viewer(ViewerMediaOptions)
}

/// The running media parts of one node: wires them into the room on the
/// node's loop, runs their timers, prints `stats` lines, and closes files at exit.
final class MediaRuntime: @unchecked Sendable {
    let plan: MediaPlan
    let out: Output
    let startedAt: Instant
    private var sinks: ViewerSinks?
    private var pump: MediaPump?
    private(set) var host: HostMedia?
    private(set) var viewer: ViewerMedia?
    /// Set on the node's loop by `stop`; the poller checks it there.
    private var stopped = false
    private var pollTask: Scheduled<Void>?
    private var pollDue: Instant?
    private var statsTask: RepeatedTask?
    private var reporter: MediaStatsReporter?

    /// Opens files and checks paths (a mistake fails here, before the node starts).
    init(plan: MediaPlan, out: Output, startedAt: Instant) throws(MediaError) {
        self.plan = plan
        self.out = out
        self.startedAt = startedAt
        if case .viewer(let options) = plan {
            sinks = try ViewerSinks(options: options, out: out, clock: SystemClock.shared, startedAt: startedAt)
        }
    }

    /// Attaches media to the room; runs on the node's loop.
    func attach(to room: RoomNode, core: TransportCore) throws(MediaError) {
        let random = SodiumRandom.shared
        switch plan {
        case .none:
            break
        case .host(let setup):
            let media = HostMedia(core: core, clock: SystemClock.shared, videoSSRC: UInt32(truncatingIfNeeded: random.uint64()),
                                  audioSSRC: UInt32(truncatingIfNeeded: random.uint64()), maxVideoKbps: setup.bitrate,
                                  useGOPCache: setup.gopCache)
            room.media = media
            host = media
        case .viewer:
            let media = try ViewerMedia(core: core, clock: SystemClock.shared, ssrc: UInt32(truncatingIfNeeded: random.uint64()))
            if let sinks {
                media.onVideo = { sinks.video($0) }
                media.onAudio = { sinks.audio($0) }
                media.onPacket = { sinks.packet($0, $1) }
            }
            room.media = media
            viewer = media
        }
    }

    /// Starts the encoder threads (host) or the receive poller (viewer), and stats lines.
    func start(node: UDPNode) throws(MediaError) {
        if case .host(let setup) = plan, let host {
            let pump = MediaPump { [out] why in
                var line = JSONLine(event: "media_ended")
                line.add("reason", why)
                out.emit(line, human: "media input stopped: \(why)", kind: "media")
            }
            try pump.start(setup: setup, node: node, media: host, random: SodiumRandom.shared)
            self.pump = pump
        }
        if let viewer {
            // Frames are released on packet arrival too; this catches the
            // jitter buffer's timed releases, audio's steady 20 ms and NACK
            // retries, waking when the pipelines say work is due.
            schedulePoll(viewer, on: node.eventLoop)
            pollSoonerIfDue(viewer, on: node.eventLoop)
        }
        let reporter = MediaStatsReporter(runtime: self, sinks: sinks, pump: pump)
        self.reporter = reporter
        if out.json, !(host == nil && viewer == nil) {
            statsTask = node.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(2), delay: .seconds(2)) { [out] _ in
                out.emit(reporter.line(final: false), human: "", kind: "stats")
            }
        }
    }

    /// Polls `viewer` when its next work is due (at least every 100 ms, at
    /// most every millisecond), until `stop`.
    private func schedulePoll(_ viewer: ViewerMedia, on loop: EventLoop) {
        let now = SystemClock.shared.now()
        let wait = min(max(((viewer.nextWakeup ?? now + .milliseconds(100)) - now).nanosecondsClamped, 1_000_000), 100_000_000)
        pollDue = now + .nanoseconds(wait)
        pollTask = loop.scheduleTask(in: .nanoseconds(wait)) { [weak self] in
            guard let self, !self.stopped else { return }
            viewer.poll()
            self.schedulePoll(viewer, on: loop)
        }
    }

    /// A packet that brings the viewer's next work closer moves the poll up.
    private func pollSoonerIfDue(_ viewer: ViewerMedia, on loop: EventLoop) {
        viewer.onReceived = { [weak self] in
            guard let self, !self.stopped, let due = self.pollDue, let next = viewer.nextWakeup,
                  next < due, due - next > .milliseconds(1) else { return }
            self.pollTask?.cancel()
            self.schedulePoll(viewer, on: loop)
        }
    }

    /// The media part of the exit line (on the node's loop), nil without media.
    func summary() -> String? { reporter?.json(final: true) }

    func stop(node: UDPNode) async {
        _ = try? await node.submit { [self] _ in stopped = true }
        statsTask?.cancel()
        await pump?.stop()
    }

    /// Closes output files; call after the loop is done with the sinks.
    func closeFiles() { sinks?.close() }
}
