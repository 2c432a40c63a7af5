import LVBCore
import LVBCrypto
import LVBGossip

/// PK, a room feature (a host's): its `PKDesk` run on the node's clock, its
/// messages sent over the session with the other host, its outputs handed
/// to the owner (`RoomOutput.pk`: the media side starts and ends the
/// partner's stream from them), and the battle shown to the room as the
/// host's signed `PKBattle` events (this side's score from the room's likes
/// and gift points since the start, the other side's with its host's proof).
final class PK: RoomFeature {
    unowned let node: RoomNode
    private var desk: PKDesk?
    /// The battle this host shows its room while a PK runs: what it last
    /// published, the room's likes and gift points when it began, and when.
    private var run: (battle: PKBattle, base: UInt64, givers: [NodeID: UInt64], published: Instant)?

    init(node: RoomNode) { self.node = node }

    static let kinds: [any RoomEventRule.Type] = [PKBattle.self]
    static let messages: [any RoomMessageContent.Type] = [PKMessage.self]

    var phase: PKDesk.Phase { desk?.phase ?? .idle }
    var otherTitle: String { desk?.otherTitle ?? "" }
    var refused: Int { desk?.refused ?? 0 }

    /// The other host while a PK runs (its media is let in, like a member's).
    var partner: NodeID? {
        if case let .battle(_, _, host, _, _, _)? = desk?.phase { return host }
        return nil
    }

    func needsSession(with peer: NodeID) -> Bool { desk?.otherHost == peer }

    private func current() throws(RoomActionError) -> PKDesk {
        guard node.isHost else { throw .hostOnly }
        guard node.isAdmitted else { throw .notInRoom }
        return desk ?? PKDesk(room: node.room, me: node.identity)
    }

    func ask(_ other: RoomID, host: NodeID, minutes: UInt8, theirTitle: String) throws(RoomActionError) {
        var d = try current()
        let title = node.state?.info.title ?? ""
        do {
            perform(try d.ask(other, host: host, minutes: minutes, title: title, theirTitle: theirTitle,
                              pk: node.random.uint64(), now: node.clock.now(), wall: node.wallMs()), desk: d)
        } catch { throw .refused(error.description) }
    }

    func accept() throws(RoomActionError) {
        var d = try current()
        do { perform(try d.accept(now: node.clock.now(), wall: node.wallMs()), desk: d) } catch { throw .refused(error.description) }
    }

    func reject(reason: String) throws(RoomActionError) {
        var d = try current()
        do { perform(try d.reject(reason: reason, now: node.clock.now(), wall: node.wallMs()), desk: d) } catch { throw .refused(error.description) }
    }

    func end(_ reason: PKEndReason) throws(RoomActionError) {
        var d = try current()
        do { perform(try d.end(reason, now: node.clock.now(), wall: node.wallMs()), desk: d) } catch { throw .refused(error.description) }
    }

    /// This host's room is closing or it is leaving: the other room hears it
    /// now (its PK ends, its request is declined) rather than after silence.
    func leaving() {
        switch desk?.phase {
        case .asking?, .battle?: try? end(.roomClosed)
        case .asked?: try? reject(reason: "the room is closing")
        case .idle?, nil: break
        }
    }

    func receive(_ message: PKMessage, from peer: NodeID) {
        guard node.isHost, node.isAdmitted else {
            // Not a host: no PK business here; counted like any refused message.
            node.unknownRoomMessages += 1
            return
        }
        var d = desk ?? PKDesk(room: node.room, me: node.identity)
        let actions = d.receive(message, from: peer, now: node.clock.now(), wall: node.wallMs())
        perform(actions, desk: d)
        if actions.contains(where: { if case .output(.refused) = $0 { true } else { false } }) { node.penalize(peer) }
    }

    /// PK timers and the battle's score, with the room's tick.
    func tick(now: Instant) {
        guard node.isHost, desk != nil else { return }
        let ours = score
        perform(desk?.tick(now: now, wall: node.wallMs(), score: ours) ?? [])
        guard var run, now - run.published >= RoomConstants.pkScoreInterval else { return }
        let theirs = desk?.theirs
        let proof = theirs?.proof.encoded ?? run.battle.proof
        guard ours != run.battle.ours || (theirs?.score ?? run.battle.theirs) != run.battle.theirs else { return }
        run.battle.stage = .score
        run.battle.ours = ours
        run.battle.top = givers(since: run.givers)
        run.battle.theirs = theirs?.score ?? run.battle.theirs
        run.battle.proof = proof
        run.published = now
        self.run = run
        _ = node.publish(.pkBattle(run.battle))
    }

