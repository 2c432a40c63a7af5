import LVBCore
import LVBCrypto
import LVBGossip

/// PK in the room node (a host's): its `PKDesk` run on the node's clock,
/// its messages sent over the session with the other host, its outputs
/// handed to the owner.
extension RoomNode {
    /// Where this host's PK stands.
    public var pkPhase: PKDesk.Phase { pkDesk?.phase ?? .idle }

    /// The other host while a PK runs (its media is let in, like a member's).
    public var pkPartner: NodeID? {
        if case let .battle(_, _, host, _, _, _)? = pkDesk?.phase { return host }
        return nil
    }

    /// PK messages refused (forged, replayed, stale, out of turn, not a host's business).
    public var pkRefused: Int { pkDesk?.refused ?? 0 }

    private func desk() throws(RoomActionError) -> PKDesk {
        guard isHost else { throw .hostOnly }
        guard isAdmitted else { throw .notInRoom }
        return pkDesk ?? PKDesk(room: room, me: identity)
    }

    /// Asks the host of `other` (reached over a session the caller opened) for a PK of `minutes`.
    public func askPK(_ other: RoomID, host: NodeID, minutes: UInt8) throws(RoomActionError) {
        var d = try desk()
        do { performPK(try d.ask(other, host: host, minutes: minutes, pk: random.uint64(), now: clock.now(), wall: wallMs()), desk: d) }
        catch { throw .refused(error.description) }
    }

    public func acceptPK() throws(RoomActionError) {
        var d = try desk()
        do { performPK(try d.accept(now: clock.now(), wall: wallMs()), desk: d) } catch { throw .refused(error.description) }
    }

    public func rejectPK(reason: String) throws(RoomActionError) {
        var d = try desk()
        do { performPK(try d.reject(reason: reason, now: clock.now(), wall: wallMs()), desk: d) } catch { throw .refused(error.description) }
    }

    /// Ends the PK, or withdraws this host's request.
    public func endPK() throws(RoomActionError) {
        var d = try desk()
        do { performPK(try d.end(now: clock.now(), wall: wallMs()), desk: d) } catch { throw .refused(error.description) }
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

    /// Keeps `desk`'s new state, then sends and reports what it asked.
    func performPK(_ actions: [PKAction], desk: PKDesk? = nil) {
        if let desk { pkDesk = desk }
        for action in actions {
            switch action {
            case let .send(m, peer): send(.pk(m), to: peer)
            case .output(let output): onOutput?(.pk(output))
            }
        }
    }
}
