import LVBCore
import LVBCrypto
import LVBGossip

/// What the PK desk wants done.
public enum PKAction: Equatable, Sendable {
    case send(PKMessage, to: NodeID)
    case output(PKOutput)
}

/// What a host hears of PK.
public enum PKOutput: Equatable, Sendable {
    /// Another host asks for a PK of `minutes` (answer with accept or reject); `title` is its room's.
    case requested(room: RoomID, host: NodeID, minutes: UInt8, title: String)
    /// Our request went out to the host of `room` (its title as listed).
    case asking(room: RoomID, title: String, minutes: UInt8)
    /// The other host said no to ours (or our request expired: reason "no answer").
    case rejected(room: RoomID, reason: String)
    /// A request ended before any battle: withdrawn by its asker (or by us),
    /// or left unanswered here until it expired.
    case withdrawn(room: RoomID)
    /// The PK runs: both rooms' timer ends at `endsAt` (this node's clock).
    case started(room: RoomID, host: NodeID, minutes: UInt8, endsAt: Instant)
    /// The PK ended: by us, by them, the time ran out, or the other host fell silent.
    case ended(room: RoomID, why: PKEnding)
    /// A PK message was refused (forged, replayed, stale, out of turn); counted.
    case refused(String)
}

public enum PKEnding: Equatable, Sendable, CustomStringConvertible {
    case byUs, byThem(PKEndReason), timeUp, silent

    public var description: String {
        switch self {
        case .byUs: "ended"
        case .byThem(let r): r == .ended ? "ended_by_other" : r.description
        case .timeUp: "time_up"
        case .silent: "other_host_silent"
        }
    }
}

public enum PKError: Error, Equatable, CustomStringConvertible {
    case busy, nothingToAnswer, notInPK, ownRoom, badMinutes

    public var description: String {
        switch self {
        case .busy: "already in a PK or asking for one: /pk end first"
        case .nothingToAnswer: "no PK request is waiting"
        case .notInPK: "not in a PK"
        case .ownRoom: "a PK is with another room"
        case .badMinutes: "a PK lasts 1 to 60 minutes"
        }
    }
}

/// One host's PK signalling, sans-IO: asking, answering, the battle's
/// keepalives and its end (`/pk`). Every message is signed by its sender
/// and checked here against the session's peer, the rooms, the PK's id and
/// the sender's clock (within `freshness` of ours), so a forged, replayed
/// or stale one is refused and counted.
public struct PKDesk {
    public enum Phase: Equatable, Sendable {
        case idle
        case asking(pk: UInt64, room: RoomID, host: NodeID, minutes: UInt8, since: Instant)
        case asked(pk: UInt64, room: RoomID, host: NodeID, minutes: UInt8, since: Instant)
        case battle(pk: UInt64, room: RoomID, host: NodeID, endsAt: Instant, heard: Instant, said: Instant)
    }

    public private(set) var phase: Phase = .idle
    /// The other room's host while a PK is asked, answered or under way.
    public var otherHost: NodeID? {
        switch phase {
        case .idle: nil
        case let .asking(_, _, host, _, _), let .asked(_, _, host, _, _), let .battle(_, _, host, _, _, _): host
        }
    }
    public private(set) var refused = 0
    /// The other room's title (its request's, or the rendezvous's when we asked).
    public private(set) var otherTitle = ""
    /// The other host's latest score in the battle and its keepalive that says so (the proof a room is shown).
    public private(set) var theirs: (score: UInt64, proof: PKMessage)?
    let room: RoomID
    let me: Identity
    /// Request ids already seen (a replay of one is refused), until they are stale.
    private var seen: [UInt64: Instant] = [:]
    /// PKs that ended here lately: the other side's end or keepalive crossing ours is no misbehaviour.
    private var over: [UInt64: Instant] = [:]

