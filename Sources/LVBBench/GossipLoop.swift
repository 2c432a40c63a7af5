import LVBCore
import LVBCrypto
import LVBGossip
import LVBRoom
import LVBTransport
import NIOCore
import NIOPosix

/// One benchmark node: a UDP transport with a `GossipNode` on top. Every
/// mutable field is touched only on `udp.eventLoop`.
final class GossipMember: @unchecked Sendable {
    var udp: UDPNode!
    var gossip: GossipNode!
    var ticker: RepeatedTask?
    var closing = false
    var nextSeq: UInt64 = 1
    /// When this node (as author) handed each event to gossip or the star loop.
    var sent: [EventID: Instant] = [:]
    /// When each event was first accepted here, by gossip and by direct unicast.
    var arrivals: [EventID: Instant] = [:]
    var starArrivals: [EventID: Instant] = [:]

    var id: NodeID { udp.core.nodeID }
    var loop: EventLoop { udp.eventLoop }

    func handle(_ event: TransportEvent) {
        guard !closing else { return }
        switch event {
        case let .message(peer, .gossip, payload): gossip?.receive(payload, from: peer)
        case let .message(_, GossipLoop.starChannel, payload):
            // The receiver of a direct event still checks its signature, as gossip does.
            if let e = try? RoomEvent.parse(payload, kinds: RoomEvents.table), starArrivals[e.id] == nil { starArrivals[e.id] = SystemClock.shared.now() }
        case let .gone(peer, _): gossip?.peerDown(peer)
        default: break
        }
    }

    /// Creates this node's gossip and its tick (on its loop), as a node does when it joins.
    func startGossip(clock: Clock) {
        let g = GossipNode(id: id, transport: TransportGossipAdapter(core: udp.core), kinds: RoomEvents.table, clock: clock, random: SodiumRandom.shared)
        g.accept = { [unowned self] event, _ in
            if arrivals[event.id] == nil { arrivals[event.id] = clock.now() }
            return .accept
        }
        gossip = g
        let tick = TimeAmount.nanoseconds(GossipConstants.tickInterval.nanosecondsClamped)
        ticker = loop.scheduleRepeatedTask(initialDelay: tick, delay: tick) { [unowned self] _ in gossip.tick() }
    }

    /// Signs the next event of this author (on its loop).
    func makeEvent(room: RoomID) -> RoomEvent? {
        let wall = SystemClock.shared.wallTime()
        let ms = wall.seconds * 1000 + UInt64(wall.nanoseconds / 1_000_000)
        let text = "bench line \(nextSeq): a chat message of about the usual length in a busy room."
        defer { nextSeq += 1 }
        return try? RoomEvent.make(room: room, author: udp.core.identity, seq: nextSeq, timestamp: ms, body: .chat(text: text))
    }

    func onLoop<T>(_ body: @escaping () -> T) async throws -> T {
        try await loop.submit { body() }.get()
    }
}

/// What one gossip run measured.
struct GossipResult {
    var nodes = 0
    var events = 0
    var deliveries = 0
    var latenciesMS: [Double] = []
    var copies = 0
    var delivered = 0
    var grafts = 0
    var ihaves = 0
    var repairs = 0
    var setupSeconds = 0.0
    var ready = false
    var starEvents = 0
    /// Directions (node → peer) without an established session when the star round began.
    var starSessionsMissing = 0
    var starDeliveries = 0
    var starLatenciesMS: [Double] = []

    var deliveryRatio: Double { events == 0 ? 0 : Double(deliveries) / Double(events * (nodes - 1)) }
    var copiesPerDelivery: Double { delivered == 0 ? 0 : Double(copies) / Double(delivered) }
}

/// N gossip nodes in one process over real loopback sockets: events from
/// random authors at a steady rate, then the same rounds as direct unicasts
/// from the author to every node (the "star" reference) over the same sockets.
enum GossipLoop {
    /// The star reference travels on a channel gossip does not read.
    static let starChannel = DataChannel.rtp
    static let eventsPerSecond = 20.0

