import LVBCore
import LVBCrypto
import LVBGossip

/// Link-mic in the room node: runs the host's or the viewer's signalling
/// state machine, sends its signed messages, tells the room who is on stage
/// (stage events) and hands the media side (`onStage`) what to start and stop.
extension RoomNode {
    /// How many co-hosts the host puts on stage at once (`--max-guests`); set before any is accepted.
    public var maxGuests: Int {
        get { linkMicHost?.maxGuests ?? 0 }
        set { if isHost, linkMicHost?.guests.isEmpty ?? true { linkMicHost = LinkMicHost(maxGuests: newValue) } }
    }

    /// The guests on stage in the order they came on (host only).
    public var guestsOnStage: [NodeID] { linkMicHost?.guests.map(\.id) ?? [] }

    /// Host: the link-mic requests waiting for an answer, oldest first.
    public var linkMicQueue: [(id: NodeID, message: String)] {
        (linkMicHost?.pending ?? [:]).sorted { $0.value.since < $1.value.since }.map { ($0.key, $0.value.message) }
    }

    /// Viewer: where its own link-mic stands (idle, asking, on stage).
    public var linkMicPhase: LinkMicGuest.Phase { linkMicGuest.phase }

    /// Viewer: asks the host to go on stage.
    public func requestLinkMic(_ message: String) throws(RoomActionError) {
        guard isAdmitted else { throw .notInRoom }
        guard !isHost else { throw .refused(LinkMicError.hostCannotAsk.description) }
        do { perform(try linkMicGuest.ask(LinkMicMessage.cut(message), request: random.uint64(), host: host, now: clock.now())) }
        catch { throw .refused(error.description) }
    }

    /// Host: puts the member named `name` (nickname or id prefix) on stage.
    public func acceptLinkMic(_ name: String) throws(RoomActionError) {
        let peer = try requester(named: name)
        let now = clock.now()
        try withDesk { (desk) throws(LinkMicError) in try desk.accept(peer, now: now) }
    }

    /// Host: says no to the member named `name`.
    public func rejectLinkMic(_ name: String, reason: String) throws(RoomActionError) {
        let peer = try requester(named: name)
        try withDesk { (desk) throws(LinkMicError) in try desk.reject(peer, reason: reason) }
    }

    /// Host: takes `name` off stage (nil: the only guest). Viewer: leaves the
    /// stage or withdraws its request (`name` ignored).
    public func hangUpLinkMic(_ name: String?) throws(RoomActionError) {
        guard isAdmitted else { throw .notInRoom }
        guard isHost else {
            do { perform(try linkMicGuest.hangUp(host: host)) } catch { throw .refused(error.description) }
            return
        }
        let guests = guestsOnStage
        let peer: NodeID
        if let name { peer = try member(named: name) } else if guests.count == 1 { peer = guests[0] } else {
            throw .refused(guests.isEmpty ? LinkMicError.notOnStage.description : "several guests on stage: /hangup NAME")
        }
        try withDesk { (desk) throws(LinkMicError) in try desk.hangUp(peer) }
    }

    /// Runs a host command on the link-mic desk and performs its actions.
    private func withDesk(_ command: (inout LinkMicHost) throws(LinkMicError) -> [LinkMicAction]) throws(RoomActionError) {
        guard isAdmitted else { throw .notInRoom }
        guard linkMicHost != nil else { throw .hostOnly }
        let actions: [LinkMicAction]
        do { actions = try command(&linkMicHost!) } catch { throw .refused(error.description) }
        perform(actions)
    }

    private func requester(named name: String) throws(RoomActionError) -> NodeID {
        guard isAdmitted else { throw .notInRoom }
        guard let pending = linkMicHost?.pending else { throw .hostOnly }
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
        return try member(named: name)
    }

    /// A link-mic message from `peer` (types 5–7).
    func handleLinkMic(_ message: LinkMicMessage, from peer: NodeID) {
        guard message.room == room, isAdmitted else {
            perform([.output(.refused(peer, why: "link-mic message for another room"))])
            return
        }
        if isHost {
            guard message.isSigned(by: peer) else {
                perform([.output(.refused(peer, why: "link-mic message with a bad signature"))])
                return
            }
            guard verified.contains(peer) else { return }
            switch message.body {
            case .request(let text):
                perform(linkMicHost?.receiveRequest(message.request, message: text, from: peer, now: clock.now()) ?? [])
            case .hangup:
                perform(linkMicHost?.receiveHangup(message.request, from: peer) ?? [])
            case .answer:
                perform([.output(.refused(peer, why: "only the host answers link-mic requests"))])
            }
        } else {
            perform(linkMicGuest.receive(message, from: peer, host: host, me: core.nodeID))
        }
    }

    /// Link-mic timers, with the room's tick.
    func tickLinkMic(now: Instant) {
        if linkMicHost != nil {
            perform(linkMicHost?.tick(now: now, lastMedia: lastMedia) ?? [])
        } else if hostKnown {
            perform(linkMicGuest.tick(now: now, host: host, me: core.nodeID))
        }
    }

    /// A member left or its session ended; or the room says someone is off stage.
    func linkMicPeerGone(_ peer: NodeID) {
        if linkMicHost != nil {
            perform(linkMicHost?.peerGone(peer) ?? [])
        } else if peer == host {
            perform(linkMicGuest.stageLost(.left))
        }
    }

    /// The room says `id` is off stage: if that is us and we missed the host's hangup, stop.
    func linkMicStageEnded(_ id: NodeID, reason: StageReason?) {
        guard !isHost, id == core.nodeID else { return }
        perform(linkMicGuest.stageLost(reason ?? .hostHungUp))
    }

    func perform(_ actions: [LinkMicAction]) {
        for action in actions {
            switch action {
            case let .send(body, request, peer):
                let m = LinkMicMessage(room: room, request: request, body: body, sender: identity)
                send(.linkMic(m), to: peer)
            case .output(let output):
                if case let .refused(peer, why) = output {
                    linkMicRefused += 1
                    log.debug("link-mic message from \(peer.short) refused: \(why)")
                }
                onOutput?(.linkMic(output))
            case .stageOn(let peer):
                publish(.stage(target: peer, onStage: true, reason: 0))
                onStage?(action)
            case let .stageOff(peer, reason):
                publish(.stage(target: peer, onStage: false, reason: reason.rawValue))
                onStage?(action)
            case .startPublishing, .stopPublishing:
                onStage?(action)
            }
        }
    }
}
