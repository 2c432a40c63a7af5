import LVBCore
import LVBCrypto
import LVBGossip

/// PK in the room node (a host's): its `PKDesk` run on the node's clock,
/// its messages sent over the session with the other host, its outputs
/// handed to the owner, and the battle shown to the room as the host's
/// signed `PKBattle` events (this side's score from the room's likes and
/// gift points since the start, the other side's with its host's proof).
extension RoomNode {
    /// Where this host's PK stands.
    public var pkPhase: PKDesk.Phase { pkDesk?.phase ?? .idle }

    /// The other host while a PK runs (its media is let in, like a member's).
    public var pkPartner: NodeID? {
        if case let .battle(_, _, host, _, _, _)? = pkDesk?.phase { return host }
        return nil
    }

    /// The other room's title in the PK asked or running.
    public var pkOtherTitle: String { pkDesk?.otherTitle ?? "" }

    /// PK messages refused (forged, replayed, stale, out of turn, not a host's business).
    public var pkRefused: Int { pkDesk?.refused ?? 0 }

    private func desk() throws(RoomActionError) -> PKDesk {
        guard isHost else { throw .hostOnly }
        guard isAdmitted else { throw .notInRoom }
        return pkDesk ?? PKDesk(room: room, me: identity)
    }

    /// Asks the host of `other` (reached over a session the caller opened)
    /// for a PK of `minutes`; `theirTitle` is the other room's, as listed.
    public func askPK(_ other: RoomID, host: NodeID, minutes: UInt8, theirTitle: String = "") throws(RoomActionError) {
        var d = try desk()
        let title = state?.info.title ?? ""
        do {
            performPK(try d.ask(other, host: host, minutes: minutes, title: title, theirTitle: theirTitle,
                                pk: random.uint64(), now: clock.now(), wall: wallMs()), desk: d)
        } catch { throw .refused(error.description) }
    }

    public func acceptPK() throws(RoomActionError) {
        var d = try desk()
        do { performPK(try d.accept(now: clock.now(), wall: wallMs()), desk: d) } catch { throw .refused(error.description) }
    }

    public func rejectPK(reason: String) throws(RoomActionError) {
        var d = try desk()
        do { performPK(try d.reject(reason: reason, now: clock.now(), wall: wallMs()), desk: d) } catch { throw .refused(error.description) }
    }

    /// Ends the PK, or withdraws this host's request (`reason`: why the other room is told).
    public func endPK(_ reason: PKEndReason = .ended) throws(RoomActionError) {
        var d = try desk()
        do { performPK(try d.end(reason, now: clock.now(), wall: wallMs()), desk: d) } catch { throw .refused(error.description) }
    }

    /// This host's room is closing or it is leaving: the other room hears it
    /// now (its PK ends, its request is declined) rather than after silence.
    func pkRoomClosing() {
        switch pkDesk?.phase {
        case .asking?, .battle?: try? endPK(.roomClosed)
        case .asked?: try? rejectPK(reason: "the room is closing")
        case .idle?, nil: break
        }
    }

    func handlePK(_ message: PKMessage, from peer: NodeID) {
        guard isHost, isAdmitted else {
            // Not a host: no PK business here; counted like any refused message.
            unknownRoomMessages += 1
            return
        }
        var d = pkDesk ?? PKDesk(room: room, me: identity)
        let actions = d.receive(message, from: peer, now: clock.now(), wall: wallMs())
        performPK(actions, desk: d)
        if actions.contains(where: { if case .output(.refused) = $0 { true } else { false } }) { penalize(peer) }
    }

    /// PK timers and the battle's score, with the room's tick.
    func tickPK(now: Instant) {
        guard pkDesk != nil else { return }
        let ours = pkScore
        performPK(pkDesk?.tick(now: now, wall: wallMs(), score: ours) ?? [])
        guard var run = pkRun, now - run.published >= RoomConstants.pkScoreInterval else { return }
        let theirs = pkDesk?.theirs
        let proof = theirs?.proof.encoded ?? run.battle.proof
        guard ours != run.battle.ours || (theirs?.score ?? run.battle.theirs) != run.battle.theirs else { return }
        run.battle.stage = .score
        run.battle.ours = ours
        run.battle.top = pkGivers(since: run.givers)
        run.battle.theirs = theirs?.score ?? run.battle.theirs
        run.battle.proof = proof
        run.published = now
        pkRun = run
        _ = publish(.pkBattle(run.battle))
    }

    /// This side's top givers since the battle began (their gift points then: `base`).
    private func pkGivers(since base: [NodeID: UInt64]) -> [GiftRank.Entry] {
        state?.gifts.top(PKBattle.maxGivers, since: base) ?? []
    }

    /// This side's score: the room's likes and gift points since the battle began.
    private var pkScore: UInt64 {
        guard let state, let run = pkRun else { return 0 }
        let now = state.likeTotal &+ state.gifts.total
        return now > run.base ? now - run.base : 0
    }

    /// Keeps `desk`'s new state, then sends and reports what it asked.
    func performPK(_ actions: [PKAction], desk: PKDesk? = nil) {
        if let desk { pkDesk = desk }
        for action in actions {
            switch action {
            case let .send(m, peer): send(.pk(m), to: peer)
            case .output(let output):
                switch output {
                case let .started(other, host, _, endsAt): beginBattle(other, host: host, endsAt: endsAt)
                case .ended(_, let why): endBattle(why)
                default: break
                }
                onOutput?(.pk(output))
            }
        }
    }

    private func beginBattle(_ other: RoomID, host: NodeID, endsAt: Instant) {
        guard let state, case let .battle(pk, _, _, _, _, _)? = pkDesk?.phase else { return }
        let now = clock.now()
        let wallEnd = wallMs() + UInt64(max(0, (endsAt - now).milliseconds))
        let battle = PKBattle(stage: .started, pk: pk, otherRoom: other, otherHost: host, endsAt: wallEnd, ending: nil,
                              ours: 0, theirs: 0, title: pkDesk?.otherTitle ?? "", proof: [])
        pkRun = (battle, state.likeTotal &+ state.gifts.total, state.gifts.points, now)
        _ = publish(.pkBattle(battle))
    }

    private func endBattle(_ why: PKEnding) {
        guard let run = pkRun else { return }
        var battle = run.battle
        battle.ours = pkScore
        battle.top = pkGivers(since: run.givers)
        if let theirs = pkDesk?.theirs, theirs.proof.pk == battle.pk {
            battle.theirs = theirs.score
            battle.proof = theirs.proof.encoded
        }
        battle.stage = .over
        switch why {
        case .byUs: battle.ending = .endedHere
        case .byThem(.ended): battle.ending = .endedThere
        case .byThem(.roomClosed): battle.ending = .otherClosed
        case .byThem(.timeUp), .timeUp: battle.ending = .timeUp
        case .silent: battle.ending = .otherSilent
        }
        pkRun = nil
        _ = publish(.pkBattle(battle))
    }
}
