import DequeModule
import LVBCore
import LVBCrypto

/// The events a node keeps for repair (GRAFT answers, digest answers), and
/// per-author progress (highest sequence, gaps) for anti-entropy digests.
struct EventStore {
    private var events: [EventID: RoomEvent] = [:]
    private var order = Deque<EventID>()
    /// Retained sequence numbers per author, in arrival order (digest answers).
    private var byAuthor: [NodeID: Deque<UInt64>] = [:]
    private(set) var authors: [NodeID: AuthorProgress] = [:]
    let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    /// Every id ever recorded is remembered in `authors` (for dedup of old
    /// events) even after the event itself is evicted.
    func contains(_ id: EventID) -> Bool {
        authors[id.author]?.has(id.seq) ?? false
    }

    func event(_ id: EventID) -> RoomEvent? { events[id] }

    mutating func insert(_ e: RoomEvent) {
        let id = e.id
        authors[id.author, default: AuthorProgress()].record(id.seq)
        guard events[id] == nil else { return }
        events[id] = e
        order.append(id)
        byAuthor[id.author, default: []].append(id.seq)
        while order.count > capacity, let old = order.popFirst() {
            events[old] = nil
            if byAuthor[old.author]?.first == old.seq {
                byAuthor[old.author]?.removeFirst()
            } else {
                byAuthor[old.author]?.removeAll { $0 == old.seq }
            }
            if byAuthor[old.author]?.isEmpty == true { byAuthor[old.author] = nil }
        }
    }

    /// Events by `author` the holder of `entry` lacks (above its max, or in its gaps).
    func missing(for entry: DigestEntry, limit: Int) -> [RoomEvent] {
        guard authors[entry.author] != nil else { return [] }
        var out = [RoomEvent]()
        for seq in entry.missing where out.count < limit {
            if let e = events[EventID(author: entry.author, seq: seq)] { out.append(e) }
        }
        for seq in byAuthor[entry.author] ?? [] where out.count < limit && (seq > entry.maxSeq || seq < entry.minSeq) {
            if let e = events[EventID(author: entry.author, seq: seq)] { out.append(e) }
        }
        return out
    }

    /// Retained events of `authors`, oldest first per author.
    func events(by authors: [NodeID], limit: Int) -> [RoomEvent] {
        var out = [RoomEvent]()
        for author in authors {
            guard let seqs = byAuthor[author] else { continue }
            for seq in seqs where out.count < limit {
                if let e = events[EventID(author: author, seq: seq)] { out.append(e) }
            }
        }
        return out
    }
}

/// One author's sequence numbers as seen here: the lowest and highest, and
/// the gaps between them (bounded). A jump wider than `maxTrackedGap` starts a
/// new epoch (a restarted node) rather than a flood of "missing" numbers.
struct AuthorProgress {
    private(set) var minSeq: UInt64 = 0
    private(set) var maxSeq: UInt64 = 0
    private(set) var gaps: Set<UInt64> = []
    private var started = false

    func has(_ seq: UInt64) -> Bool {
        started && seq >= minSeq && seq <= maxSeq && !gaps.contains(seq)
    }

    mutating func record(_ seq: UInt64) {
        guard started else {
            started = true
            minSeq = seq
            maxSeq = seq
            return
        }
        if seq > maxSeq {
            if seq - maxSeq <= GossipConstants.maxTrackedGap { addGaps(maxSeq + 1, seq) }
            maxSeq = seq
        } else if seq < minSeq {
            // Older history arriving (backfill): what lies between is missing.
            if minSeq - seq <= GossipConstants.maxTrackedGap { addGaps(seq + 1, minSeq) }
            minSeq = seq
        }
        gaps.remove(seq)
    }

    private mutating func addGaps(_ from: UInt64, _ to: UInt64) {
        var s = from
        while s < to { gaps.insert(s); s += 1 }
        if gaps.count > Int(GossipConstants.maxTrackedGap) {
            // Keep the newest holes: very old ones are beyond repair anyway.
            gaps = Set(gaps.sorted().suffix(Int(GossipConstants.maxTrackedGap)))
        }
    }

    var digestMissing: [UInt64] { Array(gaps.sorted().prefix(GossipConstants.maxMissingPerEntry)) }
}
