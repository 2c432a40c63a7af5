import DequeModule
import LVBCore
import LVBCrypto
import LVBGossip

/// The state of one room as one node sees it, built only from signed events:
/// who is present, the chat log, like totals, profiles, room info and the
/// host's moderation. Lives on the node's event loop (not thread-safe).
///
/// Every event passes the same gate in the same order — room, duplicate,
/// closed, kicked, the author's rights, latest-wins staleness, rate — so two
/// nodes that accept the same events reach the same state whatever the order,
/// apart from rate limits, which depend on when events arrive.
public final class RoomState {
    public let room: RoomID
    public let host: NodeID
    public internal(set) var isClosed = false

    private let clock: Clock
    var recent = RecentEvents()
    var chat = ChatHistory()
    /// When the room's latest chat lines and bullet comments were accepted
    /// here (the room-wide chat rate), within `roomChatWindow`.
    var chatTimes = Deque<Instant>()
    var presence = Presence()
    var likeTally = LikeTally()
    /// The latest event of each kind that keeps one (`EventRetention.latest`:
    /// room info, census, gift rank, PK battle, quiz…), by the author's sequence.
    var latest: [EventKind: RoomEvent] = [:]
    /// What the room's features keep of the events their kinds decide (`part`).
    private var parts: [ObjectIdentifier: any RoomStatePart] = [:]
    /// The latest event of each author, for each kind that keeps one per
    /// author (`EventRetention.latestPerAuthor`: profiles, relay positions).
    private(set) var byAuthor: [EventKind: [NodeID: RoomEvent]] = [:]
    var closedEvent: RoomEvent?
    /// The room's count as the host's own count report says it, heard over
    /// a session with the host (authenticated by it, so as good as the
    /// census) since the last census; nil once those reports stop.
    var heardCount: UInt32?
    /// Each member's latest relay position (the media tree: kept per
    /// author), and when it or anything from its author was last heard.
    var relays: [NodeID: RoomEvent] { byAuthor[RelayPosition.kind] ?? [:] }
    var relaysHeard: [NodeID: Instant] = [:]
    /// The host's own state: it keeps every member that told it of itself
    /// (its roster) and watches the ones its census lists. A member's state
    /// keeps the host, the co-hosts and the census's joiners.
    public var isHostsView = false
    /// The host's own list: the joiners it listed (passed on to the room),
    /// newest first; its census shows them a moment later.
    var listed: [NodeID] = []
    /// The node whose state this is (kept whatever the census lists).
    public var me: NodeID?
    var treeCache: [NodeID: RelayPosition]?
    var chatBuckets = RateLimiter<NodeID>(count: RoomConstants.chatRate, burst: RoomConstants.chatBurst, sweepThreshold: RoomConstants.sweepThreshold)
    var profileBuckets = RateLimiter<NodeID>(count: RoomConstants.profileRate, burst: RoomConstants.profileBurst, sweepThreshold: RoomConstants.sweepThreshold)
    var likeBuckets = RateLimiter<NodeID>(count: RoomConstants.likeEventRate, burst: RoomConstants.likeEventBurst, sweepThreshold: RoomConstants.sweepThreshold)
    var relayBuckets = RateLimiter<NodeID>(count: RoomConstants.relayRate, burst: RoomConstants.relayBurst, sweepThreshold: RoomConstants.sweepThreshold)

    public init(room: RoomID, host: NodeID, clock: Clock) {
        self.room = room
        self.host = host
        self.clock = clock
    }

    // MARK: Applying events

    /// Checks rights, rate limits and state, then applies. Deduplicates by
    /// event id in bounded memory (the last `RoomConstants.rememberedEventIDs`
    /// ids plus each author's floor, and per-author latest sequence numbers of
    /// latest-wins kinds). `fromHistory` skips the rate limits: history from
    /// a neighbour (`retainedEvents()`) arrives in one burst by design.
    public func apply(_ e: RoomEvent, fromHistory: Bool = false) -> Verdict {
        guard e.room == room else { return .rejected(.wrongRoom) }
        guard !recent.contains(e.id) else { return .duplicate }
        guard !isClosed else { return .rejected(.roomClosed) }
        // What the features' parts refuse outright (a kicked author…).
        for part in parts.values { if let why = part.refuses(e) { return .rejected(why) } }

        let now = clock.now()
        let verdict = decide(e, now: now, limited: !fromHistory)
        guard case let .accepted(changes) = verdict else { return verdict }
        recent.insert(e.id)
        // Presence events speak for themselves; any other shows its author is here.
        let kind = e.body.kind
        let all = kind == MemberJoin.kind || kind == MemberLeave.kind ? changes : presence.heard(e.author, now: now) + changes
        if relaysHeard[e.author] != nil { relaysHeard[e.author] = now }
        // The tree changes with a position (its rule says so), or with who is present.
        if all.contains(where: \.changesPresence) { treeCache = nil }
        return .accepted(all)
    }

