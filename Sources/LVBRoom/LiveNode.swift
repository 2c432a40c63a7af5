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
    public let room: RoomNode
    public let media: NodeMedia
    public let pump: EncodePump?
    public let sinks: MediaSinks?
    /// Everything the node reports, in order (on the node's loop).
    public var onOutput: ((NodeOutput) -> Void)?
    /// A packet arrived that may have moved `nextWakeup` earlier.
    public var onWakeupChanged: (() -> Void)?
    /// Taps on the host's stream as it leaves the receive pipeline (after the
    /// sinks): decoded pictures and sound, for a UI or a test.
    public var onHostVideo: ((ReceivedVideoFrame) -> Void)?
    public var onHostAudio: ((ReceivedAudioFrame) -> Void)?

    /// Runs a closure on the node's loop (encoder threads hand frames over with it).
    private let hop: (@escaping () -> Void) -> Void
    /// Roles from layers above (a host's announcer to a rendezvous), registered with `attach`.
    public private(set) var roles: [AttachedRole] = []

    /// Builds the node's parts; a media source, codec or output that cannot
    /// be set up throws here, before anything is sent.
    public init(plan: NodePlan, core: TransportCore, clock: Clock, random: RandomSource,
                scheduler: EncodeScheduler, hop: @escaping (@escaping () -> Void) -> Void) throws(MediaError) {
        self.plan = plan
        self.core = core
        self.hop = hop
        switch plan.part {
        case let .host(policy, info):
            room = RoomNode(hosting: policy, core: core, clock: clock, random: random, info: info)
        case let .join(roomID, host, proof, _):
            room = RoomNode(joining: roomID, host: host, proof: proof, core: core, clock: clock, random: random)
        }
        room.profile = plan.profile
        media = NodeMedia(core: core, clock: clock, random: random)
        room.media = media
        sinks = try plan.receive.map { options throws(MediaError) in try MediaSinks(options: options, clock: clock) }
        if let setup = plan.publish, !setup.isEmpty {
            let origin = media.publish(maxVideoKbps: setup.bitrateKbps, useGOPCache: setup.gopCache)
            pump = try EncodePump(setup: setup, videoSSRC: origin.videoSSRC, audioSSRC: origin.audioSSRC,
                                  maxPacketSize: core.maxPayload, clock: clock, random: random, scheduler: scheduler)
        } else {
            pump = nil
        }
        wire()
    }

    private func wire() {
        room.onOutput = { [unowned self] output in
            if case .admitted = output { receiveHostStream() }
            onOutput?(.room(output))
        }
        sinks?.onEvent = { [unowned self] event in onOutput?(.sink(event)) }
        if let pump, let origin = media.publisher {
            let hop = self.hop
            pump.onVideo = { frame in
                hop {
                    origin.publishVideo(frame)
                    pump.control.update(keyframe: origin.takeKeyframeRequest(), kbps: origin.targetVideoKbps)
                }
            }
            pump.onAudio = { packet in hop { origin.publishAudio(packet) } }
            pump.onEnded = { [weak self] why in hop { self?.onOutput?(.mediaEnded(why)) } }
        }
    }

    /// A viewer that takes media subscribes to the host's stream once admitted.
    private func receiveHostStream() {
        guard let sinks, !room.isHost, media.receivers[room.host] == nil,
              let receiver = try? media.receive(from: room.host) else { return }
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

    /// Adds a role from a layer above; it sees every transport event and tick from now on.
    public func attach(_ role: AttachedRole) { roles.append(role) }

    /// Feeds a transport event (call from the transport's `onEvent`).
    public func handle(_ event: TransportEvent) {
        onOutput?(.transport(event))
        room.handle(event)
        for role in roles { role.handle(event) }
    }

    /// Runs timers; call every `GossipConstants.tickInterval`.
    public func tick() {
        room.tick()
        for role in roles { role.tick() }
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
