import LVBCore
import LVBCrypto

// Digests: a periodic backstop for what eager push and lazy repair both lost
// (e.g. every copy of an event and all its announcements on a lossy link).
// Each digest names, per author, the lowest and highest sequence held and the
// newest holes; the neighbour answers with the events it holds that the
// digest lacks, and, when the digest shows the sender holds what the
// neighbour lacks, with its own digest of the same range (push-pull: a hole
// is repaired by either side's digest, twice as often as by one's alone).
extension GossipNode {
    /// Sends the next slice of our per-author progress, sized to one datagram;
    /// successive digests walk the author key space round-robin.
    func sendDigest() {
        // A digest queued behind a handshake would be stale when it lands.
        guard let target = pick(active.filter(transport.isConnected)) else { return }
        let authors = store.sortedAuthors
        if digestCursor >= authors.count { digestCursor = 0 }
        let pinned = pinnedEntries()
        let (walked, end) = digestEntries(from: digestCursor, through: nil, after: pinned)
        let entries = pinned + walked
        let after = digestCursor == 0 ? [UInt8](repeating: 0, count: 32) : authors[digestCursor - 1].publicKey
        let through = end >= authors.count ? [UInt8](repeating: 0xFF, count: 32) : authors[end - 1].publicKey
        digestCursor = end >= authors.count ? 0 : end
        send(.digest(after: after, through: through, entries: entries), to: target)
        stats.digestsSent += 1
    }

    /// Entries for the authors from index `start` of `sortedAuthors` (up to
    /// key `limit`, when given) that fit one digest beside `pinned` (which
    /// the walk skips), and the index after the last.
    private func digestEntries(from start: Int, through limit: [UInt8]?, after pinned: [DigestEntry]) -> ([DigestEntry], Int) {
        let authors = store.sortedAuthors
        let skip = Set(pinned.map(\.author))
        var entries = [DigestEntry]()
        var size = 2 + 64 + 1 + pinned.reduce(0) { $0 + Self.size(of: $1) }
        var index = start
        while index < authors.count, pinned.count + entries.count < GossipConstants.maxDigestEntries {
            if let limit, limit.lexicographicallyPrecedes(authors[index].publicKey) { break }
            guard let entry = digestEntry(for: authors[index]) else { break }
            if !skip.contains(entry.author) {
                guard size + Self.size(of: entry) <= GossipConstants.maxPayload else { break }
                size += Self.size(of: entry)
                entries.append(entry)
            }
            index += 1
        }
        return (entries, index)
    }

    private func digestEntry(for author: NodeID) -> DigestEntry? {
        store.authors[author].map { DigestEntry(author: author, minSeq: $0.minSeq, maxSeq: $0.maxSeq, missing: $0.digestMissing) }
    }

    private static func size(of entry: DigestEntry) -> Int { 32 + 8 + 8 + 1 + 8 * entry.missing.count }

    /// The entries every digest carries whatever its range: the pinned
    /// authors (`pinnedAuthors`, the room's host) that we know. A member
    /// that was cut off from the overlay for a while then gets their latest
    /// from its next digest, not when the walk comes round to them.
    private func pinnedEntries() -> [DigestEntry] {
        pinnedAuthors().prefix(GossipConstants.maxPinnedAuthors).compactMap(digestEntry(for:))
    }

    func handleDigest(after: [UInt8], through: [UInt8], entries: [DigestEntry], from peer: NodeID) {
        var budget = GossipConstants.maxRepairPerDigest
        var answer = [RoomEvent]()
        for entry in entries where budget > 0 {
            let events = store.missing(for: entry, limit: budget)
            budget -= events.count
            answer += events
        }
        if budget > 0 {
            // Authors in the covered range the sender has never heard of.
            let listed = Set(entries.map(\.author))
            let unknown = store.authors.keys.filter { a in
                !listed.contains(a) && after.lexicographicallyPrecedes(a.publicKey)
                    && !through.lexicographicallyPrecedes(a.publicKey)
            }
            answer += store.events(by: unknown, limit: budget)
        }
        for e in answer {
            transport.sendGossip(GossipMessage.repair(e.encoded[...]).bytes, to: peer)
            stats.repairsSent += 1
        }
        if entries.contains(where: senderHoldsMore), active.contains(peer) { pull(after: after, through: through, from: peer) }
    }

    /// Whether the sender of `entry` holds events of its author that we lack:
    /// numbers beyond our range, or in one of our holes it does not list.
    private func senderHoldsMore(_ entry: DigestEntry) -> Bool {
        guard let p = store.authors[entry.author] else { return true }
        if entry.maxSeq > p.maxSeq || entry.minSeq < p.minSeq { return true }
        return p.digestMissing.contains { $0 >= entry.minSeq && $0 <= entry.maxSeq && !entry.missing.contains($0) }
    }

    /// Answers a digest with our own over the same key range (as far as one
    /// datagram holds), at most once per `pullInterval` per neighbour, so
    /// two nodes each behind the other cannot keep one another busy.
    private func pull(after: [UInt8], through: [UInt8], from peer: NodeID) {
        let now = clock.now()
        if let last = lastPull[peer], now - last < GossipConstants.pullInterval { return }
        lastPull[peer] = now
        let authors = store.sortedAuthors
        var low = 0, high = authors.count
        while low < high {
            let mid = (low + high) / 2
            if after.lexicographicallyPrecedes(authors[mid].publicKey) { high = mid } else { low = mid + 1 }
        }
        let pinned = pinnedEntries()
        let (entries, end) = digestEntries(from: low, through: through, after: pinned)
        let covered = end > low && end < authors.count && !through.lexicographicallyPrecedes(authors[end].publicKey)
            ? authors[end - 1].publicKey : through
        send(.digest(after: after, through: covered, entries: pinned + entries), to: peer)
        stats.pullsSent += 1
    }
}
