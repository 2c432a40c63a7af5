import LVBCore
import LVBCrypto
import LVBGossip
import LVBTransport

/// A rendezvous's list of replays (soft state): each holder tells it, over
/// its own session, the replays it holds whole (their host-signed cards)
/// and where it is; the list shows each ended replay once, newest first,
/// with how many hold it, and a player asks where its holders are. A
/// holder not heard again within `holderLifetime` is forgotten, and a
/// replay with no holder left. Bounded: `maxReplays`, `maxHoldersEach`,
/// `maxPerHolder`; requests within a per-session rate. Sans-IO over the
/// transport core. Lives on the node's loop.
public final class ReplayDirectory {
    public struct Stats: Sendable, Equatable {
        public var held = 0, refused = 0, listRequests = 0, findRequests = 0, malformed = 0, rateLimited = 0
        public init() {}
    }

    public struct Entry {
        public var card: ReplayCard
        public var holders: [NodeID: (addresses: [PeerAddress], at: Instant)]
    }

    public private(set) var stats = Stats()
    public private(set) var entries: [ReplayID: Entry] = [:]
    private let core: TransportCore
    private let clock: Clock
    private var requests: RateLimiter<NodeID>

    public static let holderLifetime: Duration = .seconds(90)
    public static let maxReplays = 4096
    public static let maxHoldersEach = 64
    public static let maxPerHolder = 256
    public static let pageSize = 20

    public init(core: TransportCore, clock: Clock) {
        self.core = core
        self.clock = clock
        requests = RateLimiter(count: 20, burst: 300, sweepThreshold: 1024)
    }

    /// A replay-channel message from `peer`.
    public func receive(_ payload: ArraySlice<UInt8>, from peer: NodeID) {
        let now = clock.now()
        guard requests.allow(peer, now: now) else { stats.rateLimited += 1; return }
        let message: ReplayListMessage
        do { message = try ReplayListMessage.parse(payload) } catch { stats.malformed += 1; return }
        switch message {
        case let .held(card, addresses, withdrawn):
            stats.held += 1
            take(card, from: peer, addresses: addresses, withdrawn: withdrawn, now: now)
        case let .list(request, page):
            stats.listRequests += 1
            answerList(request: request, page: page, to: peer)
        case let .find(request, id):
            stats.findRequests += 1
            let holders = (entries[id]?.holders ?? [:]).filter { $0.key != peer && core.isEstablished(with: $0.key) }
                .sorted { $0.value.at > $1.value.at }.prefix(ReplayListMessage.maxHolders)
                .map { ReplayListMessage.Holder(id: $0.key, addresses: ([core.endpoint(of: $0.key)].compactMap { $0 } + $0.value.addresses).uniquedPrefix(ReplayListMessage.maxAddresses)) }
            send(.found(request: request, id, holders: Array(holders)), to: peer)
        case .listed, .found:
            stats.malformed += 1  // answers come from a rendezvous, never to one
        }
    }

    private func take(_ card: ReplayCard, from peer: NodeID, addresses: [PeerAddress], withdrawn: Bool, now: Instant) {
        let id = card.id
        if withdrawn {
            entries[id]?.holders[peer] = nil
            if entries[id]?.holders.isEmpty == true { entries[id] = nil }
            return
        }
        // Only a replay whose live ended is listed; a holder speaks for itself.
        guard card.info.ended, !card.info.isPrivate else { stats.refused += 1; return }
        if entries[id] == nil {
            guard entries.count < Self.maxReplays else { stats.refused += 1; return }
            guard entries.values.count(where: { $0.holders[peer] != nil }) < Self.maxPerHolder else { stats.refused += 1; return }
            entries[id] = Entry(card: card, holders: [:])
        }
        guard var entry = entries[id] else { return }
        guard entry.holders[peer] != nil || entry.holders.count < Self.maxHoldersEach else { stats.refused += 1; return }
        entry.holders[peer] = (Array(addresses.prefix(ReplayListMessage.maxAddresses)), now)
        entries[id] = entry
    }

    /// Ended replays, newest first.
    /// The host of a listed replay of `room` (its card says), if any.
    public func host(ofRoom room: RoomID) -> NodeID? {
        entries.values.first { $0.card.info.room == room }?.card.info.host
    }

    /// The rooms of the replays listed.
    public var rooms: Set<RoomID> { Set(entries.values.map(\.card.info.room)) }

    public func page(_ n: Int) -> (replays: [ReplayListMessage.Listed], total: Int) {
        let all = entries.values.sorted { $0.card.info.startedMs > $1.card.info.startedMs }
        let slice = all.dropFirst(n * Self.pageSize).prefix(Self.pageSize)
        return (slice.map { ReplayListMessage.Listed(card: $0.card, holders: UInt16(clamping: $0.holders.count)) }, all.count)
    }

    private func answerList(request: UInt32, page: UInt16, to peer: NodeID) {
        let (replays, total) = self.page(Int(page))
        // Header: type, request, page, total, part, parts, count.
        let limit = core.maxPayload - 14
        var groups: [[ReplayListMessage.Listed]] = [[]]
        var size = 0
        for r in replays {
            let cost = 4 + r.card.encoded.count
            if size + cost > limit, !(groups.last?.isEmpty ?? true) { groups.append([]); size = 0 }
            groups[groups.count - 1].append(r)
            size += cost
        }
        for (i, group) in groups.enumerated() {
            send(.listed(request: request, page: page, total: UInt32(total), part: UInt8(i), parts: UInt8(groups.count), replays: group), to: peer)
        }
    }

    /// A holder whose session with this rendezvous ended (it left, or fell
    /// silent) is listed no more: a new session tells everything again.
    public func forget(holder: NodeID) {
        for (id, var entry) in entries where entry.holders[holder] != nil {
            entry.holders[holder] = nil
            entries[id] = entry.holders.isEmpty ? nil : entry
        }
    }

    /// Holders not heard within their lifetime are forgotten.
    public func tick() {
        let now = clock.now()
        for (id, var entry) in entries {
            entry.holders = entry.holders.filter { now - $0.value.at < Self.holderLifetime }
            entries[id] = entry.holders.isEmpty ? nil : entry
        }
    }

    private func send(_ message: ReplayListMessage, to peer: NodeID) {
        try? core.send(message.bytes, channel: .replay, to: peer)
    }
}

extension Array where Element == PeerAddress {
    /// The first `limit` distinct addresses, in order.
    func uniquedPrefix(_ limit: Int) -> [PeerAddress] {
        var seen = Set<PeerAddress>(), out: [PeerAddress] = []
        for a in self where out.count < limit && seen.insert(a).inserted { out.append(a) }
        return out
    }
}
