import LVBCore
import LVBCrypto

/// A viewer's side of link-mic: idle, asking (repeating the request until the
/// host answers or it expires), or on stage. A value type: inputs in, actions
/// out; the room node performs them.
public struct LinkMicGuest: Sendable {
    public enum Phase: Equatable, Sendable {
        case idle
        case asking(request: UInt64, message: String, since: Instant, lastSent: Instant)
        case onStage(request: UInt64)
    }

    public private(set) var phase: Phase = .idle {
        didSet {
            switch oldValue {
            case let .asking(request, _, _, _), let .onStage(request): if phase == .idle { finished = request }
            case .idle: break
            }
        }
    }
    /// The request that ended last: the host's answers to it may still be on
    /// their way (its hangup after the room's stage event, a repeated answer).
    private var finished: UInt64?

    public init() {}

    /// The user asks to go on stage; `request` is a fresh random id.
    public mutating func ask(_ message: String, request: UInt64, host: NodeID, now: Instant) throws(LinkMicError) -> [LinkMicAction] {
        guard case .idle = phase else { throw .alreadyAsked }
        phase = .asking(request: request, message: message, since: now, lastSent: now)
        return [.send(.request(message: message), request: request, to: host)]
    }

    /// A signalling message from `peer`, already parsed. `host` is the room's
    /// host; `signedByHost` whether the signature verified against it.
    public mutating func receive(_ message: LinkMicMessage, from peer: NodeID, host: NodeID, me: NodeID) -> [LinkMicAction] {
        guard peer == host, message.isSigned(by: host) else {
            return [.output(.refused(peer, why: "link-mic answer not signed by the host"))]
        }
        switch (phase, message.body) {
        case let (.asking(request, _, _, _), .answer(guest, accepted, reason)) where request == message.request:
            guard guest == me else { return [.output(.refused(peer, why: "answer names another guest"))] }
            if accepted {
                phase = .onStage(request: request)
                return [.startPublishing, .output(.accepted)]
            }
            phase = .idle
            return [.output(.rejected(reason: reason))]
        case let (.onStage(request), .answer(_, true, _)) where request == message.request:
            return []  // the answer repeated for a request repeated before it arrived
        case let (.onStage(request), .hangup(reason)) where request == message.request:
            phase = .idle
            return [.stopPublishing, .output(.ended(reason))]
        case let (.asking(request, _, _, _), .hangup(reason)) where request == message.request:
            // Accepted and taken off again before the acceptance reached us.
            phase = .idle
            return [.output(.ended(reason))]
        case (_, .request):
            return [.output(.refused(peer, why: "only viewers ask to go on stage"))]
        case (.idle, _) where message.request == finished:
            return []  // late news of a request that has ended already
        default:
            return [.output(.refused(peer, why: "link-mic message for request \(String(message.request, radix: 16)), which is not ours now (replayed or late)"))]
        }
    }

    /// The user hangs up: leaves the stage, or withdraws the request.
    public mutating func hangUp(host: NodeID) throws(LinkMicError) -> [LinkMicAction] {
        switch phase {
        case .idle:
            throw .notOnStage
        case let .asking(request, _, _, _):
            phase = .idle
            return [.send(.hangup(.guestHungUp), request: request, to: host)]
        case let .onStage(request):
            phase = .idle
            return [.send(.hangup(.guestHungUp), request: request, to: host), .stopPublishing, .output(.ended(.guestHungUp))]
        }
    }

    /// Timers: repeat an unanswered request; give up after its lifetime.
    public mutating func tick(now: Instant, host: NodeID, me: NodeID) -> [LinkMicAction] {
        guard case let .asking(request, message, since, lastSent) = phase else { return [] }
        if now - since >= RoomConstants.linkMicRequestLifetime {
            phase = .idle
            return [.output(.expired(me))]
        }
        guard now - lastSent >= RoomConstants.linkMicRetry else { return [] }
        phase = .asking(request: request, message: message, since: since, lastSent: now)
        return [.send(.request(message: message), request: request, to: host)]
    }

    /// The host's session ended, or the room told us we are off stage.
    public mutating func stageLost(_ reason: StageReason) -> [LinkMicAction] {
        guard case .onStage = phase else {
            phase = .idle
            return []
        }
        phase = .idle
        return [.stopPublishing, .output(.ended(reason))]
    }
}
