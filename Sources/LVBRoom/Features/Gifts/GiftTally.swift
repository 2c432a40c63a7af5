import LVBCore
import LVBCrypto
import LVBGossip

/// The gifts a node saw: points per giver (the host's tally is the room's
/// rank, which it publishes as `GiftRank`), and each giver's combos until
/// they rest (`RoomConstants.giftComboWindow` without a continuation),
/// when the combo's final count shows once. Points add up in 64 bits,
/// saturating; the combos followed at once are bounded.
struct GiftTally {
    private(set) var points: [NodeID: UInt64] = [:]
    private(set) var total: UInt64 = 0
    /// Grows with every gift added: the rank is made again only when it moved.
    private(set) var version = 0
    private struct Combo {
        var gift: UInt8
        var first: UInt32
        var count: UInt32
        var last: Instant
    }
    private var combos: [ComboKey: Combo] = [:]
    private struct ComboKey: Hashable {
        let author: NodeID
        let combo: UInt32
    }

    /// Most combos followed at once (older ones end without a final line).
    static let maxCombos = 256

    mutating func add(_ e: RoomEvent, _ g: Gift, now: Instant) {
        points[e.author] = Self.saturating(points[e.author, default: 0], g.points)
        total = Self.saturating(total, g.points)
        version += 1
        let key = ComboKey(author: e.author, combo: g.combo)
        if var c = combos[key], c.gift == g.gift {
            c.count = max(c.count, g.comboCount)
            // (Gossip may bring a combo's events out of order: the last first.)
            c.first = min(c.first, g.comboCount)
            c.last = now
            combos[key] = c
        } else {
            if combos.count >= Self.maxCombos, let oldest = combos.min(by: { $0.value.last < $1.value.last })?.key { combos[oldest] = nil }
            combos[key] = Combo(gift: g.gift, first: g.comboCount, count: g.comboCount, last: now)
        }
    }

    private static func saturating(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let (sum, over) = a.addingReportingOverflow(b)
        return over ? .max : sum
    }

    /// Combos that rested: each one that grew past its first event shows its final count.
    mutating func rested(now: Instant) -> [RoomChange] {
        var changes: [RoomChange] = []
        for (key, c) in combos where now - c.last >= RoomConstants.giftComboWindow {
            combos[key] = nil
            if c.count > c.first { changes.append(.giftCombo(author: key.author, gift: c.gift, combo: key.combo, count: c.count)) }
        }
        return changes.sorted { $0.comboOrder.lexicographicallyPrecedes($1.comboOrder) }
    }

    /// The `n` givers with the most points (ties by key), for the host's rank;
    /// with `base` (the points at some moment, a PK's start), counting only what came since.
    func top(_ n: Int, since base: [NodeID: UInt64] = [:]) -> [GiftRank.Entry] {
        let given = base.isEmpty ? points : points.reduce(into: [NodeID: UInt64]()) { out, p in
            let before = base[p.key] ?? 0
            if p.value > before { out[p.key] = p.value - before }
        }
        return given.sorted { a, b in
            a.value != b.value ? a.value > b.value : a.key.publicKey.lexicographicallyPrecedes(b.key.publicKey)
        }.prefix(n).map { GiftRank.Entry(member: $0.key, points: $0.value) }
    }
}

extension RoomChange {
    /// A stable order for combos ending together.
    fileprivate var comboOrder: [UInt8] {
        guard case let .giftCombo(author, _, combo, _) = self else { return [] }
        return author.publicKey + withUnsafeBytes(of: combo.bigEndian, Array.init)
    }
}
