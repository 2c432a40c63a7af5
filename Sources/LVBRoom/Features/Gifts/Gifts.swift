import LVBCore
import LVBCrypto
import LVBGossip

/// Gifts and the rank of givers, a room feature: every node tallies the
/// gifts it saw and follows their combos (`GiftBook`, in the room's state);
/// a giver continues its own combo; the host publishes its tally as the
/// room's rank (`GiftRank`) when it moved, at most every
/// `RoomConstants.giftRankInterval`.
final class Gifts: RoomFeature {
    private unowned let node: RoomNode
    /// This node's latest gift, whose combo the same gift continues for a moment.
    private var lastGift: (gift: UInt8, combo: UInt32, count: UInt32, at: Instant)?
    /// The host's latest gift rank sent, and the tally's version it was made from.
    private var lastRank: (rank: GiftRank, version: Int, at: Instant)?

    init(node: RoomNode) { self.node = node }

    static let kinds: [any RoomEventRule.Type] = [Gift.self, GiftRank.self]

    /// Sends `count` of the gift called `name`.
    func send(_ name: String, count: UInt16) throws(RoomActionError) {
        guard let kind = GiftCatalogue.named(name) else { throw .refused("no gift called \(name); there are \(GiftCatalogue.names)") }
        guard (1...Gift.maxCount).contains(count) else { throw .refused("send 1 to \(Gift.maxCount) at once") }
        let now = node.clock.now()
        var combo = UInt32(truncatingIfNeeded: node.seq &+ 1)
        var total = UInt32(count)
        if let last = lastGift, last.gift == kind.id, now - last.at < RoomConstants.giftComboWindow,
           last.count + UInt32(count) <= Gift.maxComboCount {
            combo = last.combo
            total = last.count + UInt32(count)
        }
        try node.publish(.gift(Gift(gift: kind.id, count: count, combo: combo, comboCount: total))).get()
        lastGift = (kind.id, combo, total, now)
    }

    /// The host's gift rank, when its tally changed, at most every
    /// `giftRankInterval` (the rank is sorted only then, not every tick).
    func tick(now: Instant) {
        guard node.isHost, let state = node.state else { return }
        let version = state.gifts.version
        guard version > 0, version != lastRank?.version else { return }
        if let last = lastRank, now - last.at < RoomConstants.giftRankInterval { return }
        let rank = state.giftRank
        if let last = lastRank, rank == last.rank {
            lastRank = (rank, version, last.at)
            return
        }
        guard case .success = node.publish(.giftRank(rank)) else { return }
        lastRank = (rank, version, now)
    }
}

/// What the room's state keeps of gifts: the tally and each giver's rate.
final class GiftBook: RoomStatePart {
    var tally = GiftTally()
    var buckets = RateLimiter<NodeID>(count: RoomConstants.giftEventRate, burst: RoomConstants.giftEventBurst,
                                      sweepThreshold: RoomConstants.sweepThreshold)

    init() {}

    /// Combos that rested.
    func expire(now: Instant) -> [RoomChange] { tally.rested(now: now) }
}

extension Gifts {
    static let commands: [RoomCommand] = [
        RoomCommand(console: "/rank", "the room's top givers of gifts, as the host ranks them (in a PK, the battle's too)") { text in
            guard text.isEmpty else { return nil }
            return { r in for notice in r.rankNotices() { r.show(notice) } }
        },
    ]
}

extension RoomNode {
    /// The room's `gift_rank` (nil before the room has a state) and its readable form.
    public func rankNotice() -> RoomNotice? {
        guard let rank = state?.giftRank else { return nil }
        return RoomNotice(rank.line(names), human: rank.text(names), tag: "gift")
    }

    /// What `/rank` shows: the room's rank, and in a PK this side's givers in the battle.
    func rankNotices() -> [RoomNotice] { [rankNotice(), pkBattleNotice()].compactMap { $0 } }
}

extension RoomState {
    /// The gifts this node saw (points per giver, combos until they rest).
    var gifts: GiftTally { part(GiftBook.self).tally }

    /// The room's gift rank: on the host its own tally (what it publishes),
    /// on a member the host's latest word.
    public var giftRank: GiftRank {
        if isHostsView { return GiftRank(total: gifts.total, top: gifts.top(GiftRank.maxEntries)) }
        return latest(GiftRank.self) ?? GiftRank(total: 0, top: [])
    }

    /// The points of gifts from `id` this node saw.
    public func giftPoints(of id: NodeID) -> UInt64 { gifts.points[id] ?? 0 }
}
