import LVBCore
import LVBMedia

/// What an outside source on a co-host's stage should encode: the stream's
/// bitrate target and keyframe interval, as the node's own encoder would.
public struct OutsideStageSettings: Sendable, Equatable {
    public var kbps: Int
    public var gopSeconds: Double
    public var fps: Int
    public var width: Int
    public var height: Int
    /// Audio channels the room's receivers decode (mono).
    public var channels: Int

    public init(kbps: Int, gopSeconds: Double, fps: Int, width: Int, height: Int, channels: Int) {
        self.kbps = kbps
        self.gopSeconds = gopSeconds
        self.fps = fps
        self.width = width
        self.height = height
        self.channels = channels
    }
}

/// After each frame from outside: what the stream's subscribers ask of the
/// source (a keyframe on the next frame; the rate control's target).
public struct OutsideStageFeedback: Sendable, Equatable {
    public var keyframe: Bool
    public var kbps: Int
}

/// A co-host's stage fed from outside (the studio page's camera and
/// microphone, already encoded): the frames enter the stream this node
/// publishes to its host as its own encoder's would — same SSRCs, numbering
/// continued (`MediaOrigin.beginSource`), send history, NACK repair and rate
/// control unchanged. While it feeds the stage the node's own sources rest;
/// when it stops they resume.
extension PublishedStream {
    /// Starts taking the stage from outside; refused unless this node is a
    /// co-host on stage. Again while running: the same settings.
    public func startOutsideStage() throws(RoomActionError) -> OutsideStageSettings {
        if case .host = plan.part { throw .refused("the host's picture is its own sources; a page camera goes on stage as a co-host") }
        guard let origin = media.publisher, plan.stageFromOutside, let setup = plan.publish else {
            throw .refused("not on stage: ask the host to go on stage first")
        }
        if outsideStage == nil {
            let publisher: EncodedFramePublisher
            do {
                publisher = try EncodedFramePublisher(videoSSRC: origin.videoSSRC, audioSSRC: origin.audioSSRC,
                                                      maxPacketSize: node.core.maxPayload, clock: node.clock, random: node.random)
            } catch {
                throw .refused("\(error)")
            }
            pump?.stop()
            pump = nil
            origin.beginSource()
            outsideStage = publisher
        }
        return OutsideStageSettings(kbps: origin.targetVideoKbps, gopSeconds: setup.gopSeconds, fps: setup.fps,
                                    width: setup.width, height: setup.height, channels: AudioReceiverConfig().channels)
    }

    /// Stops taking the stage from outside; the node's own sources, if any, take it back.
    public func stopOutsideStage() {
        guard outsideStage != nil else { return }
        outsideStage = nil
        guard let origin = media.publisher, let setup = plan.publish, !setup.isEmpty else { return }
        origin.beginSource()
        startOwnSources(setup, into: origin)
    }

    /// One VP8 frame from outside into the stage stream (on the node's loop).
    /// Throws on a frame that is not what it says; nil when no outside feed runs.
    public func publishOutsideVideo(_ frame: [UInt8], keyframe: Bool, captureMicros: UInt64) throws(MediaError) -> OutsideStageFeedback? {
        guard let outsideStage, let origin = media.publisher else { return nil }
        let encoded = try outsideStage.video(frame, keyframe: keyframe, captureMicros: captureMicros)
        origin.publishVideo(encoded)
        return OutsideStageFeedback(keyframe: origin.takeKeyframeRequest(), kbps: origin.targetVideoKbps)
    }

    /// One 20 ms Opus packet from outside into the stage stream (on the node's loop).
    @discardableResult
    public func publishOutsideAudio(_ packet: [UInt8], captureMicros: UInt64) throws(MediaError) -> Bool {
        guard let outsideStage, let origin = media.publisher else { return false }
        origin.publishAudio(try outsideStage.audio(packet, captureMicros: captureMicros))
        return true
    }
}
