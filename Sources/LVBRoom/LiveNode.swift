import LVBCore
import LVBCrypto
import LVBGossip
import LVBMedia
import LVBTransport

/// The node driver: one node's roles over one transport and one clock. It
/// owns the node's services — the room it is in (`RoomNode`), the media
/// router (`NodeMedia`) and the transport — and is the one dispatcher: every
/// transport event, every report of the room and every tick goes to each
/// registered role (`LiveRole`) in turn, as a typed `NodeEvent`; roles
/// report back through it (`onOutput`). Registered here: the media router,
/// the media tree, the stream this node publishes, the host's stream it
/// watches and the rooms it keeps ready for a switch; layers above register
/// theirs (a rendezvous's announcer) with `register`. Sans-IO on the node's
/// loop: the owner feeds it transport events and ticks and polls it when
/// `nextWakeup` says; the same driver runs over UDP in the binary
/// (`UDPLiveNode`) and on the virtual network in tests.
public final class LiveNode {
    public let plan: NodePlan
    public let core: TransportCore
    /// The room this node is in (a viewer's changes when it switches rooms).
    public internal(set) var room: RoomNode
    public let media: NodeMedia
    /// This node's place in the room's media tree (nil: no tree, `NodePlan.relaySlots`).
    public internal(set) var tree: RelayTree?
    /// The stream this node publishes (a host's; a co-host's on stage).
    public private(set) var publishing: PublishedStream!
    /// The host's stream as this node watches it (a viewer's).
    public private(set) var viewing: HostStreamViewer!
    /// Rooms next to this one kept ready for a quick switch, and rooms left behind.
    private(set) var elsewhere: RoomPreloads!
    /// Everything the node reports, in order (on the node's loop).
    public var onOutput: ((NodeOutput) -> Void)?
    /// A packet arrived that may have moved `nextWakeup` earlier.
    public var onWakeupChanged: (() -> Void)?
    /// The registered roles, in the order they see events.
    public private(set) var roles: [LiveRole] = []

