import LVBCore
import LVBCrypto
import LVBGossip
import LVBReplay
import LVBTransport
import Logging

/// Counters of a rendezvous, for its `stats` line.
public struct RendezvousStats: Sendable, Equatable {
    public var announcements = 0
    public var refused = 0
    public var listRequests = 0
    public var resolveRequests = 0
    /// Introductions asked for, and made (both sides told).
    public var introduceRequests = 0
    public var introductions = 0
    /// Introductions of a pair made again because one side had moved (a
    /// NAT rebinding before their session came up).
    public var reintroductions = 0
    /// Datagrams and bytes relayed between introduced pairs, and those
    /// refused (pair not introduced, over the pair's or the total cap, peer gone).
    public var relayedDatagrams = 0
    public var relayedBytes = 0
    public var relayRefused = 0
    /// Thumbnails kept (complete and verified), pieces refused (not the
    /// room's host, replayed, inconsistent, bad signature), and requests.
    public var thumbnails = 0
    public var thumbnailRefused = 0
    public var thumbnailRequests = 0
    public var malformed = 0
    public var unknownTypes = 0
    public var stunAnswered = 0
    public var stunDropped = 0
    /// STUN answers sent from the port the request did not come in on
    /// (RFC 5780 CHANGE-REQUEST), and datagrams on the alternate port that
    /// were not STUN (counted and dropped: it answers STUN only).
    public var stunOtherPort = 0
    public var alternateNotSTUN = 0
    /// Requests and STUN messages over their source's rate, dropped unanswered.
    public var rateLimited = 0
}

/// The rendezvous role, sans-IO over one transport: answers STUN Binding
/// requests on the node's own port, keeps the room registry from hosts'
/// announcements (each host announces its own rooms over its own session),
/// and answers room-list and resolve requests over sessions. Everything but
/// STUN runs inside authenticated sessions, so a spoofed source gets nothing.
public final class RendezvousService {
    public let registry: RoomRegistry
    public let thumbnails = ThumbnailStore()
    /// The replays its peers hold, listed after the live rooms (replay channel).
    public let replays: ReplayDirectory
    public internal(set) var stats = RendezvousStats()
    let core: TransportCore
    let clock: Clock
    /// The STUN responder, told of the alternate port by `useAlternatePort`.
    var stun = STUNResponder()
    /// Sends an answer from the alternate port (set with `useAlternatePort`).
    var sendFromAlternate: (([UInt8], PeerAddress) -> Void)?
    let log = Log.logger("rendezvous")
    /// Per-session budget of rendezvous messages, and per-IP budget of STUN.
    private var requests = RateLimiter<NodeID>(count: RendezvousConstants.requestRate, burst: RendezvousConstants.requestBurst)
    var stunSources = RateLimiter<PeerAddress.Host>(count: RendezvousConstants.stunRate, burst: RendezvousConstants.stunBurst)
    /// The relay's budget in kbit/s (0: no relay), and the pairs it may relay
    /// for: introduced here, within `relayPairLifetime` of their last use.
    public let relayKbps: Int
    private var relayPairs: [NodePair: Instant] = [:]
    /// Pairs introduced lately (joiner, host), where each was seen then and
    /// when the host was last told: a joiner still without a session asks
    /// again, and the host hears of it again when either side has moved.
    private var introduced: [Introduced: (joiner: PeerAddress, host: PeerAddress, toldHost: Instant)] = [:]

    struct Introduced: Hashable {
        let joiner: NodeID, host: NodeID
    }
    private var pairBytes: RateLimiter<NodePair>
    private var totalBytes: RateLimiter<Int>

    /// - Parameter relayKbps: relay introduced pairs' sealed datagrams up to
    ///   this many kbit/s in all (`--relay-kbps`; 0: no relay), each pair up
    ///   to `relayPairKbps` of it.
    public init(core: TransportCore, clock: Clock, relayKbps: Int = 0) {
        self.core = core
        self.clock = clock
        self.relayKbps = max(0, relayKbps)
        let pairRate = max(1, min(self.relayKbps, RendezvousConstants.relayPairKbps) * 125)
        pairBytes = RateLimiter(count: pairRate, burst: max(pairRate / 4, 2 * CoreConstants.maxDatagram))
        let totalRate = max(1, self.relayKbps * 125)
        totalBytes = RateLimiter(count: totalRate, burst: max(totalRate / 4, 2 * CoreConstants.maxDatagram))
        registry = RoomRegistry(clock: clock)
        replays = ReplayDirectory(core: core, clock: clock)
        core.sideChannel = { [unowned self] bytes, source in stunOnPrimary(bytes, from: source) }
    }