    /// The kind's rule decides (`RoomEvents`); a kind this version does not know is refused.
    private func decide(_ e: RoomEvent, now: Instant, limited: Bool) -> Verdict {
        guard let rule = e.body.content as? any RoomEventRule else { return .rejected(.unknownKind(e.body.kind)) }
        return rule.decide(e, in: self, now: now, limited: limited)
    }

    /// A chat line or bullet comment: refused from a muted author or past the
    /// chat rate; else kept in the chat history.
    func post(_ e: RoomEvent, now: Instant, limited: Bool, change: RoomChange) -> Verdict {
        if isMuted(e.author) { return .rejected(.authorMuted) }
        if limited, !chatBuckets.allow(e.author, now: now) { return .rejected(.rateLimited) }
        chat.append(e)
        chatTimes.append(now)
        trimChatTimes(now: now)
        return .accepted([change])
    }

    private func trimChatTimes(now: Instant) {
        while let first = chatTimes.first, now - first >= RoomConstants.roomChatWindow { chatTimes.removeFirst() }
        // More than the window can hold at the highest rate says nothing more.
        while chatTimes.count > Int(RoomInfo.chatRates.upperBound) * 4 { chatTimes.removeFirst() }
    }

    /// This node's wall clock, in ms since the Unix epoch (what event timestamps use).
    var wallMs: UInt64 { clock.wallTime().milliseconds }

    /// Chat lines and bullet comments the whole room carries a second.
    public var roomChatRate: UInt16 { info.chatRate ?? RoomConstants.defaultRoomChatRate }

    /// Whether the room already carried its chat rate over the last
    /// `roomChatWindow`: an author holds its line back.
    public func isChatBusy() -> Bool {
        let now = clock.now()
        trimChatTimes(now: now)
        return Double(chatTimes.count) >= Double(roomChatRate) * RoomConstants.roomChatWindow.seconds
    }

    /// The host closed the room with `e`: every later event is refused.
    func close(by e: RoomEvent) {
        isClosed = true
        closedEvent = e
    }

    /// A relay position changed: the tree is read afresh.
    func treeChanged() { treeCache = nil }

    /// For a kind that keeps its latest event (`EventRetention.latest`): nil
    /// when `e` is newer than the one kept, which it replaces; else the verdict.
    func keepLatest(_ e: RoomEvent) -> Verdict? {
        if let order = Self.order(e, after: latest[e.body.kind]) { return order }
        latest[e.body.kind] = e
        return nil
    }

    /// The rule of most kinds that keep their latest: the host's alone, an
    /// older one refused as stale, shown as posted.
    func hostsLatest(_ e: RoomEvent) -> Verdict {
        guard e.author == host else { return .rejected(.notHost(e.body.kind)) }
        if let order = keepLatest(e) { return order }
        return .accepted([.posted(e)])
    }

    /// The latest event of `e`'s kind from `e`'s author, kept (`EventRetention.latestPerAuthor`).
    func authorsLatest(_ e: RoomEvent) -> RoomEvent? { byAuthor[e.body.kind]?[e.author] }

    /// Keeps `e` as its author's latest of its kind (the kind's rule checked its order).
    func keepByAuthor(_ e: RoomEvent) { byAuthor[e.body.kind, default: [:]][e.author] = e }

    /// The latest event of kind `T` kept (`EventRetention.latest`), as its content.
    func latest<T: RoomEventRule>(_ kind: T.Type) -> T? { latest[T.kind]?.body.as(T.self) }

    /// A feature's own record of the events its kinds decide, made on first use.
    /// (Read per event and per media packet, `isKicked`: the key is the
    /// part's own type, so the stored part is a `T` and needs no checked cast.)
    func part<T: RoomStatePart>(_ type: T.Type) -> T {
        if let part = parts[ObjectIdentifier(type)] { return unsafeDowncast(part, to: T.self) }
        let part = T()
        parts[ObjectIdentifier(type)] = part
        return part
    }

