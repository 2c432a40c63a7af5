import LVBCore
import LVBCrypto
import LVBGossip
import LVBTransport
import Logging

/// What a room node reports to its user interfaces.
public enum RoomOutput: Sendable {
    /// This node is in the room (host: the room is open; viewer: admitted).
    case admitted(RoomID)
    /// The host refused us.
    case denied(AdmissionDenial)
    /// Something changed in the room.
    case change(RoomChange)
    /// This node must leave: kicked, signed in elsewhere, or the room closed.
    case removed(RemovalReason)
    /// A feature's output (`RoomFeature`): typed, for whatever else acts on
    /// it (the media side on a PK's start, a test), and shown as it says
    /// (`FeatureOutput.notice`): link-mic's signalling, PK's, a quiz's answer…
    case feature(any FeatureOutput)
}

/// What the room hands the node driver for the media side.
public enum RoomSignal: Sendable {
    /// Joiner: this node asks the host to admit it (a node that shows
    /// pictures subscribes to the host's stream at the same time).
    case admissionRequested
    /// A member told us its relay slots are all taken, or to move down (the media tree).
    case relay(NodeID, RelaySignal)
    /// Relay positions a member sent us, checked and applied (its own, or ones it passes down the tree).
    case positions(NodeID, [RoomEvent])
}

/// Why a node was removed from its room.
public enum RemovalReason: String, Sendable {
    case kicked
    case signedInElsewhere = "signed_in_elsewhere"
    case roomClosed = "room_closed"
}

/// How a node is in its room: hosting it, or joining it.
enum RoomAccess {
    case hosting(AdmissionPolicy)
    case joining(JoinProof)
}

/// How a viewer proves it may enter a private room.
public enum JoinProof: Sendable {
    case none
    case password(roomKey: [UInt8])
    case invite(Invite)
}

/// One node's part in one live room, sans-IO on the node's event loop: admits
/// (host) or gets admitted (viewer), exchanges membership passes, runs gossip,
/// applies events to the room state, and publishes this node's own events.
public final class RoomNode {
    public let core: TransportCore
    public let gossip: GossipNode
    /// The room; all zeros until an address-only joiner learns it from the host.
    public internal(set) var room: RoomID
    /// The host; for an address-only join, whoever answers our dial.
    public internal(set) var host: NodeID
    var hostKnown: Bool
    public internal(set) var state: RoomState?
    public var onOutput: ((RoomOutput) -> Void)?
    /// This process's random instance id (signed-in-elsewhere detection).
    public let instance: UInt64
    /// Our profile (`profile`), and whether the whole room heard it yet (`profileSpoken`).
    var own = (profile: Profile(), spoken: false)

    var identity: Identity { core.identity }
    let clock: Clock
    let random: RandomSource
    /// How this node is in the room: hosting it under a policy, or joining with a proof.
    let entry: RoomAccess
    let standing: Standing
    static let log = Log.logger("room")
    var log: Logger { Self.log }
    var seq: UInt64
    /// What the room hands the node driver besides its outputs (`RoomSignal`).
    public var onSignal: ((RoomSignal) -> Void)?
    /// This node's pass, the members whose passes it checked, the passes
    /// shown to and asked of peers, and gossip held until a pass comes (`RoomNode+Admission`).
    var passes = PassTraffic()
    var startInfo: RoomInfo?
    /// Where this node stands with the room.
    public internal(set) var phase: RoomPhase
    /// Invalid events and room messages peers sent us (each cost its sender standing).
    public var penalties: Int { standing.invalidCount }
    /// The room's features (`RoomFeatures.all`), one of each.
    var features = FeatureSet()
    /// What this node counted (`RoomNode+Stats`).
    var stats = RoomStats()

    /// A host's room: open, password or invite-only per `policy`.
    public convenience init(hosting policy: AdmissionPolicy, core: TransportCore, clock: Clock, random: RandomSource, info: RoomInfo) {
        self.init(core: core, room: policy.room, host: core.nodeID, policy: policy, proof: .none, clock: clock, random: random)
        let state = RoomState(room: room, host: host, clock: clock)
        state.isHostsView = true
        state.me = host
        self.state = state
        pass = MembershipPass(host: identity, room: room, member: host, issuedAt: wallMs())
        phase = .hosting
        admittedAtMs = wallMs()
        startInfo = info
    }