    /// Feeds a transport event.
    public func handle(_ event: TransportEvent) {
        if case let .message(peer, .replay, payload) = event, ReplayListMessage.isListMessage(payload) {
            replays.receive(payload, from: peer)
            return
        }
        if case let .gone(peer, _) = event {
            replays.forget(holder: peer)
            return
        }
        guard case let .message(peer, .rendezvous, payload) = event else { return }
        // Relayed datagrams have their own byte budget (per pair and in all);
        // the message budget is for requests.
        let isRelay = payload.first == RendezvousMessage.Kind.relay.rawValue
        guard isRelay || requests.allow(peer, now: clock.now()) else {
            stats.rateLimited += 1
            return
        }
        let message: RendezvousMessage
        do { message = try RendezvousMessage.parse(payload) } catch {
            if case .unknownType = error { stats.unknownTypes += 1 } else { stats.malformed += 1 }
            return
        }
        switch message {
        case .announce(let bytes):
            stats.announcements += 1
            guard let a = try? RoomAnnouncement.parse(bytes[...]), a.host == peer else {
                stats.refused += 1
                log.debug("announcement from \(peer.short) refused: not valid, or not its own room")
                return
            }
            let verdict = registry.apply(a)
            if case .refused(let why) = verdict {
                stats.refused += 1
                log.debug("announcement of \(a.room) refused: \(why)")
                return
            }
            // A closed room's thumbnail goes with it.
            if verdict == .closed { forgetThumbnails() }
            // Tell the host where we see it, so its next announcement names its reflexive address.
            if let seen = core.endpoint(of: peer) { send(.observed(seen), to: peer) }
        case let .list(request, page):
            stats.listRequests += 1
            let (rooms, total) = registry.page(Int(page))
            // Header: type, request, page, total, part, parts, count.
            let parts = Self.parts(rooms.map(\.encoded), limit: core.maxPayload - 14)
            for (i, group) in parts.enumerated() {
                send(.rooms(request: request, page: page, total: UInt32(total), part: UInt8(i), parts: UInt8(parts.count),
                            announcements: group), to: peer)
            }
        case let .resolve(request, room):
            stats.resolveRequests += 1
            send(.resolved(request: request, announcement: registry.listing(room)?.announcement.encoded), to: peer)
        case let .introduce(request, room, addresses):
            stats.introduceRequests += 1
            introduce(peer, to: room, request: request, claimed: addresses)
        case let .relay(to, piece):
            forward(piece, from: peer, to: to)
        case let .thumbnail(room, seq, piece):
            do {
                if try thumbnails.take(piece, room: room, seq: seq, signedBy: thumbnailSigner(room, sender: peer)) != nil { stats.thumbnails += 1 }
            } catch {
                stats.thumbnailRefused += 1
                log.debug("thumbnail piece of \(room) from \(peer.short) refused: \(error)")
            }
        case let .thumbnailRequest(request, room, have):
            stats.thumbnailRequests += 1
            answerThumbnail(room, have: have, request: request, to: peer)
        case .rooms, .resolved, .introduction, .observed, .relayed, .thumbnailAnswer:
            stats.malformed += 1  // answers come from a rendezvous, never to one
        }
    }

    /// Tells a joiner and the host of `room` where the other is, so both
    /// dial at once (hole punching): the address each is seen at here, then
    /// the host's announced addresses, and only the local-scope ones of
    /// those the joiner claims (so nobody aims a host at a stranger).
    private func introduce(_ joiner: NodeID, to room: RoomID, request: UInt32, claimed: [PeerAddress]) {
        guard let listing = registry.listing(room), listing.announcement.host != joiner else {
            send(.resolved(request: request, announcement: nil), to: joiner)
            return
        }
        let host = listing.announcement.host
        guard let hostSeen = core.endpoint(of: host), core.isEstablished(with: host), let joinerSeen = core.endpoint(of: joiner) else {
            // The host's session with us is down: the joiner dials the announced addresses alone.
            send(.introduction(request: request, peer: host, relay: false, addresses: []), to: joiner)
            return
        }
        let now = clock.now()
        let relay = relayKbps > 0
        if relay { relayPairs[NodePair(joiner, host)] = now }
        let joinerAddresses = ([joinerSeen] + claimed.filter(\.isClaimable)).uniqued(limit: RendezvousConstants.maxIntroducedAddresses)
        let hostAddresses = ([hostSeen] + listing.announcement.addresses).uniqued(limit: RendezvousConstants.maxIntroducedAddresses)
        // The host dials the joiner afresh on each introduction: tell it again
        // only when one side moved, or now and then (the first may be lost).
        let key = Introduced(joiner: joiner, host: host)
        var tellHost = true
        if let last = introduced[key] {
            let moved = last.joiner != joinerSeen || last.host != hostSeen
            tellHost = moved || now - last.toldHost >= RendezvousConstants.reintroduceHostAfter
            if moved { stats.reintroductions += 1 }
        }
        if tellHost {
            stats.introductions += 1
            introduced[key] = (joinerSeen, hostSeen, now)
            send(.introduction(request: 0, peer: joiner, relay: relay, addresses: joinerAddresses), to: host)
        }
        send(.introduction(request: request, peer: host, relay: relay, addresses: hostAddresses), to: joiner)
    }