    /// For a latest-wins kind: nil if `e` is newer than `previous` (same
    /// author), else the verdict (`.duplicate` for the same sequence number).
    static func order(_ e: RoomEvent, after previous: RoomEvent?) -> Verdict? {
        guard let previous else { return nil }
        if e.seq > previous.seq { return nil }
        return e.seq == previous.seq ? .duplicate : .rejected(.stale)
    }

    // MARK: Presence

    /// Call about once a second: watched members silent for
    /// `RoomConstants.presenceTimeout` are shown as left (reason 1,
    /// timeout): the host watches the joiners its census lists, a member
    /// watches the host. Relay positions not heard for
    /// `RoomConstants.positionLifetime` are dropped.
    public func expirePresence() -> [RoomChange] {
        let now = clock.now()
        let watched = isHostsView ? Set(listed.prefix(Census.maxJoiners)) : [host]
        let changes = presence.expire(now: now, only: watched)
        let stale = relaysHeard.filter { now - $0.value >= RoomConstants.positionLifetime }.keys
        for id in stale {
            byAuthor[RelayPosition.kind]?[id] = nil
            relaysHeard[id] = nil
        }
        if !stale.isEmpty || changes.contains(where: \.changesPresence) { treeCache = nil }
        return changes + parts.values.flatMap { $0.expire(now: now) }
    }

    /// `id` left or was removed: its relay position goes with it.
    func forgetPosition(of id: NodeID) {
        guard byAuthor[RelayPosition.kind]?.removeValue(forKey: id) != nil else { return }
        relaysHeard[id] = nil
        treeCache = nil
    }

    /// Call on any authenticated traffic from `id` (gossip, media, control):
    /// it refreshes the member's presence, and brings back a member that had
    /// timed out (the returned `.joined`).
    @discardableResult
    public func noteActivity(from id: NodeID) -> [RoomChange] {
        guard !isClosed else { return [] }
        let now = clock.now()
        let changes = presence.heard(id, now: now)
        if relaysHeard[id] != nil { relaysHeard[id] = now }
        if changes.contains(where: \.changesPresence) { treeCache = nil }
        return changes
    }

    // MARK: Reading state

    /// The last `RoomConstants.chatHistory` chat and bullet-comment events, in arrival order.
    public var chatLog: [RoomEvent] { Array(chat.log) }

    /// The sum over authors of each author's highest like total (saturating).
    public var likeTotal: UInt64 { likeTally.roomTotal }

    public func likes(of id: NodeID) -> UInt64 { likeTally.total(of: id) }

    /// The PK battle as the host last told it (nil: none since we joined).
    public var pkBattle: PKBattle? { latest(PKBattle.self) }

    /// The members this node lists, in order of arrival: the host, the
    /// co-hosts and the latest joiners the host's census names (before the
    /// first census, everyone known). `count` says how many are in the room.
    public var members: [Member] {
        let joiners = isHostsView ? Array(listed.prefix(Census.maxJoiners)) : census?.joiners
        guard let joiners else { return known }
        // Built from the few shown, not by sorting everyone known (the host
        // knows the whole room).
        let shown = Set(joiners).union(coHosts).union([host])
        return shown.compactMap { id in presence.entries[id].flatMap { $0.present ? member(id, $0) : nil } }.sorted(by: Self.arrival)
    }

    /// Every member this node knows present (on the host: everyone that told it of itself).
    public var known: [Member] {
        presence.present.map(member)
    }

    private func member(_ id: NodeID, _ entry: Presence.Entry) -> Member {
        var m = Member(id: id, profile: profile(of: id), role: entry.role, joinedAt: entry.joinedAt, instance: entry.instance)
        m.onStage = isOnStage(id)
        return m
    }

    /// Order of arrival, ties by key bytes (as `Presence.present`).
    private static func arrival(_ a: Member, _ b: Member) -> Bool {
        a.joinedAt != b.joinedAt ? a.joinedAt < b.joinedAt : a.id.publicKey.lexicographicallyPrecedes(b.id.publicKey)
    }

    public func isPresent(_ id: NodeID) -> Bool { presence.isPresent(id) }