    /// This side's top givers since the battle began (their gift points then: `base`).
    private func givers(since base: [NodeID: UInt64]) -> [GiftRank.Entry] {
        node.state?.gifts.top(PKBattle.maxGivers, since: base) ?? []
    }

    /// This side's score: the room's likes and gift points since the battle began.
    private var score: UInt64 {
        guard let state = node.state, let run else { return 0 }
        let now = state.likeTotal &+ state.gifts.total
        return now > run.base ? now - run.base : 0
    }

    /// Keeps `desk`'s new state, then sends and reports what it asked.
    private func perform(_ actions: [PKAction], desk: PKDesk? = nil) {
        if let desk { self.desk = desk }
        for action in actions {
            switch action {
            case let .send(m, peer): node.send(.pk(m), to: peer)
            case .output(let output):
                switch output {
                case let .started(other, host, _, endsAt): beginBattle(other, host: host, endsAt: endsAt)
                case .ended(_, let why): endBattle(why)
                default: break
                }
                node.show(output)
            }
        }
    }

    private func beginBattle(_ other: RoomID, host: NodeID, endsAt: Instant) {
        guard let state = node.state, case let .battle(pk, _, _, _, _, _)? = desk?.phase else { return }
        let now = node.clock.now()
        let wallEnd = node.wallMs() + UInt64(max(0, (endsAt - now).milliseconds))
        let battle = PKBattle(stage: .started, pk: pk, otherRoom: other, otherHost: host, endsAt: wallEnd, ending: nil,
                              ours: 0, theirs: 0, title: desk?.otherTitle ?? "", proof: [])
        run = (battle, state.likeTotal &+ state.gifts.total, state.gifts.points, now)
        _ = node.publish(.pkBattle(battle))
    }

    private func endBattle(_ why: PKEnding) {
        guard let run else { return }
        var battle = run.battle
        battle.ours = score
        battle.top = givers(since: run.givers)
        if let theirs = desk?.theirs, theirs.proof.pk == battle.pk {
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
        self.run = nil
        _ = node.publish(.pkBattle(battle))
    }
}

/// The PK as the node's owner (console, page, the rendezvous's dialler) reaches it.
extension RoomNode {
    /// The running PK battle (its timer, both scores) and this side's givers as text; nil: no battle runs.
    public func pkBattleNotice() -> RoomNotice? {
        guard let battle = state?.pkBattle, battle.ending == nil else { return nil }
        return RoomNotice(battle.line(names), human: battle.giversText(names), tag: "pk")
    }

    /// Where this host's PK stands.
    public var pkPhase: PKDesk.Phase { feature(PK.self)?.phase ?? .idle }

    /// The other host while a PK runs (its media is let in, like a member's).
    public var pkPartner: NodeID? { feature(PK.self)?.partner }

    /// The other room's title in the PK asked or running.
    public var pkOtherTitle: String { feature(PK.self)?.otherTitle ?? "" }

    /// PK messages refused (forged, replayed, stale, out of turn, not a host's business).
    public var pkRefused: Int { feature(PK.self)?.refused ?? 0 }

    /// Asks the host of `other` (reached over a session the caller opened)
    /// for a PK of `minutes`; `theirTitle` is the other room's, as listed.
    public func askPK(_ other: RoomID, host: NodeID, minutes: UInt8, theirTitle: String = "") throws(RoomActionError) {
        try pk().ask(other, host: host, minutes: minutes, theirTitle: theirTitle)
    }

    public func acceptPK() throws(RoomActionError) { try pk().accept() }

    public func rejectPK(reason: String) throws(RoomActionError) { try pk().reject(reason: reason) }

    /// Ends the PK, or withdraws this host's request (`reason`: why the other room is told).
    public func endPK(_ reason: PKEndReason = .ended) throws(RoomActionError) { try pk().end(reason) }

    private func pk() throws(RoomActionError) -> PK {
        guard let pk = feature(PK.self) else { throw .hostOnly }
        return pk
    }
}
