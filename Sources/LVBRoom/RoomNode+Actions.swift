import LVBCore
import LVBCrypto
import LVBGossip

/// Why a user action was refused.
public enum RoomActionError: Error, Equatable, CustomStringConvertible {
    /// Not admitted yet.
    case notInRoom
    /// Only the host may do that.
    case hostOnly
    /// The event is invalid (too long, control characters…); the text says how.
    case invalid(String)
    /// The room refused it (muted, rate limited, closed…).
    case refused(String)
    /// No member matches that name or id.
    case unknownMember(String)

    public var description: String {
        switch self {
        case .notInRoom: "not in the room yet; wait for the host to admit you"
        case .hostOnly: "only the host can do that"
        case let .invalid(why): why
        case let .refused(why): why
        case let .unknownMember(who): "no member called '\(who)'; /viewers lists them"
        }
    }
}

extension RoomNode {
    /// Signs, applies locally and broadcasts one of our own events.
    @discardableResult
    func publish(_ body: EventBody) -> Result<RoomEvent, RoomActionError> {
        guard let state else { return .failure(.notInRoom) }
        seq += 1
        let event: RoomEvent
        do { event = try RoomEvent.make(room: room, author: identity, seq: seq, timestamp: wallMs(), body: body) } catch {
            return .failure(.invalid("\(error)"))
        }
        switch state.apply(event) {
        case .accepted(let changes):
            changes.forEach(report)
        case .duplicate:
            break
        case .rejected(let why):
            return .failure(.refused(Self.explain(why)))
        }
        gossip.broadcast(event)
        return .success(event)
    }

    static func explain(_ why: RoomState.RoomRejection) -> String {
        switch why {
        case .authorMuted: "you are muted by the host"
        case .rateLimited: "slow down: too many messages, likes or profile changes per second"
        case .roomClosed: "the room is closed"
        case .authorKicked: "you were kicked from this room"
        default: "refused: \(why)"
        }
    }

    public func chat(_ text: String) throws(RoomActionError) { try publish(.chat(text: text)).get() }

    public func danmaku(_ text: String, color: UInt32 = 0xFFFFFF, lane: UInt8 = 0) throws(RoomActionError) {
        try publish(.danmaku(text: text, color: color, lane: lane)).get()
    }

    /// Adds `count` likes (the event carries this node's running total).
    public func like(_ count: UInt64 = 1) throws(RoomActionError) {
        guard let state else { throw .notInRoom }
        // Our running total is whatever the room holds for us (history
        // included, so a restarted node continues from its earlier count).
        try publish(.like(total: state.likes(of: core.nodeID) + max(1, count))).get()
    }

    public func setProfile(_ p: Profile) throws(RoomActionError) {
        profile = p
        guard state != nil, startInfo == nil else { return }
        try publish(.profile(p)).get()
    }

    public func setRoomInfo(_ info: RoomInfo) throws(RoomActionError) {
        guard isHost else { throw .hostOnly }
        try publish(.roomInfo(info)).get()
    }

    public func kick(_ target: NodeID) throws(RoomActionError) {
        guard isHost else { throw .hostOnly }
        let event = try publish(.kick(target: target)).get()
        // Tell the target directly too: it may not be our gossip neighbour.
        try? core.send(GossipMessage.repair(event.encoded[...]).bytes, channel: .gossip, to: target)
    }

    public func mute(_ target: NodeID, _ muted: Bool = true) throws(RoomActionError) {
        guard isHost else { throw .hostOnly }
        try publish(.mute(target: target, muted: muted)).get()
    }

    public func closeRoom() throws(RoomActionError) {
        guard isHost else { throw .hostOnly }
        let event = try publish(.roomClosed).get()
        // Everyone must hear this one: tell every session directly as well.
        let repair = GossipMessage.repair(event.encoded[...]).bytes
        for p in core.peers where p.established { try? core.send(repair, channel: .gossip, to: p.id) }
    }

    /// An invite for `id` to this invite-only (or password) room, valid a day.
    public func makeInvite(for id: NodeID) throws(RoomActionError) -> Invite {
        guard let policy else { throw .hostOnly }
        return policy.makeInvite(for: id, validFor: RoomConstants.inviteLifetime)
    }

    /// Finds a member by node id (or its start) or nickname.
    public func member(named text: String) throws(RoomActionError) -> NodeID {
        guard let state else { throw .notInRoom }
        let needle = text.lowercased()
        if let m = state.members.first(where: { $0.id.text == needle }) { return m.id }
        let byNick = state.members.filter { $0.profile?.nickname?.lowercased() == needle }
        if byNick.count == 1 { return byNick[0].id }
        let byPrefix = state.members.filter { $0.id.text.hasPrefix(needle) }
        if byPrefix.count == 1, needle.count >= 4 { return byPrefix[0].id }
        throw .unknownMember(text)
    }
}
