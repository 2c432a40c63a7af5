import LVBCore
import LVBMedia
import LVBRoom
import LVBWeb

/// A co-host's studio page on stage with its own camera and microphone
/// (`--web`): the page encodes (WebCodecs VP8 and Opus) and sends frames;
/// they go into the stream this node publishes to its host as they are
/// (`LiveNode.startOutsideStage`). One page at a time owns the camera; it
/// hears the stage's settings (`stage_camera`), keyframe requests
/// (`stage_keyframe`) and the rate control's target (`stage_bitrate`). The
/// node's own stage sources rest while it streams. Runs on the node's loop.
final class StudioStage {
    private let server: StudioServer
    private let live: UDPLiveNode
    private let out: Output
    /// The page whose camera is on stage.
    private var owner: StudioPageID?
    /// The bitrate that page was last told.
    private var toldKbps = 0

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
        do { settings = try node.publishing.startOutsideStage() } catch {
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

    private func stop(_ page: StudioPageID) {
        guard owner == page else { return }
        live.node?.publishing.stopOutsideStage()
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
        out.emit(line, human: on ? "your page's camera and microphone are on stage" : "your page's camera is off stage", kind: "stage")
    }

    /// A frame from `page`: nil when it went on stage, else why not.
    private func take(_ frame: StudioMediaFrame, from page: StudioPageID) -> String? {
        guard let node = live.node else { return "the node is stopping" }
        guard let owner else { return "this page's camera is not on stage (send {\"cmd\":\"camera\",\"on\":true} once on stage)" }
        guard owner == page else { return "another page's camera is on stage" }
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
