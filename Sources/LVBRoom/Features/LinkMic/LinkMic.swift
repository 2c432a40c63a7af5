import LVBCore
import LVBCrypto
import LVBGossip

/// Link-mic, a room feature: runs the host's or the viewer's signalling
/// state machine, sends its signed messages, tells the room who is on stage
/// (stage events) and hands the media side (`onStage`) what to start and stop.
final class LinkMic: RoomFeature {
    unowned let node: RoomNode
    /// The host's desk (requests, guests on stage), or a viewer's own request.
    var desk: LinkMicHost?
    var guest = LinkMicGuest()
    /// Link-mic messages refused: forged, replayed, from a non-host, for another room.
    var refused = 0
    /// The media side of link-mic (`stageOn`/`stageOff` on the host,
    /// `startPublishing`/`stopPublishing` on a guest), performed by the node driver.
    var onStage: ((LinkMicAction) -> Void)?
    /// When media last came from a node's stream (a co-host's silence ends its stage); set by the node driver.
    var lastMedia: ((NodeID) -> Instant?)?

    init(node: RoomNode) {
        self.node = node
        if node.isHost { desk = LinkMicHost(maxGuests: RoomConstants.defaultMaxGuests) }
    }

    static let messages: [any RoomMessageContent.Type] = [LinkMicMessage.self]

    /// A guest asking for or on stage keeps its session with the host.
    func needsSession(with peer: NodeID) -> Bool {
        desk.map { $0.pending[peer] != nil || $0.guests.contains { $0.id == peer } } == true
    }

    func changed(_ change: RoomChange) {
        switch change {
        case let .left(id, _): peerGone(id)
        case let .stage(id, false, reason): stageEnded(id, reason: reason)
        default: break
        }
    }

    /// Viewer: asks the host to go on stage.
    func request(_ message: String) throws(RoomActionError) {
        guard node.isAdmitted else { throw .notInRoom }
        guard !node.isHost else { throw .refused(LinkMicError.hostCannotAsk.description) }
        do { perform(try guest.ask(LinkMicMessage.cut(message), request: node.random.uint64(), host: node.host, now: node.clock.now())) }
        catch { throw .refused(error.description) }
    }

    /// Host: puts the member named `name` (nickname or id prefix) on stage.
    func accept(_ name: String) throws(RoomActionError) {
        let peer = try requester(named: name)
        let now = node.clock.now()
        try withDesk { (desk) throws(LinkMicError) in try desk.accept(peer, now: now) }
    }

    /// Host: says no to the member named `name`.
    func reject(_ name: String, reason: String) throws(RoomActionError) {
        let peer = try requester(named: name)
        try withDesk { (desk) throws(LinkMicError) in try desk.reject(peer, reason: reason) }
    }

    /// Host: takes `name` off stage (nil: the only guest). Viewer: leaves the
    /// stage or withdraws its request (`name` ignored).
    func hangUp(_ name: String?) throws(RoomActionError) {
        guard node.isAdmitted else { throw .notInRoom }
        guard node.isHost else {
            do { perform(try guest.hangUp(host: node.host)) } catch { throw .refused(error.description) }
            return
        }
        let guests = desk?.guests.map(\.id) ?? []
        let peer: NodeID
        if let name { peer = try node.member(named: name) } else if guests.count == 1 { peer = guests[0] } else {
            throw .refused(guests.isEmpty ? LinkMicError.notOnStage.description : "several guests on stage: /hangup NAME")
        }
        try withDesk { (desk) throws(LinkMicError) in try desk.hangUp(peer) }
    }

    /// Runs a host command on the link-mic desk and performs its actions.
    private func withDesk(_ command: (inout LinkMicHost) throws(LinkMicError) -> [LinkMicAction]) throws(RoomActionError) {
        guard node.isAdmitted else { throw .notInRoom }
        guard var d = desk else { throw .hostOnly }
        let actions: [LinkMicAction]
        do { actions = try command(&d) } catch { throw .refused(error.description) }
        desk = d
        perform(actions)
    }

    private func requester(named name: String) throws(RoomActionError) -> NodeID {
        guard node.isAdmitted else { throw .notInRoom }
        guard let pending = desk?.pending else { throw .hostOnly }
        if name.isEmpty {
            // No name: the only request waiting, if there is exactly one.
            guard pending.count == 1, let only = pending.keys.first else {
                throw .refused(pending.isEmpty ? "no link-mic request is waiting" : "several requests are waiting: name one")
            }
            return only
        }
        // A requester by its id's start, before anyone the host knows by name.
        let needle = name.lowercased()
        let asking = pending.keys.filter { $0.text.hasPrefix(needle) }
        if asking.count == 1, needle.count >= 4 { return asking[0] }
        return try node.member(named: name)
    }

