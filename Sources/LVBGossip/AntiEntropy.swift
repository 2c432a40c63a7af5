import LVBCore
import LVBCrypto

// Digests: a periodic backstop for what eager push and lazy repair both lost
// (e.g. every copy of an event and all its announcements on a lossy link).
// Each digest names, per author, the lowest and highest sequence held and the
// newest holes; the
// neighbour answers with the events it holds that the digest lacks.
extension GossipNode {
    /// Sends the next slice of our per-author progress, sized to one datagram;
    /// successive digests walk the author key space round-robin.
    func sendDigest() {
        // A digest queued behind a handshake would be stale when it lands.
        guard let target = pick(active.filter(transport.isConnected)) else { return }
        let authors = store.sortedAuthors
        if digestCursor >= authors.count { digestCursor = 0 }
        var entries = [DigestEntry]()
        var size = 2 + 64 + 1
        var index = digestCursor
        while index < authors.count, entries.count < GossipConstants.maxDigestEntries {
            guard let p = store.authors[authors[index]] else { break }
            let entry = DigestEntry(author: authors[index], minSeq: p.minSeq, maxSeq: p.maxSeq, missing: p.digestMissing)
            let entrySize = 32 + 8 + 8 + 1 + 8 * entry.missing.count
            guard size + entrySize <= GossipConstants.maxPayload else { break }
            size += entrySize
            entries.append(entry)
            index += 1
        }
        let after = digestCursor == 0 ? [UInt8](repeating: 0, count: 32) : authors[digestCursor - 1].publicKey
        let through = index >= authors.count ? [UInt8](repeating: 0xFF, count: 32) : authors[index - 1].publicKey
        digestCursor = index >= authors.count ? 0 : index
        send(.digest(after: after, through: through, entries: entries), to: target)
        stats.digestsSent += 1
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
    }
}
