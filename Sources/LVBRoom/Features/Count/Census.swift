import LVBCore
import LVBCrypto
import LVBGossip

/// The host's word on how many are in the room: the count its neighbours
/// report up the room's counting tree (`PresenceCount`), the likes it has
/// tallied, and the latest joiners, newest first — a bounded list, like the
/// big live services show. Sent when the count or the list changes, at most
/// every `censusInterval` (`censusSoonest` when the count moved by
/// `censusMove`), and at least every `censusRefresh`, so everyone knows the
/// room's size without hearing from every member. Latest wins.
///
///     body: count(4) ‖ likes(8) ‖ n(1: 0...10) ‖ joiner(32) × n
public struct Census: EventContent, Equatable {
    public static let kind = EventKind(13, "census")
    /// Most joiners one census lists.
    public static let maxJoiners = 10
    public static let maxBodyLength = 4 + 8 + 1 + 32 * maxJoiners
    /// Members present, the host included.
    public var count: UInt32
    /// The room's like total as the host tallied it.
    public var likes: UInt64
    /// The latest joiners still present, newest first.
    public var joiners: [NodeID]

    public init(count: UInt32, likes: UInt64, joiners: [NodeID]) {
        self.count = count
        self.likes = likes
        self.joiners = joiners
    }

    public func validate() throws(EventError) {
        guard joiners.count <= Self.maxJoiners else { throw .badValue("census lists \(joiners.count) joiners (at most \(Self.maxJoiners))") }
        guard Set(joiners).count == joiners.count else { throw .badValue("census lists a joiner twice") }
    }

    public func encode(into w: inout ByteWriter) {
        w.write(count)
        w.write(likes)
        w.write(UInt8(joiners.count))
        for j in joiners { w.write(bytes: j.publicKey) }
    }

    public static func decode(_ r: inout RoomEventReader) throws(EventError) -> Census {
        let count = try r.uint32(), likes = try r.uint64(), n = Int(try r.uint8())
        guard n <= maxJoiners else { throw .badValue("census lists \(n) joiners (at most \(maxJoiners))") }
        var joiners: [NodeID] = []
        for _ in 0..<n { joiners.append(try r.nodeID()) }
        return Census(count: count, likes: likes, joiners: joiners)
    }
}

extension EventKind {
    public static let census = Census.kind
}

extension EventBody {
    public static func census(_ c: Census) -> EventBody { EventBody(c) }
}

/// The host's alone; latest wins.
extension Census: RoomEventRule {
    static var retention: EventRetention { .latest }

    func decide(_ e: RoomEvent, in state: RoomState, now: Instant, limited: Bool) -> RoomState.Verdict {
        guard e.author == state.host else { return .rejected(.notHost(Self.kind)) }
        let before = state.census, shown = state.roomCount
        if let order = state.keepLatest(e) { return order }
        // The host's latest word on the count wins, census or count report.
        state.heardCount = nil
        var changes: [RoomChange] = shown != count ? [.counted(count)] : []
        if !state.isHostsView { changes = state.presence.follow(self, after: before, keeping: Set(state.coHosts + [state.host] + (state.me.map { [$0] } ?? [])), now: now) + changes }
        return .accepted(changes)
    }
}

extension Census {
    static func notice(for change: RoomChange, names: RoomNames) -> RoomNotice? {
        guard case let .counted(count) = change else { return nil }
        var l = JSONLine(event: "count")
        l.add("count", Int(count))
        return RoomNotice(l, human: "\(count) in the room", tag: "count")
    }
}
