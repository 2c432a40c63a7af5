import LVBCore
import LVBCrypto
import LVBGossip
import LVBTransport

// Leaving so that those who know us know: the leave event goes straight to
// every member we hold a session with (the host among them), together with
// our last events (a member that only heard of them lazily could no longer
// fetch them from us), and to the whole room by gossip when the whole room
// knows of us (`isListedRoomWide`: the host, a listed joiner, a relay). Each
// acknowledges; we repeat to the silent ones until all have or the owner's
// bounded wait ends.
extension RoomNode {
    /// While departing: our last words and who has yet to acknowledge them (kept in `phase`).
    var departure: Departure? {
        get {
            if case .departing(let d) = phase { return d }
            return nil
        }
        set { if let newValue, case .departing = phase { phase = .departing(newValue) } }
    }

    /// Announces that we leave. Keep feeding events and ticks until
    /// `leaveSettled`, then close the transport.
    public func leave() {
        guard state != nil, let pass, phase.isActive else { return }
        // The features' last word (the other room of a PK hears that this one is going, rather than wait for silence).
        for feature in features.all { feature.leaving() }
        let wide = isListedRoomWide(core.nodeID)
        guard case .success(let event) = publish(.leave(reason: 0), broadcast: wide) else { return }
        gossip.tick()
        let gone = state?.presence.departed ?? []
        let members = core.peers.filter { $0.established && hears($0.id) && !gone.contains($0.id) }.map(\.id)
        let words = lastWords(ending: event)
        phase = .departing(Departure(events: words, leaveSeq: event.id.seq, awaiting: Set(members), lastSent: clock.now()))
        for id in members { send(.leaving(pass: pass, events: words), to: id) }
    }

    /// Our own events of the last `leaveReplay`, oldest first, then the leave:
    /// as many as one datagram holds.
    private func lastWords(ending leave: RoomEvent) -> [[UInt8]] {
        let since = wallMs() - UInt64(RoomConstants.leaveReplay.milliseconds)
        var room = core.maxPayload - 2 - MembershipPass.encodedLength - (2 + leave.encoded.count)
        var words: [[UInt8]] = []
        let own = (state?.retainedEvents() ?? []).filter { $0.id.author == core.nodeID && $0.timestamp >= since && $0.id != leave.id }
        for e in own.sorted(by: { $0.id.seq > $1.id.seq }) where words.count < 32 && 2 + e.encoded.count <= room {
            room -= 2 + e.encoded.count
            words.insert(e.encoded, at: 0)
        }
        return words + [leave.encoded]
    }

    /// True once every member we held a session with acknowledged our leave
    /// (or there was nothing to announce).
    public var leaveSettled: Bool {
        guard case .departing = phase, let departure else { return true }
        return departure.awaiting.isEmpty
    }

    /// Members yet to acknowledge our leave.
    public var departureAwaiting: [NodeID] { departure.map { Array($0.awaiting) } ?? [] }

    /// While departing: repeats the leave to members that have not acknowledged it.
    func repeatLeave() {
        guard let d = departure, let pass, !d.awaiting.isEmpty, clock.now() - d.lastSent >= RoomConstants.leaveRepeat else { return }
        // A member whose session ended, or who left meanwhile, cannot answer.
        let gone = state?.presence.departed ?? []
        let awaiting = d.awaiting.filter { core.isEstablished(with: $0) && !gone.contains($0) }
        departure?.awaiting = awaiting
        departure?.lastSent = clock.now()
        for id in awaiting { send(.leaving(pass: pass, events: d.events), to: id) }
    }

    /// A member says it is leaving: apply its last events and its leave
    /// (through gossip, which validates, deduplicates and passes them on) and
    /// acknowledge them. All must be its own, for this room, the leave last.
    func memberLeaving(_ events: [[UInt8]], pass theirPass: MembershipPass, from peer: NodeID) {
        // The pass comes along: the one it showed us may have been lost.
        guard phase.isActive, isAdmitted else { return }
        guard peer == host || verified.contains(peer) || AdmissionPolicy.verifyPass(theirPass, room: room, host: host, member: peer) else {
            penalize(peer)
            return
        }
        guard let parsed = ownEvents(events, from: peer), let leave = parsed.last, leave.body.kind == MemberLeave.kind else {
            penalize(peer)
            return
        }
        // Our last words go to the room; the leave only as far as the room
        // knows of the leaver (the host passes on a listed joiner's).
        for bytes in events.dropLast() { gossip.receive(GossipMessage.repair(bytes[...]).bytes[...], from: peer) }
        if isListedRoomWide(peer) {
            gossip.receive(GossipMessage.repair(leave.encoded[...]).bytes[...], from: peer)
        } else {
            applyHere(leave, from: peer)
        }
        for feature in features.all { feature.peerGone(peer) }
        send(.leaveAck(seq: leave.id.seq), to: peer)
    }

    func leaveAcknowledged(_ seq: UInt64, by peer: NodeID) {
        guard let d = departure, d.leaveSeq == seq else { return }
        departure?.awaiting.remove(peer)
    }

    func send(_ message: RoomMessage, to peer: NodeID) {
        try? core.send(message.encoded, channel: .room, to: peer)
    }
}