    /// A message whose sender's clock is further than this from ours is stale.
    public static let freshness: Duration = .seconds(30)
    /// A request not answered by then expires.
    public static let requestLifetime: Duration = .seconds(30)
    /// During a PK each side says it is there this often; one silent for `silence` has left.
    public static let aliveInterval: Duration = .seconds(1)
    public static let silence: Duration = .seconds(3)

    public init(room: RoomID, me: Identity) {
        self.room = room
        self.me = me
    }

    /// Back to idle: PK `pk` is over.
    private mutating func finish(_ pk: UInt64, now: Instant) {
        phase = .idle
        over[pk] = now
    }

    private func message(to other: RoomID, pk: UInt64, wall: UInt64, _ body: PKMessage.Body) -> PKMessage {
        PKMessage(from: room, to: other, pk: pk, sent: wall, body: body, sender: me)
    }

    /// Asks the host of `other` for a PK of `minutes`.
    /// `title` is our room's, `theirTitle` the other's as the room list says.
    public mutating func ask(_ other: RoomID, host: NodeID, minutes: UInt8, title: String, theirTitle: String,
                             pk: UInt64, now: Instant, wall: UInt64) throws(PKError) -> [PKAction] {
        guard phase == .idle else { throw .busy }
        guard other != room else { throw .ownRoom }
        guard PKMessage.minutes.contains(minutes) else { throw .badMinutes }
        phase = .asking(pk: pk, room: other, host: host, minutes: minutes, since: now)
        otherTitle = theirTitle
        theirs = nil
        return [.send(message(to: other, pk: pk, wall: wall, .request(minutes: minutes, title: title)), to: host),
                .output(.asking(room: other, title: theirTitle, minutes: minutes))]
    }

    /// Accepts the request waiting: the PK starts on both sides.
    public mutating func accept(now: Instant, wall: UInt64) throws(PKError) -> [PKAction] {
        guard case let .asked(pk, other, host, minutes, _) = phase else { throw .nothingToAnswer }
        let endsAt = now + .seconds(Int64(minutes) * 60)
        phase = .battle(pk: pk, room: other, host: host, endsAt: endsAt, heard: now, said: now)
        return [.send(message(to: other, pk: pk, wall: wall, .answer(accepted: true, reason: "")), to: host),
                .output(.started(room: other, host: host, minutes: minutes, endsAt: endsAt))]
    }

    public mutating func reject(reason: String, now: Instant, wall: UInt64) throws(PKError) -> [PKAction] {
        guard case let .asked(pk, other, host, _, _) = phase else { throw .nothingToAnswer }
        finish(pk, now: now)
        return [.send(message(to: other, pk: pk, wall: wall, .answer(accepted: false, reason: reason)), to: host)]
    }

    /// Ends the PK, or withdraws our request.
    public mutating func end(_ reason: PKEndReason = .ended, now: Instant, wall: UInt64) throws(PKError) -> [PKAction] {
        switch phase {
        case let .asking(pk, other, host, _, _):
            finish(pk, now: now)
            return [.send(message(to: other, pk: pk, wall: wall, .end(reason)), to: host), .output(.withdrawn(room: other))]
        case let .battle(pk, other, host, _, _, _):
            finish(pk, now: now)
            return [.send(message(to: other, pk: pk, wall: wall, .end(reason)), to: host), .output(.ended(room: other, why: .byUs))]
        case .idle, .asked:
            throw .notInPK
        }
    }