    /// Runs a closure on the node's loop (encoder threads hand frames over with it).
    let hop: (@escaping () -> Void) -> Void
    let clock: Clock
    let random: RandomSource
    private let scheduler: EncodeScheduler
    private var lastCollect: Instant?
    /// This process's instance id in every room it visits.
    let instance: UInt64

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
        media.sealed = plan.sealed
        media.lie = plan.lie.map { RelayLie(mode: $0, identity: core.identity, excuses: plan.lieExcuses, after: plan.lieAfter) }
        media.roomScope = { [room] in room.room == RoomNode.anyRoom ? nil : room.room.bytes }  // until `wireRoom`
        let sinks = try plan.receive.map { options throws(MediaError) in try MediaSinks(options: options, clock: clock) }
        publishing = try PublishedStream(node: self)
        viewing = HostStreamViewer(node: self, sinks: sinks)
        elsewhere = RoomPreloads(node: self)
        // A host that publishes nothing has nothing to mix guests into.
        room.maxGuests = publishing.mixer == nil ? 0 : plan.maxGuests
        register(media)
        register(publishing)
        register(viewing)
        register(elsewhere)
        wireRoom()
    }

    /// Adds a role; it sees every event and tick from now on, after the roles registered before it.
    public func register(_ role: LiveRole) { roles.append(role) }

    /// The registered role of type `T`, if any.
    public func role<T: LiveRole>(_ type: T.Type) -> T? { roles.lazy.compactMap { $0 as? T }.first }

    /// Hands a report of a role to the owner.
    func report(_ output: NodeOutput) { onOutput?(output) }

    private func dispatch(_ event: NodeEvent) {
        for role in roles { role.handle(event) }
    }

    /// The encoders of a stream this node publishes, into `origin`.
    func makePump(_ setup: PublisherSetup, for origin: MediaOrigin<NodeID>) throws(MediaError) -> EncodePump {
        try EncodePump(setup: setup, videoSSRC: origin.videoSSRC, audioSSRC: origin.audioSSRC,
                       maxPacketSize: core.maxPayload, clock: clock, random: random, scheduler: scheduler)
    }

    /// Connects the room the node is in to the roles, and gives it a media tree.
    func wireRoom() {
        if let slots = plan.relaySlots {
            // A viewer does not know the stream's rate ahead: it allows what a rich stream would need.
            let kbps = Int(MediaConstants.retransmitBudgetFactor * Double(plan.publish.flatMap { $0.isEmpty ? nil : $0.bitrateKbps } ?? MediaConstants.relayAssumedKbps))
            let tree = plan.role == .host
                ? RelayTree.root(room: room, media: media, slots: slots, addresses: plan.addresses, clock: clock)
                : RelayTree.member(room: room, media: media, slots: slots, addresses: plan.addresses, repairKbps: kbps, clock: clock)
            tree.onParentChanged = { [unowned self, unowned tree] parent in
                report(.treeParent(parent, depth: tree.depth, failovers: tree.failovers))
            }
            tree.onLiar = { [unowned self] peer, why in report(.liar(peer, why, media.cost(of: peer))) }
            if let old = self.tree { roles.removeAll { $0 === old } }
            self.tree = tree
            register(tree)
        }
        room.onOutput = { [unowned self] output in
            dispatch(.room(output))
            report(.room(output))
        }
        room.onStage = { [unowned self] action in dispatch(.stage(action)) }
        room.onSignal = { [unowned self] signal in
            switch signal {
            case .admissionRequested: dispatch(.admissionRequested)
            case let .relay(peer, signal): dispatch(.relaySignal(peer, signal))
            case let .positions(peer, events): dispatch(.positions(peer, events))
            }
        }
        media.roomScope = { [unowned self] in room.room == RoomNode.anyRoom ? nil : room.room.bytes }
        media.onRefused = { [unowned self] origin, feeder, failure in dispatch(.mediaRefused(origin: origin, from: feeder, failure)) }
        room.lastMedia = { [unowned media] peer in media.lastHeard(from: peer) }
    }

    /// Opens the room (host) or dials the host (joiner), and starts the encoders.
    public func start() {
        room.start()
        if case let .join(_, host, _, addresses) = plan.part { core.connect(to: addresses, expecting: host) }
        publishing.pump?.start()
    }

    /// Feeds a transport event (call from the transport's `onEvent`): the
    /// room first (unless a role claims the message), then every role; media
    /// from a member of the room goes on to the roles as `.media`.
    public func handle(_ event: TransportEvent) {
        report(.transport(event))
        let claimed = roles.contains { $0.claims(event) }
        if !claimed { room.handle(event) }
        if !claimed, case let .message(peer, channel, payload) = event, channel == .rtp || channel == .rtcp {
            // Media from a node that is no member of the room goes no further (the room counts it).
            if room.admitsMedia(from: peer) { media.route(payload, channel: channel, from: peer) }
        }
        dispatch(.transport(event))
    }

    /// Runs timers; call every `GossipConstants.tickInterval`.
    public func tick() {
        room.tick()
        for role in roles { role.tick() }
        let now = clock.now()
        if lastCollect.map({ now - $0 >= RoomConstants.collectInterval }) ?? true {
            lastCollect = now
            core.collectSessions(needed: needsSession)
        }
    }

    /// Whether a part of this node needs its session with `peer` now: the
    /// room (its host, gossip neighbours, stage, PK) or a role (the tree, a
    /// stream, a preload). Sessions none needs and none sends on end.
    public func needsSession(with peer: NodeID) -> Bool {
        room.needsSession(with: peer) || roles.contains { $0.needsSession(with: peer) }
    }

    /// Runs what is due (the receive pipelines decode and send feedback).
    public func poll() {
        for role in roles { role.poll() }
    }

    /// When `poll` next has work, if any.
    public var nextWakeup: Instant? { roles.compactMap(\.nextWakeup).min() }

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
        for role in roles where role !== tree { role.leave() }
    }

    /// True once every member we hold a session with acknowledged our leave
    /// (or we never were in the room).
    public var leaveSettled: Bool { room.leaveSettled }

    /// Stops the encoders and all room activity before the transport closes.
    public func stop() {
        publishing.stop()
        room.shutdown()
        for role in roles where role !== publishing { role.stop() }
    }

    /// Finishes the output files; after the loop is done with the sinks.
    public func closeOutputs() { viewing.closeOutputs() }
}
