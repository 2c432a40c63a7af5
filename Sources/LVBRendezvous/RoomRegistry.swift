import LVBCore
import LVBCrypto
import LVBGossip

/// What the registry did with an announcement.
public enum RegistryVerdict: Equatable, Sendable {
    case listed
    case refreshed
    /// The host closed the room: it left the list at once.
    case closed
    case refused(RegistryRefusal)
}

/// Why an announcement was not taken. Counted; the sender learns nothing.
public enum RegistryRefusal: Equatable, Sendable {
    /// Not older than the latest one of the room: a replay.
    case replayed
    /// Signed too long ago (or too far ahead) by the rendezvous's clock.
    case stale
    /// Another host already announces this room id.
    case otherHost
    /// The list is full.
    case full
}

/// One live room as the room list shows it.
public struct RoomListing: Equatable, Sendable {
    public var announcement: RoomAnnouncement
    /// When the rendezvous last heard from the host.
    public var lastHeard: Instant
}

/// The rendezvous's list of live rooms: soft state only. Hosts re-announce
/// every `announceInterval`; a room is listed until `announceTTL` after its
/// latest announcement, and leaves at once when its host says it closed. A
/// restart loses nothing for long. Sans-IO: time comes from `clock`;
/// announcements arrive already parsed (their signatures checked).
public final class RoomRegistry {
    private let clock: Clock
    private var rooms: [RoomID: RoomListing] = [:]
    /// The latest seq of rooms that closed, so a replay cannot bring one back.
    private var closedSeq: [RoomID: (seq: UInt64, at: Instant)] = [:]
    /// Which host a room id belongs to, remembered `roomOwnership` past its
    /// last announcement: a room that lapsed cannot be taken over by another
    /// host announcing the same (public) id.
    private var owners: [RoomID: (host: NodeID, at: Instant)] = [:]
    public private(set) var refused = 0

    public init(clock: Clock) { self.clock = clock }

    public var count: Int { rooms.count }

    public func listing(_ room: RoomID) -> RoomListing? { rooms[room] }

    /// Takes one announcement (already parsed and verified).
    public func apply(_ a: RoomAnnouncement) -> RegistryVerdict {
        let now = clock.now()
        expire(now: now)
        let wall = clock.wallTime().milliseconds
        let skew = UInt64(RendezvousConstants.announceClockSkew.milliseconds)
        guard a.time + skew >= wall, a.time <= wall + skew else { return refuse(.stale) }
        if let owner = owners[a.room], owner.host != a.host { return refuse(.otherHost) }
        if let old = rooms[a.room], a.seq <= old.announcement.seq { return refuse(.replayed) }
        if let closed = closedSeq[a.room], a.seq <= closed.seq { return refuse(.replayed) }
        if a.closed {
            // Remembered (bounded) so a replay cannot reopen it.
            guard owners[a.room] != nil || owners.count < 2 * RendezvousConstants.maxRooms else { return refuse(.full) }
            rooms[a.room] = nil
            owners[a.room] = (a.host, now)
            closedSeq[a.room] = (a.seq, now)
            return .closed
        }
        let isNew = rooms[a.room] == nil
        if isNew, rooms.count >= RendezvousConstants.maxRooms { return refuse(.full) }
        rooms[a.room] = RoomListing(announcement: a, lastHeard: now)
        owners[a.room] = (a.host, now)
        return isNew ? .listed : .refreshed
    }

    /// Page `n` (from 0) of the live rooms, most viewers first, then newest;
    /// and how many rooms there are in all.
    public func page(_ n: Int) -> (rooms: [RoomAnnouncement], total: Int) {
        expire(now: clock.now())
        let ordered = rooms.values.map(\.announcement).sorted { a, b in
            if a.viewers != b.viewers { return a.viewers > b.viewers }
            let (sa, sb) = (a.info.startedAt ?? 0, b.info.startedAt ?? 0)
            if sa != sb { return sa > sb }
            return a.room.bytes.lexicographicallyPrecedes(b.room.bytes)
        }
        let per = RendezvousConstants.roomsPerPage
        guard n >= 0, n * per < ordered.count else { return ([], ordered.count) }
        return (Array(ordered[(n * per)..<min(ordered.count, (n + 1) * per)]), ordered.count)
    }

    /// Forgets rooms not announced within the TTL (and old close records).
    public func expire(now: Instant) {
        rooms = rooms.filter { now - $0.value.lastHeard < RendezvousConstants.announceTTL }
        closedSeq = closedSeq.filter { now - $0.value.at < RendezvousConstants.announceTTL + RendezvousConstants.announceClockSkew }
        if owners.count > rooms.count { owners = owners.filter { now - $0.value.at < RendezvousConstants.roomOwnership } }
    }

    private func refuse(_ why: RegistryRefusal) -> RegistryVerdict {
        refused += 1
        return .refused(why)
    }
}
