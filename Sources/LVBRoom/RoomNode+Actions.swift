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
    /// Signs, applies locally and broadcasts one of our own events
    /// (`broadcast` false: for the few it is sent to straight).
    @discardableResult
    func publish(_ body: EventBody, broadcast: Bool = true) -> Result<RoomEvent, RoomActionError> {
        guard let state else { return .failure(.notInRoom) }
        let speech = body.kind == ChatLine.kind || body.kind == BulletComment.kind
        if speech, state.isChatBusy() {
            return .failure(.refused("the room is busy: it carries \(state.roomChatRate) chat lines a second (the host's chat rate); say it again in a moment"))
        }
        // The room hears a viewer's name when it first speaks (its profile
        // went to the host alone when it joined).
        if broadcast, speech || body.kind == Gift.kind, !profileSpoken, !isHost,
           let p = state.byAuthor[Profile.kind]?[core.nodeID] {
            profileSpoken = true
            gossip.broadcast(p)
        }
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
        if body.kind == Profile.kind { profileSpoken = broadcast }
        if broadcast { gossip.broadcast(event) }
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

    /// An invite for `id` to this invite-only (or password) room, valid a day.
    public func makeInvite(for id: NodeID) throws(RoomActionError) -> Invite {
        guard let policy else { throw .hostOnly }
        return policy.makeInvite(for: id, validFor: RoomConstants.inviteLifetime)
    }

    /// Finds a member by node id (or its start) or nickname, among those
    /// this node knows (the host: everyone that joined).
    public func member(named text: String) throws(RoomActionError) -> NodeID {
        guard let state else { throw .notInRoom }
        let needle = text.lowercased()
        let known = state.known
        if let m = known.first(where: { $0.id.text == needle }) { return m.id }
        let byNick = known.filter { $0.profile?.nickname?.lowercased() == needle }
        if byNick.count == 1 { return byNick[0].id }
        let byPrefix = known.filter { $0.id.text.hasPrefix(needle) }
        if byPrefix.count == 1, needle.count >= 4 { return byPrefix[0].id }
        throw .unknownMember(text)
    }
}
