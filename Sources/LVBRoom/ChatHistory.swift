import DequeModule
import LVBGossip

/// The room's chat and bullet comments, kept twice over `capacity` events:
/// in arrival order for the UI, and as the latest by (timestamp, id) for late
/// joiners — a choice that does not depend on arrival order, so two nodes
/// with the same events hand out the same history.
struct ChatHistory {
    let capacity: Int
    /// The last `capacity` events in the order they arrived here.
    private(set) var log = Deque<RoomEvent>()
    /// The `capacity` latest events by `RoomEvent.historyOrder`, ascending.
    private(set) var latest: [RoomEvent] = []

    init(capacity: Int = RoomConstants.chatHistory) {
        self.capacity = capacity
    }

    mutating func append(_ e: RoomEvent) {
        log.append(e)
        if log.count > capacity { log.removeFirst() }

        if latest.count == capacity {
            guard let oldest = latest.first, RoomEvent.historyOrder(oldest, e) else { return }
            latest.removeFirst()
        }
        let i = latest.partitioningIndex { RoomEvent.historyOrder(e, $0) }
        latest.insert(e, at: i)
    }
}

extension RoomEvent {
    /// The deterministic order of room history: timestamp, then author key
    /// bytes, then sequence number — a total order on distinct event ids.
    static func historyOrder(_ a: RoomEvent, _ b: RoomEvent) -> Bool {
        if a.timestamp != b.timestamp { return a.timestamp < b.timestamp }
        if a.author != b.author { return a.author.publicKey.lexicographicallyPrecedes(b.author.publicKey) }
        return a.seq < b.seq
    }
}

extension Array {
    /// The first index whose element satisfies `belongsInSecondPart`, for an
    /// array already partitioned by it (binary search).
    func partitioningIndex(where belongsInSecondPart: (Element) -> Bool) -> Int {
        var low = startIndex, high = endIndex
        while low < high {
            let mid = low + (high - low) / 2
            if belongsInSecondPart(self[mid]) { high = mid } else { low = mid + 1 }
        }
        return low
    }
}
