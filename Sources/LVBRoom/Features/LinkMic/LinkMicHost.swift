import LVBCore
import LVBCrypto

/// What a link-mic state machine asks its owner to do.
public enum LinkMicAction: Equatable, Sendable {
    /// Send this signalling message (signed by the owner) to `peer`.
    case send(LinkMicMessage.Body, request: UInt64, to: NodeID)
    /// Tell the user interfaces.
    case output(LinkMicOutput)
    /// Host: start mixing this guest (subscribe to its stream, give it a mix
    /// without itself) and tell the room it is on stage.
    case stageOn(NodeID)
    /// Host: stop mixing this guest and tell the room why.
    case stageOff(NodeID, StageReason)
    /// Guest: start publishing to the host (accepted).
    case startPublishing
    /// Guest: stop publishing (hung up, taken off stage, host gone).
    case stopPublishing
}

/// What link-mic signalling reports to the user interfaces.
public enum LinkMicOutput: Equatable, Sendable {
    /// Host: a viewer asks to go on stage.
    case request(NodeID, message: String)
    /// Host: a request went unanswered for `RoomConstants.linkMicRequestLifetime`
    /// (or the viewer withdrew it); guest: our own request got no answer.
    case expired(NodeID)
    /// Guest: the host accepted; we are on stage.
    case accepted
    /// Guest: the host said no.
    case rejected(reason: String)
    /// Guest: our stage session ended (host hung up, silence, we hung up).
    case ended(StageReason)
    /// A signalling message that does not count: not from the host, a bad
    /// signature, the wrong room, or an answer to a request we are not making.
    case refused(NodeID, why: String)
}

/// Why a user's link-mic command was refused.
public enum LinkMicError: Error, Equatable, CustomStringConvertible {
    case noRequest(String)
    case stageFull(Int)
    case alreadyAsked
    case notOnStage
    case hostCannotAsk

    public var description: String {
        switch self {
        case let .noRequest(who): "\(who) has not asked to go on stage (or the request expired); requests show as linkmic_request"
        case let .stageFull(n): "the stage is full (\(n) co-hosts, --max-guests); /hangup one first"
        case .alreadyAsked: "already asked or on stage; /hangup withdraws the request or leaves the stage"
        case .notOnStage: "nobody to hang up on: not on stage and no request pending"
        case .hostCannotAsk: "the host is always on stage; /linkmic is for viewers"
        }
    }
}

/// The host's side of link-mic: requests waiting for an answer, the guests
/// on stage, and answers already given (a repeated request gets the same
/// answer, so a lost answer costs one retry). A value type: inputs in,
/// actions out; the room node performs them.
public struct LinkMicHost: Sendable {
    public struct Pending: Equatable, Sendable {
        public let request: UInt64
        public let message: String
        public let since: Instant
    }

    public let maxGuests: Int
    public private(set) var pending: [NodeID: Pending] = [:]
    /// Guests on stage in the order they came on (the layout's order), with
    /// their request ids and when the acceptance last went out.
    public private(set) var guests: [(id: NodeID, request: UInt64, since: Instant, answered: Instant)] = []
    private var answered: [UInt64: (guest: NodeID, body: LinkMicMessage.Body)] = [:]
    private var answeredOrder: [UInt64] = []

    public init(maxGuests: Int) { self.maxGuests = max(0, maxGuests) }

    public func isOnStage(_ id: NodeID) -> Bool { guests.contains { $0.id == id } }

    /// A verified request from `peer`.
    public mutating func receiveRequest(_ request: UInt64, message: String, from peer: NodeID, now: Instant) -> [LinkMicAction] {
        if let given = answered[request] {
            guard given.guest == peer else { return [.output(.refused(peer, why: "request id already used by another member"))] }
            return [.send(given.body, request: request, to: peer)]
        }
        if let stage = guests.first(where: { $0.id == peer }), stage.request != request {
            // A new request while on stage: the old session is over for the guest.
            return takeOff(peer, .guestHungUp) + receiveRequest(request, message: message, from: peer, now: now)
        }
        if pending[peer]?.request == request { return [] }
        guard maxGuests > 0 else {
            // Link-mic is off here: say so at once rather than let it expire.
            let body = LinkMicMessage.Body.answer(guest: peer, accepted: false, reason: "this room takes no co-hosts")
            remember(request, peer, body)
            return [.send(body, request: request, to: peer)]
        }
        pending[peer] = Pending(request: request, message: message, since: now)
        return [.output(.request(peer, message: message))]
    }

