import LVBCore
import LVBCrypto
import LVBGossip
import LVBMedia
import LVBTransport

/// The node driver: one node's roles over one transport and one clock —
/// its room part (`RoomNode`), the stream it publishes (an `EncodePump`
/// feeding its `MediaOrigin`) and the streams it receives (into its sinks).
/// Sans-IO on the node's loop: the owner feeds it transport events and ticks
/// and polls it when `nextWakeup` says; the same driver runs over UDP in the
/// binary (`UDPLiveNode`) and on the virtual network in tests.
public final class LiveNode {
    public let plan: NodePlan
    public let core: TransportCore
    /// The room this node is in (a viewer's changes when it switches rooms).
    public private(set) var room: RoomNode
    /// Rooms next to this one kept ready for a quick switch (viewers), by room id.
    public private(set) var preloads: [RoomID: RoomPreload] = [:]
    public let media: NodeMedia
    /// This node's place in the room's media tree (nil: no tree, `NodePlan.relaySlots`).
    public private(set) var tree: RelayTree?
    /// The encoders of the stream this node publishes: a host's from the
    /// start, a co-host's while it is on stage.
    public internal(set) var pump: EncodePump?
    /// A co-host's stage fed from outside (the studio page's camera) in place of `pump`.
    public internal(set) var outsideStage: EncodedFramePublisher?
    /// The outside feed stopped because the node left the stage (or the room).
    public var onOutsideStageEnded: (() -> Void)?
    public let sinks: MediaSinks?
    /// A host's link-mic mixer (nil: this node does not publish).
    public let mixer: StageMixer?
    /// Everything the node reports, in order (on the node's loop).
    public var onOutput: ((NodeOutput) -> Void)?
    /// A packet arrived that may have moved `nextWakeup` earlier.
    public var onWakeupChanged: (() -> Void)?
    /// Taps on the host's stream as it leaves the receive pipeline (after the
    /// sinks): decoded pictures and sound, for a UI or a test.
    public var onHostVideo: ((ReceivedVideoFrame) -> Void)?
    public var onHostAudio: ((ReceivedAudioFrame) -> Void)?
    /// A tap on the pictures this node publishes, as they go to its subscribers.
    public var onPublishedVideo: ((EncodedMediaFrame) -> Void)?

    /// Runs a closure on the node's loop (encoder threads hand frames over with it).
    private let hop: (@escaping () -> Void) -> Void
    /// Roles from layers above (a host's announcer to a rendezvous), registered with `attach`.
    public private(set) var roles: [AttachedRole] = []
    let clock: Clock
    let random: RandomSource
    private let scheduler: EncodeScheduler
    /// Host: each co-host's key in the mixer (the video SSRC of the stream returned to it).
    private var stageKeys: [NodeID: UInt32] = [:]
    /// Rooms this node switched away from, while their leave goes out (bounded by `until`).
    private var departing: [(room: RoomNode, until: Instant)] = []
    /// This process's instance id in every room it visits.
    private let instance: UInt64

    /// Builds the node's parts; a media source, codec or output that cannot
    /// be set up throws here, before anything is sent.
    public init(plan: NodePlan, core: TransportCore, clock: Clock, random: RandomSource,
                scheduler: EncodeScheduler, hop: @escaping (@escaping () -> Void) -> Void) throws(MediaError) {
        self.plan = plan
        self.core = core
        self.hop = hop
        self.clock = clock
        self.random = random
        self.scheduler = scheduler
        instance = random.uint64()
        switch plan.part {
        case let .host(policy, info):
            room = RoomNode(hosting: policy, core: core, clock: clock, random: random, info: info)
        case let .join(roomID, host, proof, _):
            room = RoomNode(joining: roomID, host: host, proof: proof, core: core, clock: clock, random: random, instance: instance)
        }
        room.profile = plan.profile
        media = NodeMedia(core: core, clock: clock, random: random)
        room.media = media
        sinks = try plan.receive.map { options throws(MediaError) in try MediaSinks(options: options, clock: clock) }
        if case .host = plan.part, let setup = plan.publish, !setup.isEmpty {
            let origin = media.publish(maxVideoKbps: setup.bitrateKbps, useGOPCache: setup.gopCache)
            let pump = try EncodePump(setup: setup, videoSSRC: origin.videoSSRC, audioSSRC: origin.audioSSRC,
                                      maxPacketSize: core.maxPayload, clock: clock, random: random, scheduler: scheduler)
            let mixer = StageMixer(width: setup.width, height: setup.height)
            pump.mixer = mixer
            self.pump = pump
            self.mixer = mixer
        } else {
            mixer = nil
        }
        // A host that publishes nothing has nothing to mix guests into.
        room.maxGuests = mixer == nil ? 0 : plan.maxGuests
        wire()
    }

