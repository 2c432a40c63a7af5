import LVBCore
import LVBCrypto
import LVBGossip
import LVBMedia
import LVBTransport

/// The stream this node publishes, as a role of its node: a host's from
/// the start (its encoders feeding its `MediaOrigin`, its guests mixed in by
/// its `StageMixer`), a co-host's while it is on stage (its own encoders, or
/// frames from outside: `startOutsideStage`). It performs link-mic's media
/// side as the room's signalling decides it (`NodeEvent.stage`): on the host
/// a guest's stream goes into the mix and gets a return stream (the mix
/// without that guest); on a guest its stage stream starts and stops.
public final class PublishedStream: LiveRole {
    /// The encoders of the stream this node publishes: a host's from the
    /// start, a co-host's while it is on stage.
    public internal(set) var pump: EncodePump?
    /// A co-host's stage fed from outside (the studio page's camera) in place of `pump`.
    public internal(set) var outsideStage: EncodedFramePublisher?
    /// The outside feed stopped because the node left the stage (or the room).
    public var onOutsideStageEnded: (() -> Void)?
    /// A host's link-mic mixer (nil: this node does not publish from the start).
    public let mixer: StageMixer?
    /// Taps on the pictures and sound this node publishes, as they go to
    /// its subscribers (a host's page, its replay).
    private var videoTaps: [(EncodedMediaFrame) -> Void] = []
    private var audioTaps: [(RTPPacket) -> Void] = []

    unowned let node: LiveNode
    var media: NodeMedia { node.media }
    var plan: NodePlan { node.plan }
    /// Host: each co-host's key in the mixer (the video SSRC of the stream returned to it).
    private var stageKeys: [NodeID: UInt32] = [:]

    /// A host's publishing (encoders and mixer ready; `start` starts them), or
    /// a viewer's, idle until it goes on stage.
    init(node: LiveNode) throws(MediaError) {
        self.node = node
        let plan = node.plan
        if case .host = plan.part, let setup = plan.publish, !setup.isEmpty {
            let origin = node.media.publish(maxVideoKbps: setup.bitrateKbps, useGOPCache: setup.gopCache)
            let pump = try node.makePump(setup, for: origin)
            let mixer = StageMixer(width: setup.width, height: setup.height)
            pump.mixer = mixer
            self.pump = pump
            self.mixer = mixer
            wire(pump, to: origin)
        } else {
            mixer = nil
        }
    }

    public func handle(_ event: NodeEvent) {
        switch event {
        case .stage(let action): stage(action)
        case .room(.feature(let pk as PKOutput)):
            switch pk {
            case let .started(room, other, _, _): pkStarted(with: other, of: room)
            case .ended: pkEnded()
            default: break
            }
        default: break
        }
    }

    public func stop() { pump?.stop() }

    /// Adds a tap on what this node publishes (called on the node's loop).
    public func tap(video: ((EncodedMediaFrame) -> Void)?, audio: ((RTPPacket) -> Void)? = nil) {
        if let video { videoTaps.append(video) }
        if let audio { audioTaps.append(audio) }
    }

    /// A co-host's own encoders, started into its stage stream.
    func startOwnSources(_ setup: PublisherSetup, into origin: MediaOrigin<NodeID>) {
        guard let guestPump = try? node.makePump(setup, for: origin) else { return }
        wire(guestPump, to: origin)
        pump = guestPump
        guestPump.start()
    }

    /// Hands the encoders' output to the stream's origin on the node's loop.
    private func wire(_ pump: EncodePump, to origin: MediaOrigin<NodeID>) {
        let hop = node.hop
        pump.onVideo = { [weak self] frame in
            hop {
                // A frame of a pump already stopped (the stage taken over from outside) stays out of the stream.
                guard let self, self.pump === pump else { return }
                origin.publishVideo(frame)
                for tap in self.videoTaps { tap(frame) }
                pump.control.update(keyframe: origin.takeKeyframeRequest(), kbps: origin.targetVideoKbps)
            }
        }
        pump.onAudio = { [weak self] packet in
            hop {
                guard let self, self.pump === pump else { return }
                origin.publishAudio(packet)
                for tap in self.audioTaps { tap(packet) }
            }
        }
        pump.onEnded = { [weak self] why in hop { self?.node.report(.mediaEnded(why)) } }
        pump.onReturnVideo = { [weak self] guest, frame in
            hop {
                guard let self, let ret = self.returnStream(guest) else { return }
                ret.publishVideo(frame)
                pump.returnControl(guest).update(keyframe: ret.takeKeyframeRequest(), kbps: ret.targetVideoKbps)
            }
        }
        pump.onReturnAudio = { [weak self] guest, packet in hop { self?.returnStream(guest)?.publishAudio(packet) } }
    }

