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
        guard let parsed = ownEvents(events, from: peer),
              parsed.allSatisfy({ $0.body.kind == MemberJoin.kind || $0.body.kind == Profile.kind }) else {
            penalize(peer)
            return
        }
        for e in parsed {
            // A new member's join waits its turn to be listed.
            if e.body.kind == MemberJoin.kind, !state.isPresent(peer) { unlisted.append((peer, clock.now())) }
            applyHere(e, from: peer)
        }
        // Listed at once while the rate allows: a small room hears of a joiner as it comes.
        featureNewJoiners(now: clock.now())
        if let seq = parsed.map(\.id.seq).max() { send(.roster(.ack(seq: seq)), to: peer) }
    }

    /// `events` parsed, if every one is `peer`'s own, for this room.
    func ownEvents(_ events: [[UInt8]], from peer: NodeID) -> [RoomEvent]? {
        let parsed = events.compactMap { try? RoomEvent.parse($0[...], kinds: RoomEvents.table) }
        guard parsed.count == events.count, parsed.allSatisfy({ $0.id.author == peer && $0.room == room }) else { return nil }
        return parsed
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

    /// Whether the whole room hears of `id` coming and going: the host and
    /// the joiners the host listed (on the host, its own list, which a
    /// census shows a moment later). A relay's leave reaches those that
    /// hold a session with it (its parent, its children, the host); other
    /// members' views drop its position when it is no longer passed down
    /// (`TreeView`). A leave the host hears from one it listed goes on to
    /// the whole room, whether or not its author knew.
    func isListedRoomWide(_ id: NodeID) -> Bool {
        guard let state else { return false }
        if id == host { return true }
        return isHost ? state.listed.contains(id) : state.census?.joiners.contains(id) == true
    }

    /// The host lists the latest joiners and passes on their join and
    /// profile to the whole room, at most `censusNewJoiners` every
    /// `censusInterval` (a room joined by many at once costs everyone a
    /// bounded rate); those that joined while the rate was spent wait their
    /// turn, newest first, and are let go unlisted once `censusRefresh` old.
    func featureNewJoiners(now: Instant) {
        guard let state, !unlisted.isEmpty else { return }
        // Newest last; those past `censusRefresh` are let go unlisted.
        unlisted.removeAll { now - $0.at >= RoomConstants.censusRefresh || !state.isPresent($0.id) }
        while let newest = unlisted.last, featureBucket.allow(0, now: now) {
            unlisted.removeLast()
            guard let entry = state.presence.entries[newest.id], !state.listed.contains(newest.id) else { continue }
            state.listed.insert(newest.id, at: 0)
            gossip.broadcast(entry.join)
            if let p = state.profiles[newest.id] { gossip.broadcast(p) }
        }
        if state.listed.count > Census.maxJoiners * 2 {
            state.listed = Array(state.listed.filter(state.isPresent).prefix(Census.maxJoiners))
        }
    }
}