    private func wire() {
        wireRoom()
        sinks?.onEvent = { [unowned self] event in onOutput?(.sink(event)) }
        if let pump, let origin = media.publisher { wire(pump, to: origin) }
    }

    private func wireRoom() {
        if let slots = plan.relaySlots {
            // A viewer does not know the stream's rate ahead: it allows what a rich stream would need.
            let kbps = Int(MediaConstants.retransmitBudgetFactor * Double(plan.publish.flatMap { $0.isEmpty ? nil : $0.bitrateKbps } ?? MediaConstants.relayAssumedKbps))
            let tree = plan.role == .host
                ? RelayTree.root(room: room, media: media, slots: slots, addresses: plan.addresses, clock: clock)
                : RelayTree.member(room: room, media: media, slots: slots, addresses: plan.addresses, repairKbps: kbps, clock: clock)
            room.onRelaySignal = { [unowned tree] peer, signal in tree.signal(signal, from: peer) }
            tree.onParentChanged = { [unowned self, unowned tree] parent in
                onOutput?(.treeParent(parent, depth: tree.depth, failovers: tree.failovers))
            }
            self.tree = tree
        }
        room.onOutput = { [unowned self] output in
            if case .admitted = output { receiveHostStream() }
            onOutput?(.room(output))
        }
        // Subscribing while asking to be admitted: the host's GOP follows its pass.
        room.onAdmissionRequested = { [unowned self] in receiveHostStream() }
        room.onStage = { [unowned self] action in stage(action) }
    }

    /// A co-host's own encoders, started into its stage stream.
    func startOwnSources(_ setup: PublisherSetup, into origin: MediaOrigin<NodeID>) {
        guard let guestPump = try? EncodePump(setup: setup, videoSSRC: origin.videoSSRC, audioSSRC: origin.audioSSRC,
                                              maxPacketSize: core.maxPayload, clock: clock, random: random,
                                              scheduler: scheduler) else { return }
        wire(guestPump, to: origin)
        pump = guestPump
        guestPump.start()
    }