    private func returnStream(_ key: UInt32) -> MediaOrigin<NodeID>? {
        guard let guest = stageKeys.first(where: { $0.value == key })?.key else { return nil }
        return media.returns[guest]
    }

    /// The media side of link-mic.
    private func stage(_ action: LinkMicAction) {
        switch action {
        case .stageOn(let guest):
            // A host that publishes nothing has nothing to mix into: signalling only.
            guard let mixer, stageKeys[guest] == nil, let setup = plan.publish else { return }
            let ret = media.openReturn(for: guest, maxVideoKbps: EncodePump.returnKbps(setup.bitrateKbps))
            stageKeys[guest] = ret.videoSSRC
            mixer.add(ret.videoSSRC, audioSSRC: ret.audioSSRC)
            mix(guest, into: mixer, as: ret.videoSSRC)
        case .stageOff(let guest, _):
            guard let key = stageKeys.removeValue(forKey: guest) else { return }
            mixer?.remove(key)
            pump?.forgetReturn(key)
            media.closeReturn(for: guest)
            media.stopReceiving(from: guest)
        case .startPublishing:
            guard pump == nil, media.publisher == nil, let setup = plan.publish else { return }
            // Without sources of its own, a co-host publishes only what comes from outside.
            guard !setup.isEmpty || plan.stageFromOutside else { return }
            let host = node.room.host
            let origin = media.publish(maxVideoKbps: setup.bitrateKbps, useGOPCache: setup.gopCache, audience: host)
            if !setup.isEmpty { startOwnSources(setup, into: origin) }
            origin.subscribe(host)
            media.receivers[host]?.expectNewStream()
        case .stopPublishing:
            pump?.stop()
            pump = nil
            if outsideStage != nil {
                outsideStage = nil
                onOutsideStageEnded?()
            }
            media.stopPublishing()
            media.receivers[node.room.host]?.expectNewStream()
        case .send, .output:
            break
        }
    }

    /// The other host of the PK that runs, if any.
    public private(set) var pkPartner: NodeID?

    /// A PK began: the other host goes into the right half of the mix, and
    /// gets this side back (its return stream) as a co-host gets the mix
    /// without itself. Its own stream comes in the same way from its side.
    private func pkStarted(with other: NodeID, of room: RoomID) {
        if let old = pkPartner, old != other { pkEnded() }
        // A host that publishes nothing has nothing to mix into: signalling only.
        guard let mixer, stageKeys[other] == nil, let setup = plan.publish else { return }
        pkPartner = other
        // The other room's audience watches this half: the main stream's rate, halved with the picture.
        let ret = media.openReturn(for: other, maxVideoKbps: EncodePump.returnKbps(setup.bitrateKbps))
        stageKeys[other] = ret.videoSSRC
        mixer.addPartner(ret.videoSSRC, audioSSRC: ret.audioSSRC)
        mix(other, into: mixer, as: ret.videoSSRC, scope: room.bytes)
    }

    private func pkEnded() {
        guard let other = pkPartner else { return }
        pkPartner = nil
        stage(.stageOff(other, .hostHungUp))
    }

    /// Decodes `peer`'s stream into the mixer under `key` (`scope`: the
    /// room it belongs to when not this one, the other host's in a PK).
    private func mix(_ peer: NodeID, into mixer: StageMixer, as key: UInt32, scope: [UInt8]? = nil) {
        guard let receiver = try? media.receive(from: peer, scope: scope) else { return }
        receiver.onVideo = { mixer.video(key, $0) }
        receiver.onAudio = { mixer.audio(key, $0) }
        receiver.onReceived = { [unowned node] in node.onWakeupChanged?() }
    }

    /// Host: how guests are placed in the mixed picture; every change starts with a keyframe.
    public func setLayout(_ layout: StageLayout) throws(RoomActionError) {
        guard case .host = plan.part else { throw .hostOnly }
        guard let mixer else { throw .refused("this host publishes no picture to lay out") }
        mixer.setLayout(layout)
    }

    /// Host: a JPEG thumbnail of the published picture from a keyframe at
    /// most every `interval`, made on the encoder's thread and handed to
    /// `deliver` on the node's loop (a room list shows it). Call before `start`.
    public func makeThumbnails(every interval: Duration, _ deliver: @escaping ([UInt8]) -> Void) {
        guard case .host = plan.part, let pump else { return }
        let hop = node.hop
        pump.thumbnailInterval = interval
        pump.onThumbnail = { jpeg in hop { deliver(jpeg) } }
    }
}
