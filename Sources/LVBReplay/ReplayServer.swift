import LVBCore
import LVBCrypto

/// Serves the replays a node holds to the peers that play them: manifests
/// and segments, in the chunks they ask for, read from the library (a
/// segment is checked against its manifest's hash before it is first
/// served, so a file changed on disk is never passed on). Only over
/// sessions (the transport has authenticated the peer and its address, so
/// nothing here amplifies), at most `chunkRate` chunks a second per peer
/// and `totalChunkRate` in all (a host's uplink stays its live's); requests
/// beyond them go unanswered and the player asks again. Only replays whose
/// live ended, and never a private room's. Sans-IO:
/// `send` takes each answer. Lives on the node's loop.
public final class ReplayServer {
    public struct Stats: Sendable, Equatable {
        public var requests = 0, chunksSent = 0, bytesSent = 0
        /// Malformed messages, and requests past the rate.
        public var malformed = 0, throttled = 0
        /// Requests for files not held here.
        public var missing = 0
        public init() {}
    }

    public private(set) var stats = Stats()
    public let library: ReplayLibrary
    private let clock: Clock
    private let send: (NodeID, [UInt8]) -> Void
    private var buckets: RateLimiter<NodeID>
    private var total: RateLimiter<Int>
    /// Files read lately, newest last (a replay played by many is read once).
    private var cache: [(key: Key, bytes: [UInt8])] = []
    private var cachedBytes = 0
    /// Replays served (ended, so they do not change): read once, read again
    /// only when a segment cannot be read; and those refused lately (not
    /// held, not ended, private), not read again within `manifestRefresh`.
    private var held: [ReplayID: (replay: ReplayLibrary.Held, manifest: [UInt8])] = [:]
    private var refused: [ReplayID: Instant] = [:]

    struct Key: Hashable { let id: ReplayID, index: UInt32 }

    /// About 34 Mbit/s to a peer, 67 Mbit/s in all (chunks of 1 KiB).
    public static let chunkRate = 4096, totalChunkRate = 8192
    static let chunkBurst = 512
    static let cacheBytes = 48 << 20
    static let manifestRefresh: Duration = .seconds(1)

    public init(library: ReplayLibrary, clock: Clock, send: @escaping (NodeID, [UInt8]) -> Void) {
        self.library = library
        self.clock = clock
        self.send = send
        buckets = RateLimiter(count: Self.chunkRate, burst: Self.chunkBurst, sweepThreshold: 256)
        total = RateLimiter(count: Self.totalChunkRate, burst: Self.chunkBurst * 2)
    }

    /// A message on the replay channel from `peer`.
    public func receive(_ payload: ArraySlice<UInt8>, from peer: NodeID) {
        guard let message = try? ReplayMessage.parse(payload) else { stats.malformed += 1; return }
        guard case let .request(id, index, first, count) = message else { return }
        stats.requests += 1
        let now = clock.now()
        guard let file = file(id, index, now: now) else {
            stats.missing += 1
            send(peer, ReplayMessage.missing(id, index: index).bytes)
            return
        }
        let chunks = ReplayMessage.chunks(file.count)
        for chunk in Int(first)..<min(Int(first) + Int(count), chunks) {
            guard buckets.allow(peer, now: now), total.allow(0, now: now) else { stats.throttled += 1; return }
            let start = chunk * ReplayMessage.chunkSize
            let data = file[start..<min(file.count, start + ReplayMessage.chunkSize)]
            send(peer, ReplayMessage.chunk(id, index: index, chunk: UInt16(chunk), total: UInt32(file.count), data: data).bytes)
            stats.chunksSent += 1
            stats.bytesSent += data.count
        }
    }

    /// The manifest's or a segment's bytes, if held here and sound.
    private func file(_ id: ReplayID, _ index: UInt32, now: Instant) -> [UInt8]? {
        if held[id] == nil {
            if let at = refused[id], now - at < Self.manifestRefresh { return nil }
            // A private room's replay is its host's alone; a live's, once it ended.
            guard let (replay, bytes) = try? library.read(id), !replay.manifest.info.isPrivate, replay.manifest.ended else {
                if refused.count >= 1024 { refused = refused.filter { now - $0.value < Self.manifestRefresh } }
                refused[id] = now
                return nil
            }
            held[id] = (replay, bytes)
        }
        guard let entry = held[id] else { return nil }
        if index == ReplayMessage.manifestIndex { return entry.manifest }
        let key = Key(id: id, index: index)
        if let hit = cache.firstIndex(where: { $0.key == key }) {
            let found = cache.remove(at: hit)
            cache.append(found)
            return found.bytes
        }
        guard let bytes = try? library.segment(entry.replay, Int(index)) else {
            // Deleted or changed on disk: read the replay afresh next time.
            held[id] = nil
            return nil
        }
        cache.append((key, bytes))
        cachedBytes += bytes.count
        while cachedBytes > Self.cacheBytes, cache.count > 1 { cachedBytes -= cache.removeFirst().bytes.count }
        return bytes
    }
}
