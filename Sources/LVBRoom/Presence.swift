import LVBCore
import LVBCrypto
import LVBGossip

/// Who is in the room: built from join and leave events (latest by sequence
/// number wins) and kept fresh by anything heard from a member. A member not
/// heard from for `RoomConstants.presenceTimeout` is shown as left (timeout)
/// but remembered, so hearing from it again brings it back without a new join.
struct Presence {
    struct Entry {
        var role: NodeRole
        var instance: UInt64
        var joinedAt: Instant
        var lastHeard: Instant
        /// The member's latest join, handed to late joiners.
        var join: RoomEvent
        /// False once timed out.
        var present: Bool
    }

    /// Where a join or leave stands against the author's latest one.
    enum Order { case newer, same, older }

    private(set) var entries: [NodeID: Entry] = [:]
    /// How many entries are present, kept as they change (the host's census
    /// and every count read it: counting ten thousand entries each tick would
    /// cost more than the room).
    private(set) var presentCount = 0
    /// Each author's latest join or leave sequence number.
    private var latest: [NodeID: UInt64] = [:]
    /// Members whose latest word was a leave.
    private(set) var departed: Set<NodeID> = []

    func order(of e: RoomEvent) -> Order {
        guard let seq = latest[e.author] else { return .newer }
        return e.seq > seq ? .newer : e.seq == seq ? .same : .older
    }

    /// Applies a join already known to be newer than the author's latest.
    mutating func join(_ e: RoomEvent, instance: UInt64, role: NodeRole, now: Instant) -> [RoomChange] {
        latest[e.author] = e.seq
        let id = e.author
        departed.remove(id)
        guard var entry = entries[id], entry.present else {
            store(Entry(role: role, instance: instance, joinedAt: now, lastHeard: now, join: e, present: true), for: id)
            return [.joined(id, role: role)]
        }
        var changes = [RoomChange]()
        if entry.instance != instance {
            changes.append(.signedInElsewhere(id, oldInstance: entry.instance, newInstance: instance))
        }
        if entry.role != role { changes.append(.joined(id, role: role)) }
        entry.instance = instance
        entry.role = role
        entry.lastHeard = now
        entry.join = e
        entries[id] = entry
        return changes
    }

    /// Applies a leave already known to be newer than the author's latest.
    mutating func leave(_ e: RoomEvent, reason: UInt8) -> [RoomChange] {
        latest[e.author] = e.seq
        if departed.count >= 65_536 { departed.removeAll() }
        departed.insert(e.author)
        guard let entry = entries[e.author] else { return [] }
        store(nil, for: e.author)
        guard entry.present else { return [] }
        return [.left(e.author, reason: reason)]
    }

    /// Something authenticated came from `id`: refresh it, or bring it back
    /// if it had timed out.
    mutating func heard(_ id: NodeID, now: Instant) -> [RoomChange] {
        guard var entry = entries[id] else { return [] }
        entry.lastHeard = now
        defer { store(entry, for: id) }
        guard !entry.present else { return [] }
        entry.present = true
        entry.joinedAt = now
        return [.joined(id, role: entry.role)]
    }

    /// Forgets `id` entirely (kicked); true if it was present.
    mutating func remove(_ id: NodeID) -> Bool {
        let was = isPresent(id)
        store(nil, for: id)
        return was
    }

    /// Sets (or, with nil, removes) `id`'s entry, keeping `presentCount`.
    private mutating func store(_ entry: Entry?, for id: NodeID) {
        let was = isPresent(id), now = entry?.present ?? false
        entries[id] = entry
        if was != now { presentCount += now ? 1 : -1 }
    }

    /// Members of `only` silent for `timeout` are shown as left (reason 1, timeout).
    mutating func expire(now: Instant, only watched: Set<NodeID>, timeout: Duration = RoomConstants.presenceTimeout) -> [RoomChange] {
        let silent = watched.filter { entries[$0].map { $0.present && now - $0.lastHeard >= timeout } ?? false }
        var changes = [RoomChange]()
        for id in silent.sorted(by: { $0.publicKey.lexicographicallyPrecedes($1.publicKey) }) {
            entries[id]?.present = false
            presentCount -= 1
            changes.append(.left(id, reason: 1))
        }
        return changes
    }

    /// Present members, in order of arrival (ties by key bytes).
    var present: [(id: NodeID, entry: Entry)] {
        entries.filter(\.value.present).map { (id: $0.key, entry: $0.value) }.sorted {
            $0.entry.joinedAt != $1.entry.joinedAt
                ? $0.entry.joinedAt < $1.entry.joinedAt
                : $0.id.publicKey.lexicographicallyPrecedes($1.id.publicKey)
        }
    }

    func isPresent(_ id: NodeID) -> Bool { entries[id]?.present ?? false }

    /// Whether `e` is older than a leave its author sent (a late copy of
    /// something it said before it left).
    func predatesLeave(_ e: RoomEvent) -> Bool {
        guard departed.contains(e.author), let seq = latest[e.author] else { return false }
        return e.seq < seq
    }

    /// A member's presence follows the host's census: it keeps the joiners
    /// the census lists, `keeping` (host, co-hosts, itself) and those that
    /// joined within `censusRefresh`, and drops the rest quietly — they are still in the room, only not listed. A
    /// joiner the last census listed that this one drops while it keeps an
    /// older one (or while the list has room) was not pushed out by newer
    /// joiners: the host stopped hearing from it, so it shows as left
    /// (reason 1, timeout).
    mutating func follow(_ census: Census, after previous: Census?, keeping: Set<NodeID>, now: Instant) -> [RoomChange] {
        let listed = Set(census.joiners)
        var changes: [RoomChange] = []
        if let old = previous?.joiners {
            for (i, id) in old.enumerated() where !listed.contains(id) && isPresent(id) {
                let keptOlder = old[(i + 1)...].contains(where: listed.contains)
                if keptOlder || census.joiners.count < Census.maxJoiners { changes.append(.left(id, reason: 1)) }
            }
        }
        // A join that came lately may be newer than this census (the host
        // passes joins on as they come): kept until a census says otherwise.
        entries = entries.filter { listed.contains($0.key) || keeping.contains($0.key) || now - $0.value.joinedAt < RoomConstants.censusRefresh }
        presentCount = entries.values.count(where: \.present)
        return changes
    }
}
