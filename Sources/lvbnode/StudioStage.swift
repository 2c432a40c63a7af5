import LVBCore
import LVBMedia
import LVBRoom
import LVBWeb

/// A page's own camera and microphone (`--web`; the page encodes with
/// WebCodecs VP8 and Opus and sends frames). A co-host's on stage: the
/// frames go into the stream this node publishes to its host as they are
/// (`LiveNode.startOutsideStage`). A host's ("Go live with my camera"):
/// they are decoded into its `PageFeed`, which its encoders take in place
/// of its own sources, so its guests, return streams, rate control and
/// replay go on as before. One page at a time owns the camera; it hears the
/// settings (`stage_camera`), keyframe requests (`stage_keyframe`) and a
/// co-host's rate control's target (`stage_bitrate`). The node's own
/// sources rest while it streams. Runs on the node's loop.
final class StudioStage {
    private let server: StudioServer
    private let live: UDPLiveNode
    private let out: Output
    /// The page whose camera is on stage.
    private var owner: StudioPageID?
    /// The bitrate that page was last told.
    private var toldKbps = 0
    /// A host's: the page's frames decoded into its feed.
    private var hostFeed: (feed: PageFeed, decoder: PageFeedDecoder)?

    init(server: StudioServer, live: UDPLiveNode, out: Output) {
        self.server = server
        self.live = live
        self.out = out
    }

    /// On the loop, once the node runs.
    func wire(_ node: LiveNode) {
        server.onCamera = { [unowned self] on, page in on ? start(page) : stop(page) }
        server.onPageMedia = { [unowned self] frame, page in take(frame, from: page) }
        server.onClosed = { [unowned self] page in stop(page) }
        node.publishing.onOutsideStageEnded = { [unowned self] in ended() }
    }

    private func start(_ page: StudioPageID) {
        guard let node = live.node else { return }
        if let owner, owner != page {
            return server.send(StudioServer.errorEvent("another page's camera is on stage; close it there first"), to: page)
        }
        let settings: OutsideStageSettings
        do {
            if node.room.isHost { settings = try startHostFeed(node) } else { settings = try node.publishing.startOutsideStage() }
        } catch {
            return server.send(StudioServer.errorEvent("camera: \(error)"), to: page)
        }
        let first = owner == nil
        owner = page
        toldKbps = settings.kbps
        var line = JSONLine(event: "stage_camera")
        line.add("on", true)
        line.add("kbps", settings.kbps)
        line.add("gop", settings.gopSeconds)
        line.add("fps", settings.fps)
        line.add("width", settings.width)
        line.add("height", settings.height)
        line.add("channels", settings.channels)
        // The page maps its capture times onto this clock (the node's wall clock, µs since the Unix epoch).
        line.add("clock_us", Int(EncodedFramePublisher.micros(SystemClock.shared.wallTime())))
        server.send(line.text, to: page)
        if first { announce(on: true) }
    }

    /// A host's page's camera takes the place of its own sources; the page
    /// encodes at twice the room's bitrate (the host encodes again).
    private func startHostFeed(_ node: LiveNode) throws -> OutsideStageSettings {
        guard let setup = node.plan.publish, let feed = setup.pageFeed else {
            throw RoomActionError.refused("this host publishes no picture or sound (--video none --audio none): start it with --video page --audio page")
        }
        if hostFeed == nil {
            hostFeed = (feed, try PageFeedDecoder(feed: feed))
            feed.start()
        }
        return OutsideStageSettings(kbps: min(setup.bitrateKbps * 2, 8000), gopSeconds: setup.gopSeconds, fps: setup.fps,
                                    width: setup.width, height: setup.height, channels: 1)
    }

    private func stop(_ page: StudioPageID) {
        guard owner == page else { return }
        if let (feed, _) = hostFeed {
            feed.stop()
            hostFeed = nil
        } else {
            live.node?.publishing.stopOutsideStage()
        }
        ended()
    }

    /// The camera is off stage: its page hears it (if still open), the user too.
    private func ended() {
        guard let page = owner else { return }
        owner = nil
        var line = JSONLine(event: "stage_camera")
        line.add("on", false)
        server.send(line.text, to: page)
        announce(on: false)
    }

    private func announce(on: Bool) {
        var line = JSONLine(event: "page_camera")
        line.add("on", on)
        let host = live.node?.room.isHost == true
        line.add("host", host)
        let human = host ? (on ? "your page's camera and microphone are live in place of --video/--audio" : "your page's camera is off; back to --video/--audio")
            : (on ? "your page's camera and microphone are on stage" : "your page's camera is off stage")
        out.emit(line, human: human, kind: "stage")
    }

    /// A frame from `page`: nil when it went on stage, else why not.
    private func take(_ frame: StudioMediaFrame, from page: StudioPageID) -> String? {
        guard let node = live.node else { return "the node is stopping" }
        guard let owner else { return "this page's camera is not on stage (send {\"cmd\":\"camera\",\"on\":true} once on stage)" }
        guard owner == page else { return "another page's camera is on stage" }
        if let (_, decoder) = hostFeed {
            do {
                switch frame.kind {
                case .video:
                    if try decoder.video(frame.payload, keyframe: frame.isKeyframe) { server.send(JSONLine(event: "stage_keyframe").text, to: page) }
                case .audio:
                    try decoder.audio(frame.payload)
                }
            } catch {
                server.send(JSONLine(event: "stage_keyframe").text, to: page)
                return "\(error)"
            }
            return nil
        }
        do {
            switch frame.kind {
            case .video:
                guard let feedback = try node.publishing.publishOutsideVideo(frame.payload, keyframe: frame.isKeyframe,
                                                                  captureMicros: frame.captureMicros) else { return "not on stage" }
                if feedback.keyframe { server.send(JSONLine(event: "stage_keyframe").text, to: page) }
                // Changes under 5 % are not worth a new encoder configuration.
                if abs(feedback.kbps - toldKbps) * 20 >= toldKbps {
                    toldKbps = feedback.kbps
                    var line = JSONLine(event: "stage_bitrate")
                    line.add("kbps", feedback.kbps)
                    server.send(line.text, to: page)
                }
            case .audio:
                guard try node.publishing.publishOutsideAudio(frame.payload, captureMicros: frame.captureMicros) else { return "not on stage" }
            }
        } catch {
            return "\(error)"
        }
        return nil
    }
}