    /// The host's latest census, if one came.
    public var census: Census? { latest(Census.self) }

    /// How many are in the room (the host included) as the host last said
    /// it: its census or, if one came since, its count report to this node
    /// (the census goes out sooner when the count moved, the reports every
    /// 1.5 s even to a member no gossip reaches); nil before either came.
    public var roomCount: UInt32? { heardCount ?? census?.count }

    /// How many are in the room (the host included): `roomCount`, or the
    /// members this node knows before the host said.
    public var count: Int {
        roomCount.map { Int($0) } ?? presence.presentCount
    }

    /// The host's count report came over a session with the host.
    func hostCounted(_ count: UInt32) -> [RoomChange] {
        guard !isHostsView, !isClosed else { return [] }
        let before = roomCount
        heardCount = count
        return before != count ? [.counted(count)] : []
    }

    /// The host's count reports stopped (went stale or the session ended):
    /// the census says the count again.
    func hostCountLost() -> [RoomChange] {
        guard let heard = heardCount else { return [] }
        heardCount = nil
        guard let census, census.count != heard else { return [] }
        return [.counted(census.count)]
    }

    public func profile(of id: NodeID) -> Profile? {
        byAuthor[Profile.kind]?[id]?.body.as(Profile.self)
    }

    /// The latest room info (all fields nil until the host sends one).
    public var info: RoomInfo {
        latest(RoomInfo.self) ?? RoomInfo()
    }


    /// The media tree as its members last told it: each present member's
    /// latest relay position (a member that left keeps none).
    /// Kept until a position or a change of presence (every node
    /// reads it each tick; a room of hundreds changes far less often).
    public var tree: [NodeID: RelayPosition] {
        if let treeCache { return treeCache }
        var out: [NodeID: RelayPosition] = [:]
        for (id, e) in relays where !isKicked(id) {
            if let p = e.body.as(RelayPosition.self) { out[id] = p }
        }
        treeCache = out
        return out
    }


    /// The events a late joiner needs to reach this state, bounded whatever
    /// the room's size (a snapshot of at most about 64 KB), and what the
    /// features' parts add (`RoomStatePart.retained`): the newest chat
    /// and bullet comments up to `snapshotChatBytes`, the top
    /// `snapshotLikers` likers' latest likes, the host's, the co-hosts' and
    /// the census's joiners' joins, profiles and stage events, the latest
    /// event of each kind that keeps one while it is news (room info,
    /// census, gift rank, a running PK battle, an open quiz…; relay positions travel along the media tree,
    /// `TreeView`, not in snapshots); then the latest `snapshotModeration` kicks and
    /// mutes; then the room's closing. Each group is ordered by timestamp,
    /// then author key, then sequence number, so nodes with the same state
    /// give the same list; moderation comes last so a chat this node
    /// accepted before a kick or mute is accepted by the joiner too,
    /// whatever the authors' clock skew.
    public func retainedEvents() -> [RoomEvent] {
        var content: [RoomEvent] = []
        var chatBytes = 0
        for e in chat.latest.reversed() {
            chatBytes += e.encoded.count
            guard chatBytes <= RoomConstants.snapshotChatBytes else { break }
            content.append(e)
        }
        content += likeTally.top(RoomConstants.snapshotLikers)
        let shown = members
        for m in shown {
            if let join = presence.entries[m.id]?.join { content.append(join) }
        }
        // Each kind's latest that is still news (a PK battle that is over is not), and each
        // per-author kind's latest of the members shown (profiles; relay positions are never news).
        for kind in RoomEvents.kinds {
            switch kind.retention {
            case .latest:
                if let e = latest[kind.kind], kind.isNews(e, in: self) { content.append(e) }
            case .latestPerAuthor:
                guard let kept = byAuthor[kind.kind] else { continue }
                content += shown.compactMap { kept[$0.id] }.filter { kind.isNews($0, in: self) }
            case .none:
                break
            }
        }
        // The features' parts: with the content (stage events), or after it (moderation).
        var last: [RoomEvent] = []
        for part in parts.values {
            let retained = part.retained(members: shown)
            content += retained.content
            last += retained.last
        }
        return content.sorted(by: RoomEvent.historyOrder)
            + last.sorted(by: RoomEvent.historyOrder)
            + (closedEvent.map { [$0] } ?? [])
    }
}
