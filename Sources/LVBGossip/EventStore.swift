import DequeModule
import LVBCore
import LVBCrypto

/// The events a node keeps for repair (GRAFT answers, digest answers), and
/// per-author progress (held sequence ranges) for anti-entropy digests.
struct EventStore {
    private var events: [EventID: RoomEvent] = [:]
    private var order = Deque<EventID>()
    /// Retained sequence numbers per author, in arrival order (digest answers).
    private var byAuthor: [NodeID: Deque<UInt64>] = [:]
    private(set) var authors: [NodeID: AuthorProgress] = [:]
    /// The authors' ids in public-key order (digests walk them in turn), kept
    /// as authors first appear rather than sorted for every digest.
    private(set) var sortedAuthors: [NodeID] = []
    let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    /// Ids are remembered in `authors` (for dedup) after the event itself is
    /// evicted, within each author's bounded range list.
    func contains(_ id: EventID) -> Bool {
        authors[id.author]?.has(id.seq) ?? false
    }

    func event(_ id: EventID) -> RoomEvent? { events[id] }

    mutating func insert(_ e: RoomEvent) {
        let id = e.id
        if authors[id.author] == nil { insertSorted(id.author) }
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

    /// Events by `author` the holder of `entry` lacks: its listed gaps, above
    /// its max, and below its min (backfill).
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

    private mutating func insertSorted(_ author: NodeID) {
        var low = 0, high = sortedAuthors.count
        while low < high {
            let mid = (low + high) / 2
            if sortedAuthors[mid].publicKey.lexicographicallyPrecedes(author.publicKey) { low = mid + 1 } else { high = mid }
        }
        sortedAuthors.insert(author, at: low)
    }
}

/// One author's sequence numbers held here, as a bounded list of disjoint
/// ranges: exact membership (nothing is assumed held because it lies between
/// held numbers), holes of up to `maxTrackedGap` reported as missing in
/// digests, wider holes taken as epochs (a restarted node numbers from its
/// clock). Beyond `maxRanges` the oldest range is forgotten: an old event
/// arriving again then costs one signature check, never a wrong "duplicate".
struct AuthorProgress {
    static let maxRanges = 64
    private(set) var ranges: [ClosedRange<UInt64>] = []

    var minSeq: UInt64 { ranges.first?.lowerBound ?? 0 }
    var maxSeq: UInt64 { ranges.last?.upperBound ?? 0 }

    func has(_ seq: UInt64) -> Bool {
        guard let i = index(of: seq) else { return false }
        return ranges[i].contains(seq)
    }

    /// The last range starting at or below `seq`.
    private func index(of seq: UInt64) -> Int? {
        var lo = 0, hi = ranges.count - 1, found: Int?
        while lo <= hi {
            let mid = (lo + hi) / 2
            if ranges[mid].lowerBound <= seq { found = mid; lo = mid + 1 } else { hi = mid - 1 }
        }
        return found
    }

    mutating func record(_ seq: UInt64) {
        guard !has(seq) else { return }
        let i = index(of: seq)
        let joinsLeft = i.map { ranges[$0].upperBound &+ 1 == seq } ?? false
        let right = (i ?? -1) + 1
        let joinsRight = right < ranges.count && seq &+ 1 == ranges[right].lowerBound
        switch (joinsLeft, joinsRight) {
        case (true, true):
            let l = i!  // invariant: joinsLeft implies i != nil
            ranges[l] = ranges[l].lowerBound...ranges[right].upperBound
            ranges.remove(at: right)
        case (true, false):
            let l = i!  // invariant: joinsLeft implies i != nil
            ranges[l] = ranges[l].lowerBound...seq
        case (false, true):
            ranges[right] = seq...ranges[right].upperBound
        case (false, false):
            ranges.insert(seq...seq, at: right)
            if ranges.count > Self.maxRanges { ranges.removeFirst() }
        }
    }

    /// Up to `maxMissingPerEntry` missing numbers, newest holes first; holes
    /// wider than `maxTrackedGap` are epochs, not loss.
    var digestMissing: [UInt64] {
        var out: [UInt64] = []
        var k = ranges.count - 1
        while k > 0, out.count < GossipConstants.maxMissingPerEntry {
            let low = ranges[k - 1].upperBound + 1, high = ranges[k].lowerBound - 1
            if high - low < GossipConstants.maxTrackedGap {
                var s = high
                while s >= low, out.count < GossipConstants.maxMissingPerEntry {
                    out.append(s)
                    if s == 0 { break }
                    s -= 1
                }
            }
            k -= 1
        }
        return out
    }

}