    /// The host accepts `peer`'s pending request.
    public mutating func accept(_ peer: NodeID, now: Instant) throws(LinkMicError) -> [LinkMicAction] {
        guard let p = pending[peer] else { throw .noRequest(peer.short) }
        guard guests.count < maxGuests else { throw .stageFull(maxGuests) }
        pending[peer] = nil
        let body = LinkMicMessage.Body.answer(guest: peer, accepted: true, reason: "")
        remember(p.request, peer, body)
        guests.append((peer, p.request, now, now))
        return [.send(body, request: p.request, to: peer), .stageOn(peer)]
    }

    /// The host rejects `peer`'s pending request.
    public mutating func reject(_ peer: NodeID, reason: String) throws(LinkMicError) -> [LinkMicAction] {
        guard let p = pending.removeValue(forKey: peer) else { throw .noRequest(peer.short) }
        let body = LinkMicMessage.Body.answer(guest: peer, accepted: false, reason: LinkMicMessage.cut(reason))
        remember(p.request, peer, body)
        return [.send(body, request: p.request, to: peer)]
    }

    /// The host ends `peer`'s stage session.
    public mutating func hangUp(_ peer: NodeID) throws(LinkMicError) -> [LinkMicAction] {
        guard let stage = guests.first(where: { $0.id == peer }) else { throw .notOnStage }
        return [.send(.hangup(.hostHungUp), request: stage.request, to: peer)] + takeOff(peer, .hostHungUp)
    }

    /// A verified hangup from `peer` for `request`: it leaves the stage or withdraws its request.
    public mutating func receiveHangup(_ request: UInt64, from peer: NodeID) -> [LinkMicAction] {
        if let stage = guests.first(where: { $0.id == peer }), stage.request == request {
            return takeOff(peer, .guestHungUp)
        }
        if pending[peer]?.request == request {
            pending[peer] = nil
            return [.output(.expired(peer))]
        }
        return []
    }

    /// Timers: requests expire; a guest whose media has not arrived for
    /// `guestSilence` (counted from when it came on stage) is taken off
    /// (`lastMedia` nil: this host takes no media, so silence means nothing).
    public mutating func tick(now: Instant, lastMedia: ((NodeID) -> Instant?)?) -> [LinkMicAction] {
        var actions: [LinkMicAction] = []
        for (peer, p) in pending where now - p.since >= RoomConstants.linkMicRequestLifetime {
            pending[peer] = nil
            actions.append(.output(.expired(peer)))
        }
        guard let lastMedia else { return actions }
        for (i, stage) in guests.enumerated().reversed() {
            let media = lastMedia(stage.id)
            let heard = max(stage.since, media ?? stage.since)
            if now - heard >= RoomConstants.guestSilence {
                actions += [.send(.hangup(.silent), request: stage.request, to: stage.id)] + takeOff(stage.id, .silent)
            } else if media == nil, now - stage.answered >= RoomConstants.linkMicAnswerRepeat {
                // No media yet: the acceptance may have been lost; say it
                // again rather than wait for the guest's next request.
                guests[i].answered = now
                actions.append(.send(.answer(guest: stage.id, accepted: true, reason: ""), request: stage.request, to: stage.id))
            }
        }
        return actions
    }

    /// `peer` left the room or its session ended.
    public mutating func peerGone(_ peer: NodeID) -> [LinkMicAction] {
        var actions: [LinkMicAction] = []
        if pending.removeValue(forKey: peer) != nil { actions.append(.output(.expired(peer))) }
        if isOnStage(peer) { actions += takeOff(peer, .left) }
        return actions
    }

    private mutating func takeOff(_ peer: NodeID, _ reason: StageReason) -> [LinkMicAction] {
        guests.removeAll { $0.id == peer }
        return [.stageOff(peer, reason)]
    }

    private mutating func remember(_ request: UInt64, _ guest: NodeID, _ body: LinkMicMessage.Body) {
        answered[request] = (guest, body)
        answeredOrder.append(request)
        if answeredOrder.count > RoomConstants.linkMicAnswersKept {
            answered[answeredOrder.removeFirst()] = nil
        }
    }
}
