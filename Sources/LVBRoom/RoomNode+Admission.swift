import LVBCore
import LVBCrypto
import LVBGossip
import LVBTransport

// Admission (viewer → host) and pass presentation (member ↔ member) on the
// `.room` channel: nobody gets gossip from us, or gives us any, without a
// pass signed by the host for exactly that member.
extension RoomNode {
    func requestAdmission() {
        phase = .requesting(since: clock.now())
        let request: AdmissionRequest
        switch proof {
        case .none:
            request = AdmissionRequest(room: room, proof: .none)
        case .password(let key):
            guard let binding = core.sessionBinding(with: host) else { return }
            request = .password(roomKey: key, sessionBinding: binding, joiner: core.nodeID, room: room)
        case .invite(let invite):
            request = AdmissionRequest(room: room, proof: .invite(invite))
        }
        send(.admission(.request(request)), to: host)
        // After the request, on the same session: the host has decided by
        // the time this subscription arrives, and answers it with its GOP.
        onSignal?(.admissionRequested)
    }

    /// Shows our pass to `peer` (at most once a second unless `force`).
    func presentPass(to peer: NodeID, force: Bool) {
        guard let pass, peer != core.nodeID else { return }
        let now = clock.now()
        if !force, let last = passes.sentAt[peer], now - last < RoomConstants.passRepeat { return }
        passes.sentAt[peer] = now
        send(.admission(.response(AdmissionResponse(room: room, result: .admitted(pass: pass)))), to: peer)
    }

    /// Whether `gap` has passed since `peer`'s entry in `last`; if so, it is
    /// now. Entries older than `gap` go once 256 pile up (peers come and go).
    private static func isDue(_ peer: NodeID, in last: inout [NodeID: Instant], every gap: Duration, now: Instant) -> Bool {
        if let at = last[peer], now - at < gap { return false }
        if last.count >= 256 { last = last.filter { now - $0.value < gap } }
        last[peer] = now
        return true
    }

    /// `peer` holds no pass of ours: shown again at once, even if one just
    /// went (it may have been lost); the pass is no secret, and the asker's
    /// own pace (`passWantedInterval`) bounds how often an honest one asks.
    func answerPassWanted(_ wanted: RoomID, from peer: NodeID) {
        guard wanted == room, pass != nil, Self.isDue(peer, in: &passes.answeredAt, every: RoomConstants.passWantedInterval / 5, now: clock.now())
        else { return }
        presentPass(to: peer, force: true)
    }

    /// `peer` sent gossip or media we dropped, holding no pass of its: the
    /// one it showed when the session came up was lost (passes go once), and
    /// nothing else would make it show it again. The host needs none: it
    /// verified every member it admitted.
    func askForPass(of peer: NodeID) {
        guard pass != nil, !isHost, peer != host, peer != core.nodeID, state?.isKicked(peer) != true,
              Self.isDue(peer, in: &passes.wantedAt, every: RoomConstants.passWantedInterval, now: clock.now()) else { return }
        passesWanted += 1
        send(.passWanted(room: room), to: peer)
    }

    /// Gossip from a member whose pass we hold (or the host's).
    func readGossip(_ payload: ArraySlice<UInt8>, from peer: NodeID) {
        guard !standing.isThrottled(peer) else { return }
        gossip.receive(payload, from: peer)
        if let changes = state?.noteActivity(from: peer) { changes.forEach(report) }
    }

    /// A peer's pass and its first gossip (a neighbour request on a new
    /// session) can cross on the way: its first few messages wait for the
    /// pass, briefly (`RoomConstants.heldGossip`), and the pass reads them.
    /// Bounded per peer and in all, so a peer that never shows a pass costs
    /// a few datagrams of memory for two seconds.
    func holdGossip(_ payload: ArraySlice<UInt8>, from peer: NodeID) {
        let now = clock.now(), limits = RoomConstants.heldGossip
        if passes.heldGossip[peer] == nil, passes.heldGossip.count >= limits.peers {
            passes.heldGossip = passes.heldGossip.filter { now - $0.value.at < limits.wait }
            guard passes.heldGossip.count < limits.peers else { return }
        }
        var held = passes.heldGossip[peer].flatMap { now - $0.at < limits.wait ? $0 : nil } ?? (at: now, payloads: [])
        guard held.payloads.count < limits.perPeer else { return }
        held.payloads.append(Array(payload))
        passes.heldGossip[peer] = held
    }

    func releaseGossip(from peer: NodeID) {
        guard let held = passes.heldGossip.removeValue(forKey: peer), clock.now() - held.at < RoomConstants.heldGossip.wait else { return }
        for payload in held.payloads { readGossip(payload[...], from: peer) }
    }