    /// Opens the room (host: announces itself and the room info). Call once
    /// `onOutput` is set, so the node's own start is reported too.
    public func start() {
        // A joiner that already holds a session with the host (a room switch
        // to a host we were connected to) asks at once: no `established` comes.
        if !isHost, hostKnown, phase == .connecting, core.isEstablished(with: host) { requestAdmission() }
        guard isHost, let info = startInfo else { return }
        startInfo = nil
        publish(.join(instance: instance, role: .host))
        if profile != Profile() { publish(.profile(profile)) }
        publish(.roomInfo(info))
        for feature in features.all { feature.admitted() }
    }

    /// Stops all activity before the transport closes: no heartbeats, no
    /// re-dialling of neighbours as the sessions go.
    public func shutdown() {
        phase = .gone
    }

    /// The room id a joiner sends when it only knows the host's address: the
    /// host answers with its own room id in the pass.
    public static let anyRoom: RoomID = {
        try! RoomID(bytes: [UInt8](repeating: 0, count: 16))  // invariant: fixed length 16
    }()

    /// A viewer's view of the room `room` hosted by `host` (from the ticket;
    /// `anyRoom` when joining by address).
    /// `instance`: the process's instance id when one node visits several
    /// rooms in turn (a room switch), so each room sees the same instance.
    public convenience init(joining room: RoomID, host: NodeID?, proof: JoinProof, core: TransportCore, clock: Clock, random: RandomSource,
                            instance: UInt64? = nil) {
        self.init(core: core, room: room, host: host ?? core.nodeID, policy: nil, proof: proof, clock: clock, random: random,
                  instance: instance)
        hostKnown = host != nil
    }

    private init(core: TransportCore, room: RoomID, host: NodeID, policy: AdmissionPolicy?, proof: JoinProof,
                 clock: Clock, random: RandomSource, instance: UInt64? = nil) {
        self.core = core
        self.room = room
        self.host = host
        hostKnown = true
        phase = .connecting
        entry = policy.map(RoomAccess.hosting) ?? .joining(proof)
        self.clock = clock
        self.random = random
        self.instance = instance ?? random.uint64()
        standing = Standing(clock: clock)
        let adapter = TransportGossipAdapter(core: core)
        gossip = GossipNode(id: core.nodeID, transport: adapter, kinds: RoomEvents.table, clock: clock, random: random)
        // Sequence numbers keep growing across restarts of the same identity
        // (latest-wins events and signed-in-elsewhere rely on it): start from
        // the wall clock in microseconds.
        let wall = clock.wallTime()
        seq = wall.seconds * 1_000_000 + UInt64(wall.nanoseconds / 1000)
        wireGossip()
        features = FeatureSet(for: self)
        // Every member holds a session with the host: it introduces neighbours.
        adapter.coordinators = { [unowned self] in isHost ? [] : [self.host] }
    }

    public var isHost: Bool { policy != nil }

    /// What this node shows about itself (set before joining, or `setProfile`).
    public var profile: Profile {
        get { own.profile }
        set { own.profile = newValue }
    }

    /// Our profile went to the whole room (it goes when we first speak).
    var profileSpoken: Bool {
        get { own.spoken }
        set { own.spoken = newValue }
    }

    /// The host's admission policy (nil on a joiner).
    var policy: AdmissionPolicy? {
        if case .hosting(let policy) = entry { return policy }
        return nil
    }

    /// A joiner's proof for the host.
    var proof: JoinProof {
        if case .joining(let proof) = entry { return proof }
        return .none
    }

    /// How the room admits (the host's view; a joiner's is `.open` until told):
    /// the access byte of tickets and announcements, 0 open, 1 password, 2 invite-only.
    public var access: UInt8 {
        switch policy?.mode {
        case .password: 1
        case .inviteOnly: 2
        default: 0
        }
    }
    public var isAdmitted: Bool { state != nil }

    /// Whether `peer` takes part in this room as we know it (its host, or a
    /// member that showed its pass): its messages are this room's.
    public func hears(_ peer: NodeID) -> Bool { peer == host || verified.contains(peer) }

    /// Whether the room needs its session with `peer` now (`TransportCore.collectSessions`):
    /// the host, a gossip neighbour, a guest asking for or on stage, and whom a feature needs (the other host of a PK).
    public func needsSession(with peer: NodeID) -> Bool {
        peer == host || gossip.needsSession(with: peer) || features.all.contains { $0.needsSession(with: peer) }
    }