    /// Hands the encoders' output to the stream's origin on the node's loop.
    private func wire(_ pump: EncodePump, to origin: MediaOrigin<NodeID>) {
        let hop = self.hop
        pump.onVideo = { [weak self] frame in
            hop {
                // A frame of a pump already stopped (the stage taken over from outside) stays out of the stream.
                guard let self, self.pump === pump else { return }
                origin.publishVideo(frame)
                self.onPublishedVideo?(frame)
                pump.control.update(keyframe: origin.takeKeyframeRequest(), kbps: origin.targetVideoKbps)
            }
        }
        pump.onAudio = { [weak self] packet in
            hop {
                guard let self, self.pump === pump else { return }
                origin.publishAudio(packet)
            }
        }
        pump.onEnded = { [weak self] why in hop { self?.onOutput?(.mediaEnded(why)) } }
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
            guard let receiver = try? media.receive(from: guest) else { return }
            let key = ret.videoSSRC
            receiver.onVideo = { mixer.video(key, $0) }
            receiver.onAudio = { mixer.audio(key, $0) }
            receiver.onReceived = { [unowned self] in onWakeupChanged?() }
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
            let origin = media.publish(maxVideoKbps: setup.bitrateKbps, useGOPCache: setup.gopCache, audience: room.host)
            if !setup.isEmpty { startOwnSources(setup, into: origin) }
            origin.subscribe(room.host)
            media.receivers[room.host]?.expectNewStream()
        case .stopPublishing:
            pump?.stop()
            pump = nil
            if outsideStage != nil {
                outsideStage = nil
                onOutsideStageEnded?()
            }
            media.stopPublishing()
            media.receivers[room.host]?.expectNewStream()
        case .send, .output:
            break
        }
    }

    /// Host: how guests are placed in the mixed picture; every change starts with a keyframe.
    public func setLayout(_ layout: StageLayout) throws(RoomActionError) {
        guard room.isHost else { throw .hostOnly }
        guard let mixer else { throw .refused("this host publishes no picture to lay out") }
        mixer.setLayout(layout)
    }

    /// A viewer that takes media subscribes to the host's stream with each
    /// admission request and once more when admitted if nothing came yet.
    private func receiveHostStream() {
        guard let sinks, !room.isHost else { return }
        if media.receivers[room.host] != nil { return media.subscribeAgainIfSilent(to: room.host) }
        guard let receiver = try? media.receive(from: room.host) else { return }
        receiver.onVideo = { [unowned self] in
            sinks.video($0)
            onHostVideo?($0)
        }
        receiver.onAudio = { [unowned self] in
            sinks.audio($0)
            onHostAudio?($0)
        }
        receiver.onPacket = { sinks.packet($0, $1) }
        receiver.onReceived = { [unowned self] in onWakeupChanged?() }
    }

    /// Opens the room (host) or dials the host (joiner), and starts the encoders.
    public func start() {
        room.start()
        if case let .join(_, host, _, addresses) = plan.part { core.connect(to: addresses, expecting: host) }
        pump?.start()
    }

    /// Host: a JPEG thumbnail of the published picture from a keyframe at
    /// most every `interval`, made on the encoder's thread and handed to
    /// `deliver` on the node's loop (a room list shows it). Call before `start`.
    public func makeThumbnails(every interval: Duration, _ deliver: @escaping ([UInt8]) -> Void) {
        guard room.isHost, let pump else { return }
        let hop = self.hop
        pump.thumbnailInterval = interval
        pump.onThumbnail = { jpeg in hop { deliver(jpeg) } }
    }

    /// Adds a role from a layer above; it sees every transport event and tick from now on.
    public func attach(_ role: AttachedRole) { roles.append(role) }

    /// Feeds a transport event (call from the transport's `onEvent`).
    public func handle(_ event: TransportEvent) {
        onOutput?(.transport(event))
        defer { for role in roles { role.handle(event) } }
        guard case let .message(_, channel, payload) = event else {
            room.handle(event)
            tree?.handle(event)
            for preload in preloads.values { preload.handle(event) }
            if case .gone = event { for d in departing { d.room.handle(event) } }
            return
        }
        // An acknowledgement of our leave may be for a room we switched away from.
        if channel == .room, !departing.isEmpty, case .leaveAck? = try? RoomMessage.parse(payload) {
            for d in departing { d.room.handle(event) }
        }
        if let preload = preloads.values.first(where: { $0.claims(event, current: room) }) {
            preload.handle(event)
        } else {
            room.handle(event)
        }
        tree?.handle(event)
    }

    /// Runs timers; call every `GossipConstants.tickInterval`.
    public func tick() {
        room.tick()
        tree?.tick()
        for (id, preload) in preloads {
            preload.tick()
            if preload.isReady, !preload.reported {
                preload.reported = true
                onOutput?(.preloaded(id))
            }
        }
        tickDeparting()
        for role in roles { role.tick() }
    }

    // MARK: Quick switch (viewers)

    /// Keeps `target`, hosted by `host`, ready for a quick switch: admitted and
    /// (when this node shows pictures) subscribed to its keyframes. The caller
    /// dials the host (directly or through an introduction).
    public func preload(_ target: RoomID, host: NodeID) {
        guard !room.isHost, target != room.room, preloads[target] == nil else { return }
        preloads[target] = RoomPreload(room: target, host: host, trickle: sinks != nil, core: core, clock: clock, random: random)
    }

    /// No longer keeps `target` ready; its session ends unless something else needs it.
    public func dropPreload(_ target: RoomID) {
        guard let preload = preloads.removeValue(forKey: target) else { return }
        if !isNeeded(preload.host) { core.disconnect(preload.host) }
    }

    /// Switches this viewer to room `target` hosted by `host`: leaves the room
    /// it is in (off stage first; the leave goes out as usual) and enters
    /// `target` — at once with the preloaded pass and picture if it was kept
    /// ready, else by asking its host (whose session the caller dials).
    /// Returns whether it was preloaded.
    @discardableResult
    public func switchRoom(to target: RoomID, host: NodeID) throws(RoomActionError) -> Bool {
        guard !room.isHost else { throw .refused("a host stays in its own room (/close ends it)") }
        guard target != room.room else { throw .refused("already in that room") }
        let now = clock.now()
        let old = room
        try? old.hangUpLinkMic(nil)
        if old.isAdmitted { old.leave() } else { old.shutdown() }
        old.onOutput = nil
        old.onStage = nil
        old.onAdmissionRequested = nil
        old.onRelaySignal = nil  // it pointed at the tree of the room we leave
        media.stopReceiving(from: old.host)
        departing.removeAll { $0.room.room == target }
        departing.append((old, now + RoomConstants.leaveWait))

        let preload = preloads.removeValue(forKey: target).flatMap { $0.host == host ? $0 : nil }
        let next = RoomNode(joining: target, host: host, proof: .none, core: core, clock: clock, random: random, instance: instance)
        next.profile = old.profile
        next.media = media
        room = next
        wireRoom()
        let keyframe = preload?.keyframe
        let preloaded = preload?.pass != nil && (keyframe != nil || sinks == nil)
        sinks?.restart(at: now, preloaded: preloaded)
        onOutput?(.switched(from: old.room, to: target, preloaded: preloaded))
        if let pass = preload?.pass, next.enter(with: pass) {
            // The receiver for the host's stream now exists: show the held picture at once.
            if let keyframe, let receiver = media.receivers[host] {
                for packet in keyframe { receiver.receiveRTP(packet[...]) }
            }
        } else {
            next.start()
        }
        return preloaded
    }

    /// Whether a session with `peer` serves the room we are in, a preload, or a room we are leaving.
    private func isNeeded(_ peer: NodeID) -> Bool {
        room.hears(peer) || room.state?.members.contains { $0.id == peer } == true || preloads.values.contains { $0.host == peer }
            || departing.contains { $0.room.hears(peer) }
    }

    /// Rooms we switched away from: their leave repeats until acknowledged or
    /// `leaveWait` passed; then the sessions only they needed end.
    private func tickDeparting() {
        guard !departing.isEmpty else { return }
        let now = clock.now()
        for d in departing { d.room.tick() }
        let done = departing.filter { $0.room.leaveSettled || now >= $0.until }.map(\.room)
        guard !done.isEmpty else { return }
        departing.removeAll { d in done.contains { $0 === d.room } }
        for old in done {
            old.shutdown()
            let peers = Set(Array(old.verified) + [old.host] + (old.state?.members.map(\.id) ?? []))
            for peer in peers where peer != core.nodeID && !isNeeded(peer) { core.disconnect(peer) }
        }
    }

    /// Runs the receive pipelines (decode what is due, send feedback).
    public func poll() { media.poll() }

    /// When `poll` next has work, if any.
    public var nextWakeup: Instant? { media.nextWakeup }

    /// How long the owner should wait before the next `poll`: until work is
    /// due, at least `pollFloor` and at most `pollCeiling`.
    public func pollWait(now: Instant) -> Duration {
        min(max((nextWakeup ?? now + RoomConstants.pollCeiling) - now, RoomConstants.pollFloor), RoomConstants.pollCeiling)
    }

    /// Whether work became due enough earlier than a poll scheduled for `due`
    /// to move that poll up (after a packet arrived).
    public func pollsSooner(than due: Instant?) -> Bool {
        guard let due, let next = nextWakeup else { return false }
        return next < due && due - next > RoomConstants.pollFloor
    }

    /// Announces that we leave: the leave event goes to the room by gossip and
    /// straight to every member we hold a session with, repeated until each
    /// acknowledges it. Keep ticking and handling events until `leaveSettled`.
    public func leave() {
        tree?.leave()
        room.leave()
        for role in roles { role.leave() }
    }

    /// True once every member we hold a session with acknowledged our leave
    /// (or we never were in the room).
    public var leaveSettled: Bool { room.leaveSettled }

    /// Stops the encoders and all room activity before the transport closes.
    public func stop() {
        pump?.stop()
        room.shutdown()
        for role in roles { role.stop() }
    }

    /// Finishes the output files; after the loop is done with the sinks.
    public func closeOutputs() { sinks?.close() }
}
