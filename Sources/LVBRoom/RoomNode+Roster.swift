import LVBCore
import LVBCrypto
import LVBGossip

// A joiner tells the host, not the room: its join and profile go to the host
// alone (`RosterMessage`), and the room hears of it through the host's
// census, which passes on the events of the latest joiners it lists.
extension RoomNode {
    /// Signs our join (and profile) for the host, applies them here, and
    /// sends them until the host acknowledges them.
    func tellHost() {
        var events: [RoomEvent] = []
        if case .success(let e) = publish(.join(instance: instance, role: .viewer), broadcast: false) { events.append(e) }
        if profile != Profile(), case .success(let e) = publish(.profile(profile), broadcast: false) { events.append(e) }
        guard let last = events.last else { return }
        roster = (events.map(\.encoded), last.id.seq, nil)
        tickRoster(now: clock.now())
    }

    func tickRoster(now: Instant) {
        guard let r = roster, r.lastSent.map({ now - $0 >= RoomConstants.admissionRetry }) ?? true,
              core.isEstablished(with: host) else { return }
        roster?.lastSent = now
        send(.roster(.roster(r.events)), to: host)
    }

    /// The host: a member's own join and profile. Applied here, not passed
    /// on (the census lists the latest joiners and passes theirs on).
    func rosterReceived(_ events: [[UInt8]], from peer: NodeID) {
        guard isHost, let state, verified.contains(peer) else { return }
        let parsed = events.compactMap { try? RoomEvent.parse($0[...], kinds: RoomEvents.table) }
        guard parsed.count == events.count, parsed.allSatisfy({ $0.id.author == peer && $0.room == room }),
              parsed.allSatisfy({ $0.body.kind == MemberJoin.kind || $0.body.kind == Profile.kind }) else {
            penalize(peer)
            return
        }
        for e in parsed { applyHere(e, from: peer) }
        if let seq = parsed.map(\.id.seq).max() { send(.roster(.ack(seq: seq)), to: peer) }
    }

    func rosterAcknowledged(_ seq: UInt64, by peer: NodeID) {
        guard peer == host, roster?.seq == seq else { return }
        roster = nil
    }

    /// Applies a member's event here without passing it on; a refusal for
    /// misbehaviour costs the sender standing.
    func applyHere(_ e: RoomEvent, from peer: NodeID) {
        guard let state else { return }
        switch state.apply(e) {
        case .accepted(let changes): changes.forEach(report)
        case .duplicate: break
        case .rejected(let why):
            rejectedEvents += 1
            if why.isMisbehaviour { penalize(peer) }
        }
    }

    /// Whether the whole room hears of `id` coming and going: the host,
    /// the joiners the census lists, and members holding a relay position
    /// (the media tree reads everyone's).
    func isListedRoomWide(_ id: NodeID) -> Bool {
        guard let state else { return false }
        return id == host || state.census?.joiners.contains(id) == true || state.relays[id] != nil
    }

    /// The host, after each census: the join and profile of each joiner it
    /// lists for the first time go to the whole room.
    func passOnNewlyListed(_ census: Census, after previous: Census?) {
        guard let state else { return }
        let before = Set(previous?.joiners ?? [])
        for id in census.joiners where !before.contains(id) {
            if let join = state.presence.entries[id]?.join { gossip.broadcast(join) }
            if let p = state.profiles[id] { gossip.broadcast(p) }
        }
    }
}
