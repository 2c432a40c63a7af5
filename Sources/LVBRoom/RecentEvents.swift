import DequeModule
import LVBCrypto
import LVBGossip

/// The ids of recently applied events, for deduplication in bounded memory:
/// the last `capacity` ids, plus per author the highest sequence number that
/// has left the window — anything at or below it is old news, so a copy that
/// resurfaces after long delay is still a duplicate.
struct RecentEvents {
    let capacity: Int
    private var ids: Set<EventID> = []
    private var order = Deque<EventID>()
    private var floor: [NodeID: UInt64] = [:]

    init(capacity: Int = RoomConstants.rememberedEventIDs) {
        self.capacity = capacity
    }

    func contains(_ id: EventID) -> Bool {
        if ids.contains(id) { return true }
        if let f = floor[id.author], id.seq <= f { return true }
        return false
    }

    mutating func insert(_ id: EventID) {
        guard ids.insert(id).inserted else { return }
        order.append(id)
        while order.count > capacity, let old = order.popFirst() {
            ids.remove(old)
            floor[old.author] = max(floor[old.author] ?? 0, old.seq)
        }
    }
}