    private func wireGossip() {
        gossip.mayNeighbor = { [unowned self] peer in verified.contains(peer) || peer == host }
        gossip.reachesDirectly = { [unowned self] peer in
            if core.isEstablished(with: peer) { return !core.isRelayed(peer) }
            guard core.config.nat != .unknown, let position = state?.tree[peer] else { return nil }
            return position.reachable(from: core.config.nat, ipv6: core.config.ownAddresses.contains(where: \.isGlobalIPv6))
        }
        gossip.pinnedAuthors = { [unowned self] in [host] }
        gossip.history = { [unowned self] in state?.retainedEvents() ?? [] }
        gossip.onInvalid = { [unowned self] peer in penalize(peer) }
        gossip.accept = { [unowned self] event, _ in
            guard let state else { return .duplicate }
            // Events from before we joined come as history: they were rate
            // limited when they were live.
            let historical = event.timestamp + RoomConstants.historySlack < admittedAtMs
            switch state.apply(event, fromHistory: historical) {
            case .accepted(let changes):
                changes.forEach(report)
                return .accept
            case .duplicate:
                return .duplicate
            case .rejected(let why):
                rejectedEvents += 1
                log.debug("event \(event.id.author.short)#\(event.id.seq) rejected: \(why)")
                return why.isMisbehaviour ? .reject : .duplicate
            }
        }
    }

    func wallMs() -> UInt64 { clock.wallTime().milliseconds }

    /// This node is out of the room: stop everything, then tell the owner.
    func remove(_ reason: RemovalReason) {
        guard phase.isActive else { return }
        phase = .gone
        onOutput?(.removed(reason))
    }

    func report(_ change: RoomChange) {
        onOutput?(.change(change))
        for feature in features.all { feature.changed(change) }
        switch change {
        case .kicked(let id):
            // Disconnect after a grace period, so the kick still reaches the
            // kicked node (and its other neighbours) before the links go.
            if id == core.nodeID { remove(.kicked) } else { standing.disconnect(id, at: clock.now() + RoomConstants.kickGrace) }
        case .roomClosed:
            // Gossip the close on for a moment before going quiet (the owner exits).
            onOutput?(.removed(.roomClosed))
        case let .signedInElsewhere(id, old, _):
            if id == core.nodeID, old == instance { remove(.signedInElsewhere) }
        default:
            break
        }
    }

    func penalize(_ peer: NodeID) {
        switch standing.recordInvalid(from: peer) {
        case .none, .throttle: break
        case .disconnect:
            // Queued (`Standing.dueDisconnects`), not done here.
            log.info("disconnecting \(peer.short): repeated invalid events")
            standing.disconnect(peer, at: clock.now())
        }
    }

    /// Feeds a transport event (call from the transport's `onEvent`).
    public func handle(_ event: TransportEvent) {
        guard phase != .gone else { return }
        switch event {
        case .established(let info):
            if state?.isKicked(info.id) == true { core.disconnect(info.id); return }
            // Joined by bare address (Noise XX): the node we reached hosts the room.
            if !isHost, !hostKnown { host = info.id; hostKnown = true }
            if !isHost, info.id == host {
                switch phase {
                case .connecting, .requesting: requestAdmission()
                default: break
                }
            }
            presentPass(to: info.id, force: true)
        case let .message(id, .room, payload):
            handleRoomMessage(payload, from: id)
        case let .message(id, .gossip, payload):
            guard id == host || verified.contains(id) else {
                holdGossip(payload, from: id)
                presentPass(to: id, force: false)
                askForPass(of: id)
                return
            }
            readGossip(payload, from: id)
        case let .gone(id, reason):
            // Another process with our identity took our place with this peer:
            // go quiet at once (a re-dial would in turn displace it).
            if reason == .replaced, isAdmitted {
                remove(.signedInElsewhere)
                return
            }
            gossip.peerDown(id, idle: reason == .idle)
            for feature in features.all { feature.peerGone(id) }
        case .message, .rtt, .hello, .rekeyed, .connectFailed, .moved, .peerMoved, .birthday:
            break
        }
    }

    /// Runs timers; call every `GossipConstants.tickInterval`.
    public func tick() {
        guard phase != .gone else { return }
        gossip.tick()
        if case .departing = phase {
            repeatLeave()
            return
        }
        let now = clock.now()
        for id in standing.dueDisconnects(now: now) {
            core.disconnect(id)
            gossip.peerDown(id)
        }
        if case .requesting(let since) = phase, hostKnown, core.isEstablished(with: host),
           now - since >= RoomConstants.admissionRetry {
            requestAdmission()
        }
        guard isAdmitted else { return }
        for feature in features.due(now: now) { feature.tick(now: now) }
    }
}