    static func run(seconds: Double, nodes count: Int = 32) async throws -> GossipResult {
        var result = GossipResult()
        result.nodes = count
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let room = RoomID.random(SodiumRandom.shared)
        let clock = SystemClock.shared
        var members: [GossipMember] = []
        for _ in 0..<count {
            let m = GossipMember()
            m.udp = try await UDPNode.start(identity: .generate(), listen: .ipv4(127, 0, 0, 1, port: 0),
                                            group: group, clock: clock) { [m] e in m.handle(e) }
            members.append(m)
        }
        try await members[0].onLoop { members[0].startGossip(clock: clock) }

        // Everyone joins through node 0, one at a time as viewers enter a room.
        // Spread over one digest interval, the nodes' periodic timers are out of
        // phase as in a real room rather than all firing in the same instant.
        let setupStart = ContinuousClock.now
        let contact = PeerRecord(id: members[0].id, address: members[0].udp.localAddress)
        let spacing = GossipConstants.digestInterval / (count - 1)
        for m in members.dropFirst() {
            m.loop.execute {
                m.startGossip(clock: clock)
                m.gossip.join(via: contact)
            }
            try await Task.sleep(for: spacing)
        }
        result.ready = await eventually(seconds: 15) {
            for m in members {
                let n = try? await m.onLoop { m.gossip.active.filter { m.udp.core.isEstablished(with: $0) }.count }
                if (n ?? 0) < 2 { return false }
            }
            return true
        }
        result.setupSeconds = (ContinuousClock.now - setupStart).seconds

        // Gossip phase: one event every 1/rate s from a random author.
        let rng = SeededRandom(seed: 32)
        let authors = (0..<max(1, Int(seconds * eventsPerSecond))).map { _ in Int(rng.next() % UInt64(count)) }
        try await paced(authors) { a in
            let m = members[a]
            m.loop.execute {
                guard let e = m.makeEvent(room: room) else { return }
                m.sent[e.id] = clock.now()
                m.gossip.broadcast(e)
            }
        }
        let expected = authors.count * (count - 1)
        // Stragglers: a graft (120 ms) or a digest (700 ms) may still bring some.
        _ = await eventually(seconds: 3) { await totalArrivals(members, \.arrivals) >= expected }

        let sent = try await collect(members) { $0.sent }
        let arrivals = try await collect(members) { $0.arrivals }
        result.events = sent.reduce(0) { $0 + $1.count }
        (result.deliveries, result.latenciesMS) = latencies(sent: sent, arrivals: arrivals)
        for m in members {
            let s = try await m.onLoop { m.gossip.stats }
            result.copies += s.eventCopiesReceived
            result.delivered += s.delivered
            result.grafts += s.grafts
            result.ihaves += s.ihavesSent
            result.repairs += s.repairsSent
        }

        // Star phase: sessions between every pair, then the same authors unicast.
        let ids = members.map(\.id)
        for (i, m) in members.enumerated() {
            let others = members[(i + 1)...].map { ($0.id, $0.udp.localAddress) }
            m.loop.execute { for (id, address) in others { m.udp.core.connect(to: address, expecting: id) } }
        }
        func sessionsMissing() async -> Int {
            var missing = 0
            for m in members {
                missing += (try? await m.onLoop { ids.filter { $0 != m.id && !m.udp.core.isEstablished(with: $0) }.count }) ?? ids.count
            }
            return missing
        }
        _ = await eventually(seconds: 10) { await sessionsMissing() == 0 }
        // Measured even if some sessions are still down: sends to them queue
        // in the transport, and the delivery count shows what never arrived.
        result.starSessionsMissing = await sessionsMissing()
        try await paced(authors) { a in
            let m = members[a]
            m.loop.execute {
                guard let e = m.makeEvent(room: room) else { return }
                m.sent[e.id] = clock.now()
                for id in ids where id != m.id { try? m.udp.core.send(e.encoded, channel: starChannel, to: id) }
            }
        }
        _ = await eventually(seconds: 3) { await totalArrivals(members, \.starArrivals) >= expected }
        let allSent = try await collect(members) { $0.sent }
        let starArrivals = try await collect(members) { $0.starArrivals }
        result.starEvents = allSent.reduce(0) { $0 + $1.count } - result.events
        (result.starDeliveries, result.starLatenciesMS) = latencies(sent: allSent, arrivals: starArrivals)

        for m in members {
            try? await m.onLoop {
                m.closing = true
                m.ticker?.cancel()
            }
        }
        for m in members { await m.udp.close() }
        try await group.shutdownGracefully()
        return result
    }

    /// Calls `body` with each item, one every 1/rate s on a fixed schedule (no drift).
    static func paced(_ items: [Int], _ body: (Int) -> Void) async throws {
        let start = ContinuousClock.now
        for (k, item) in items.enumerated() {
            try await Task.sleep(until: start + .milliseconds(Int(Double(k) * 1000 / eventsPerSecond)), clock: .continuous)
            body(item)
        }
    }

    /// Gathers one dictionary from every node, each read on its own loop.
    static func collect(_ members: [GossipMember], _ field: @escaping (GossipMember) -> [EventID: Instant]) async throws -> [[EventID: Instant]] {
        var out: [[EventID: Instant]] = []
        for m in members { out.append(try await m.onLoop { field(m) }) }
        return out
    }

    static func totalArrivals(_ members: [GossipMember], _ field: KeyPath<GossipMember, [EventID: Instant]>) async -> Int {
        var total = 0
        for m in members { total += (try? await m.onLoop { m[keyPath: field].count }) ?? 0 }
        return total
    }

    /// Deliveries (arrivals of events sent in this phase) and their latencies in ms.
    static func latencies(sent perNode: [[EventID: Instant]], arrivals: [[EventID: Instant]]) -> (Int, [Double]) {
        var sent: [EventID: Instant] = [:]
        for s in perNode { sent.merge(s) { a, _ in a } }
        var out: [Double] = []
        for node in arrivals {
            for (id, at) in node { if let t = sent[id] { out.append((at - t).milliseconds) } }
        }
        return (out.count, out.sorted())
    }

    /// Polls `condition` every 50 ms until it holds or `seconds` pass.
    static func eventually(seconds: Double, _ condition: () async -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return await condition()
    }
}

/// The value at fraction `p` of an ascending list (nearest rank); 0 if empty.
func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    let rank = Int((p * Double(sorted.count)).rounded(.up)) - 1
    return sorted[min(max(rank, 0), sorted.count - 1)]
}