    /// A PK message from `peer` (the session's other end).
    public mutating func receive(_ m: PKMessage, from peer: NodeID, now: Instant, wall: UInt64) -> [PKAction] {
        func refuse(_ why: String) -> [PKAction] {
            refused += 1
            return [.output(.refused(why))]
        }
        guard m.isSigned(by: peer) else { return refuse("PK message not signed by its sender") }
        guard m.to == room, m.from != room else { return refuse("PK message for another room") }
        let skew = m.sent > wall ? m.sent - wall : wall - m.sent
        guard skew <= UInt64(Self.freshness.milliseconds) else { return refuse("stale PK message (\(skew) ms from our clock)") }
        if over[m.pk] != nil {
            switch m.body {
            case .end, .alive, .answer: return []
            case .request: break
            }
        }
        switch (m.body, phase) {
        case let (.request(minutes, title), .idle):
            guard seen[m.pk] == nil else { return refuse("replayed PK request") }
            seen[m.pk] = now
            phase = .asked(pk: m.pk, room: m.from, host: peer, minutes: minutes, since: now)
            otherTitle = title
            theirs = nil
            return [.output(.requested(room: m.from, host: peer, minutes: minutes, title: title))]
        case (.request, _):
            guard seen[m.pk] == nil else { return refuse("replayed PK request") }
            seen[m.pk] = now
            // Busy: say no at once.
            return [.send(message(to: m.from, pk: m.pk, wall: wall, .answer(accepted: false, reason: "busy")), to: peer)]
        case let (.answer(accepted, reason), .asking(pk, other, host, minutes, _)) where m.pk == pk && m.from == other && peer == host:
            guard accepted else {
                finish(pk, now: now)
                return [.output(.rejected(room: other, reason: reason))]
            }
            let endsAt = now + .seconds(Int64(minutes) * 60)
            phase = .battle(pk: pk, room: other, host: host, endsAt: endsAt, heard: now, said: now)
            return [.output(.started(room: other, host: host, minutes: minutes, endsAt: endsAt))]
        case let (.end(reason), .battle(pk, other, host, _, _, _)) where m.pk == pk && m.from == other && peer == host:
            finish(pk, now: now)
            return [.output(.ended(room: other, why: .byThem(reason)))]
        case let (.end, .asked(pk, other, host, _, _)) where m.pk == pk && m.from == other && peer == host:
            // The request was withdrawn before we answered.
            finish(pk, now: now)
            return [.output(.withdrawn(room: other))]
        case let (.alive(score), .battle(pk, other, host, endsAt, _, said)) where m.pk == pk && m.from == other && peer == host:
            phase = .battle(pk: pk, room: other, host: host, endsAt: endsAt, heard: now, said: said)
            // Keepalives may cross each other on the way: the one signed latest counts.
            if m.sent >= theirs?.proof.sent ?? 0 { theirs = (score, m) }
            return []
        default:
            return refuse("PK message out of turn")
        }
    }

    /// Call about every 100 ms: expiries, keepalives (with our `score`), the end of time, silence.
    public mutating func tick(now: Instant, wall: UInt64, score: UInt64 = 0) -> [PKAction] {
        seen = seen.filter { now - $0.value < Self.freshness * 2 }
        over = over.filter { now - $0.value < Self.freshness * 2 }
        switch phase {
        case let .asking(pk, other, host, _, since) where now - since >= Self.requestLifetime:
            finish(pk, now: now)
            return [.send(message(to: other, pk: pk, wall: wall, .end(.ended)), to: host), .output(.rejected(room: other, reason: "no answer"))]
        case let .asked(pk, other, _, _, since) where now - since >= Self.requestLifetime:
            finish(pk, now: now)
            return [.output(.withdrawn(room: other))]
        case let .battle(pk, other, host, endsAt, heard, said):
            if now >= endsAt {
                finish(pk, now: now)
                return [.send(message(to: other, pk: pk, wall: wall, .end(.timeUp)), to: host), .output(.ended(room: other, why: .timeUp))]
            }
            if now - heard >= Self.silence {
                finish(pk, now: now)
                return [.output(.ended(room: other, why: .silent))]
            }
            guard now - said >= Self.aliveInterval else { return [] }
            phase = .battle(pk: pk, room: other, host: host, endsAt: endsAt, heard: heard, said: now)
            return [.send(message(to: other, pk: pk, wall: wall, .alive(score: score)), to: host)]
        default:
            return []
        }
    }
}