    /// Whose signature a thumbnail of `room` must carry: a live room's host,
    /// over its own session; else the host of a replay of the room that is
    /// listed, handed on by anyone (a holder keeps what the host signed).
    /// Nil: nobody's here.
    private func thumbnailSigner(_ room: RoomID, sender: NodeID) -> NodeID? {
        if let listing = registry.listing(room) { return listing.announcement.host == sender ? sender : nil }
        return replays.host(ofRoom: room)
    }

    /// A room keeps its thumbnail here while it is live or a replay of it is listed.
    private func keepsThumbnail(of room: RoomID) -> Bool {
        registry.listing(room) != nil || replays.host(ofRoom: room) != nil
    }

    private func forgetThumbnails() {
        let replayed = replays.rooms
        thumbnails.forget { registry.listing($0) != nil || replayed.contains($0) }
    }

    /// The pieces of `room`'s latest thumbnail if newer than `have`, else one
    /// answer saying none is. Over an established session whose requests are
    /// rate limited, like a page of the list.
    private func answerThumbnail(_ room: RoomID, have: UInt64, request: UInt32, to peer: NodeID) {
        // Header: type, request, room id, seq, part.
        guard keepsThumbnail(of: room), let kept = thumbnails.thumbnail(room), kept.seq > have,
              let pieces = kept.pieces(maxPiece: core.maxPayload - 30) else {
            send(.thumbnailAnswer(request: request, room: room, seq: 0, piece: nil), to: peer)
            return
        }
        for piece in pieces { send(.thumbnailAnswer(request: request, room: room, seq: kept.seq, piece: piece), to: peer) }
    }

    /// Relays one sealed datagram of an introduced pair, within the pair's
    /// and the total budget; the answer is never larger than what was sent.
    private func forward(_ piece: RelayPiece, from: NodeID, to: NodeID) {
        let now = clock.now()
        let pair = NodePair(from, to)
        guard relayKbps > 0, let last = relayPairs[pair], now - last < RendezvousConstants.relayPairLifetime,
              core.isEstablished(with: to), pairBytes.allow(pair, cost: piece.bytes.count, now: now),
              totalBytes.allow(0, cost: piece.bytes.count, now: now) else {
            stats.relayRefused += 1
            return
        }
        relayPairs[pair] = now
        if piece.index == 0 { stats.relayedDatagrams += 1 }
        stats.relayedBytes += piece.bytes.count
        send(.relayed(peer: from, piece: piece), to: to)
    }



    /// Timers: expired rooms leave the list.
    public func tick() {
        let now = clock.now()
        registry.expire(now: now)
        replays.tick()
        forgetThumbnails()
        relayPairs = relayPairs.filter { now - $0.value < RendezvousConstants.relayPairLifetime }
        introduced = introduced.filter { now - $0.value.toldHost < RendezvousConstants.reintroduceWindow }
    }

    /// Splits announcements into groups whose encodings fit `limit` bytes
    /// (at least one group, maybe empty: an empty page is an answer too).
    static func parts(_ items: [[UInt8]], limit: Int) -> [[[UInt8]]] {
        var groups: [[[UInt8]]] = [[]]
        var size = 0
        for item in items {
            if size + 2 + item.count > limit, !(groups.last?.isEmpty ?? true) {
                groups.append([])
                size = 0
            }
            groups[groups.count - 1].append(item)
            size += 2 + item.count
        }
        return groups
    }

    private func send(_ message: RendezvousMessage, to peer: NodeID) {
        try? core.send(message.encoded, channel: .rendezvous, to: peer)
    }
}