    func handleRoomMessage(_ payload: ArraySlice<UInt8>, from peer: NodeID) {
        let message: RoomMessage
        do { message = try RoomMessage.parse(payload) } catch {
            if case .unknownMessage(let type) = error {
                // A newer node's message: not misbehaviour.
                unknownRoomMessages += 1
                log.debug("room message type \(type) from \(peer.short) is unknown to this version; dropped")
            } else {
                penalize(peer)
            }
            return
        }
        message.received(from: peer, by: self)
    }

    func handleAdmission(_ message: AdmissionMessage, from peer: NodeID) {
        switch message {
        case .request(var request):
            guard let policy, let state else { return }
            if request.room == RoomNode.anyRoom { request.room = room }
            let response = policy.evaluate(request, from: peer, sessionBindings: core.sessionBindings(with: peer),
                                           kicked: state.isKicked(peer), closed: state.isClosed)
            if case .admitted = response.result { passes.verified.insert(peer) }
            send(.admission(.response(response)), to: peer)
        case .response(let response):
            if !isHost, peer == host, pass == nil, room == RoomNode.anyRoom { room = response.room }
            guard response.room == room else { return }
            switch response.result {
            case .admitted(let theirPass):
                if !isHost, peer == host, pass == nil {
                    guard AdmissionPolicy.verifyPass(theirPass, room: room, host: host, member: core.nodeID) else { return }
                    admitted(with: theirPass)
                } else if AdmissionPolicy.verifyPass(theirPass, room: room, host: host, member: peer) {
                    let isNew = passes.verified.insert(peer).inserted
                    if isNew { presentPass(to: peer, force: false) }
                    releaseGossip(from: peer)
                }
            case .denied(let reason):
                if !isHost, peer == host, pass == nil, phase.isActive {
                    phase = .denied  // refused: stop asking
                    onOutput?(.denied(reason))
                }
            }
        }
    }

    /// A joiner enters with a pass the host already gave this node for this
    /// room (while the room was preloaded): no request, no round trip.
    /// False if the pass is not the host's for us and this room.
    @discardableResult
    public func enter(with pass: MembershipPass) -> Bool {
        guard !isHost, hostKnown, self.pass == nil, phase.isActive,
              AdmissionPolicy.verifyPass(pass, room: room, host: host, member: core.nodeID) else { return false }
        admitted(with: pass)
        return true
    }

    private func admitted(with pass: MembershipPass) {
        self.pass = pass
        phase = .member
        passes.verified.insert(host)
        admittedAtMs = wallMs()
        let state = RoomState(room: room, host: host, clock: clock)
        state.me = core.nodeID
        self.state = state
        onOutput?(.admitted(room))
        if let address = core.endpoint(of: host) { gossip.join(via: PeerRecord(id: host, address: address)) }
        for feature in features.all { feature.admitted() }
    }
}

/// A node's pass, the members whose passes it checked, the passes it shows
/// and asks for, and the gossip it holds meanwhile.
struct PassTraffic {
    /// Ours, signed by the host (the host's own, signed by itself).
    var pass: MembershipPass?
    /// When we were admitted (the host: opened the room), wall clock ms.
    var admittedAtMs: UInt64 = 0
    /// The members whose pass we checked (the host: those it admitted).
    var verified: Set<NodeID> = []
    /// When we last showed each peer our pass.
    var sentAt: [NodeID: Instant] = [:]
    /// Gossip from peers whose pass has not come yet, read when it does (`holdGossip`).
    var heldGossip: [NodeID: (at: Instant, payloads: [[UInt8]])] = [:]
    /// When we last asked a peer for its pass (`RoomMessage.passWanted`).
    var wantedAt: [NodeID: Instant] = [:]
    /// When we last showed a peer our pass because it asked.
    var answeredAt: [NodeID: Instant] = [:]
}

extension RoomNode {
    /// Gossip held until its sender's pass comes (`PassTraffic.heldGossip`).
    var heldGossip: [NodeID: (at: Instant, payloads: [[UInt8]])] { passes.heldGossip }

    /// Our pass (`PassTraffic.pass`).
    var pass: MembershipPass? {
        get { passes.pass }
        set { passes.pass = newValue }
    }

    var admittedAtMs: UInt64 {
        get { passes.admittedAtMs }
        set { passes.admittedAtMs = newValue }
    }

    /// The members whose pass we checked (the node inserts through `passes`).
    var verified: Set<NodeID> {
        get { passes.verified }
        set { passes.verified = newValue }
    }
}