    /// A link-mic message from `peer` (types 5–7).
    func receive(_ message: LinkMicMessage, from peer: NodeID) {
        guard message.room == node.room, node.isAdmitted else {
            perform([.output(.refused(peer, why: "link-mic message for another room"))])
            return
        }
        if node.isHost {
            guard message.isSigned(by: peer) else {
                perform([.output(.refused(peer, why: "link-mic message with a bad signature"))])
                return
            }
            guard node.verified.contains(peer) else { return }
            switch message.body {
            case .request(let text):
                perform(desk?.receiveRequest(message.request, message: text, from: peer, now: node.clock.now()) ?? [])
            case .hangup:
                perform(desk?.receiveHangup(message.request, from: peer) ?? [])
            case .answer:
                perform([.output(.refused(peer, why: "only the host answers link-mic requests"))])
            }
        } else {
            perform(guest.receive(message, from: peer, host: node.host, me: node.core.nodeID))
        }
    }

    /// Link-mic timers, with the room's tick.
    func tick(now: Instant) {
        if desk != nil {
            perform(desk?.tick(now: now, lastMedia: lastMedia) ?? [])
        } else if node.hostKnown {
            perform(guest.tick(now: now, host: node.host, me: node.core.nodeID))
        }
    }

    /// A member left or its session ended.
    func peerGone(_ peer: NodeID) {
        if desk != nil {
            perform(desk?.peerGone(peer) ?? [])
        } else if peer == node.host {
            perform(guest.stageLost(.left))
        }
    }

    /// The room says `id` is off stage: if that is us and we missed the host's hangup, stop.
    private func stageEnded(_ id: NodeID, reason: StageReason?) {
        guard !node.isHost, id == node.core.nodeID else { return }
        perform(guest.stageLost(reason ?? .hostHungUp))
    }

    private func perform(_ actions: [LinkMicAction]) {
        for action in actions {
            switch action {
            case let .send(body, request, peer):
                let m = LinkMicMessage(room: node.room, request: request, body: body, sender: node.identity)
                node.send(.linkMic(m), to: peer)
            case .output(let output):
                if case let .refused(peer, why) = output {
                    refused += 1
                    node.log.debug("link-mic message from \(peer.short) refused: \(why)")
                }
                node.show(output)
            case .stageOn(let peer):
                node.publish(.stage(target: peer, onStage: true, reason: 0))
                onStage?(action)
            case let .stageOff(peer, reason):
                node.publish(.stage(target: peer, onStage: false, reason: reason.rawValue))
                onStage?(action)
            case .startPublishing, .stopPublishing:
                onStage?(action)
            }
        }
    }
}

/// Link-mic as the node's owner (console, page, node driver) reaches it.
extension RoomNode {
    private var linkMic: LinkMic? { feature(LinkMic.self) }

    /// How many co-hosts the host puts on stage at once (`--max-guests`); set before any is accepted.
    public var maxGuests: Int {
        get { linkMic?.desk?.maxGuests ?? 0 }
        set { if isHost, linkMic?.desk?.guests.isEmpty ?? true { linkMic?.desk = LinkMicHost(maxGuests: newValue) } }
    }

    /// The guests on stage in the order they came on (host only).
    public var guestsOnStage: [NodeID] { linkMic?.desk?.guests.map(\.id) ?? [] }

    /// Host: the link-mic requests waiting for an answer, oldest first.
    public var linkMicQueue: [(id: NodeID, message: String)] {
        (linkMic?.desk?.pending ?? [:]).sorted { $0.value.since < $1.value.since }.map { ($0.key, $0.value.message) }
    }

    /// Viewer: where its own link-mic stands (idle, asking, on stage).
    public var linkMicPhase: LinkMicGuest.Phase { linkMic?.guest.phase ?? .idle }

    /// Link-mic messages refused: forged, replayed, from a non-host, for another room.
    public var linkMicRefused: Int { linkMic?.refused ?? 0 }

    /// The media side of link-mic (`stageOn`/`stageOff` on the host,
    /// `startPublishing`/`stopPublishing` on a guest), performed by the node driver.
    public var onStage: ((LinkMicAction) -> Void)? {
        get { linkMic?.onStage }
        set { linkMic?.onStage = newValue }
    }

    /// When media last came from a node's stream (a co-host's silence ends its stage); set by the node driver.
    public var lastMedia: ((NodeID) -> Instant?)? {
        get { linkMic?.lastMedia }
        set { linkMic?.lastMedia = newValue }
    }

    public func requestLinkMic(_ message: String) throws(RoomActionError) { try linkMic?.request(message) }
    public func acceptLinkMic(_ name: String) throws(RoomActionError) { try linkMic?.accept(name) }
    public func rejectLinkMic(_ name: String, reason: String) throws(RoomActionError) { try linkMic?.reject(name, reason: reason) }
    public func hangUpLinkMic(_ name: String?) throws(RoomActionError) { try linkMic?.hangUp(name) }
}
