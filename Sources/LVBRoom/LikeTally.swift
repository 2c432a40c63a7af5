import LVBCrypto
import LVBGossip

/// Likes as a grow-only counter per author (each author's highest cumulative
/// total wins), summed over authors. Any order and any number of copies of the
/// same like events give the same totals. The sum is kept in 128 bits so
/// hostile totals near 2⁶⁴ cannot wrap it; it reads as saturated.
struct LikeTally {
    private(set) var latest: [NodeID: (total: UInt64, event: RoomEvent)] = [:]
    private var sumHigh: UInt64 = 0
    private var sumLow: UInt64 = 0

    func total(of id: NodeID) -> UInt64 { latest[id]?.total ?? 0 }

    /// The room total, saturated at `UInt64.max`.
    var roomTotal: UInt64 { sumHigh > 0 ? .max : sumLow }

    /// Raises `e.author`'s total to `total`; the caller checked it is higher.
    mutating func raise(_ e: RoomEvent, to total: UInt64) {
        let delta = total - self.total(of: e.author)
        let (low, carry) = sumLow.addingReportingOverflow(delta)
        sumLow = low
        if carry { sumHigh &+= 1 }
        latest[e.author] = (total, e)
    }

    var events: [RoomEvent] { latest.values.map(\.event) }

    /// The latest likes of the `n` authors with the highest totals (ties by key).
    func top(_ n: Int) -> [RoomEvent] {
        latest.sorted { a, b in
            a.value.total != b.value.total ? a.value.total > b.value.total : a.key.publicKey.lexicographicallyPrecedes(b.key.publicKey)
        }.prefix(n).map(\.value.event)
    }
}
