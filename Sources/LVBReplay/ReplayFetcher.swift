import LVBCore
import LVBCrypto

/// Fetches a replay from the nodes that hold it, several at once: the
/// manifest first (checked: the id and the host's signature), then the
/// segments the player wants, in its order, each from one holder at a time
/// (the one that has served least so far, so the load spreads), in chunks
/// asked for a window at a time. A chunk not answered within the holder's
/// retransmission timeout is asked for again; a holder silent for
/// `silentAfter` with requests out loses its segments to the others for a
/// while; a holder whose segment or manifest does not check is dropped for
/// good. Sans-IO: `send` takes each request; call `tick` every few tens of
/// milliseconds. Lives on the node's loop.
public final class ReplayFetcher {
    public enum Event: Equatable {
        case manifest(ReplayManifest)
        /// Segment `index`, checked against the manifest.
        case segment(Int, [UInt8])
        /// A holder left out for good, and why.
        case dropped(NodeID, String)
    }

    public struct Stats: Sendable, Equatable {
        /// Bytes of checked files each holder served.
        public var bytesFrom: [NodeID: Int] = [:]
        public var requests = 0, chunks = 0, duplicates = 0, timeouts = 0, badFiles = 0, malformed = 0
        public init() {}
    }

    private struct Holder {
        var inFlight = 0
        var window = ReplayFetcher.initialWindow
        var srtt: Duration?
        /// The first request sent since the holder was last heard from.
        var unansweredSince: Instant?
        var restingUntil: Instant?
        var missing: Set<UInt32> = []
        var served = 0
    }

    private struct Transfer {
        var holder: NodeID
        var total: Int?
        var chunks: [[UInt8]?] = []
        /// Chunks asked for and not yet come: when, and of whom.
        var asked: [Int: (at: Instant, of: NodeID)] = [:]
        var sources: Set<NodeID> = []
        var received = 0
    }

    public var onEvent: ((Event) -> Void)?
    public let id: ReplayID
    public private(set) var manifest: ReplayManifest?
    /// The manifest's signed bytes, as they came (to keep beside the segments).
    public private(set) var manifestBytes: [UInt8]?
    public private(set) var stats = Stats()
    /// Segments fetched at once, at most.
    public var parallel = 4

    private let clock: Clock
    private let send: (NodeID, [UInt8]) -> Void
    private var holders: [NodeID: Holder] = [:]
    private var dropped: Set<NodeID> = []
    private var transfers: [UInt32: Transfer] = [:]
    private var wanted: [Int] = []

    static let initialWindow = 128
    static let maxWindow = 512
    static let batch: UInt8 = 16
    static let minimumTimeout: Duration = .milliseconds(60)
    public static let silentAfter: Duration = .milliseconds(400)
    static let rest: Duration = .seconds(3)

    public init(id: ReplayID, clock: Clock, send: @escaping (NodeID, [UInt8]) -> Void) {
        self.id = id
        self.clock = clock
        self.send = send
    }

    public var holderIDs: [NodeID] { Array(holders.keys) }

    /// A node that holds the replay (its session may still be coming up).
    public func addHolder(_ peer: NodeID) {
        guard !dropped.contains(peer), holders[peer] == nil else { return }
        holders[peer] = Holder()
    }

    /// A holder went away: its segments go to the others.
    public func removeHolder(_ peer: NodeID) {
        guard holders.removeValue(forKey: peer) != nil else { return }
        for (index, t) in transfers where t.holder == peer { reassign(index) }
    }

    /// The segments wanted, most urgent first (from the play position on):
    /// those the caller lacks, even if delivered before (a player keeps only
    /// the segments around its position, and seeks back); transfers of
    /// others go on.
    public func want(_ indices: [Int]) {
        wanted = indices
    }

    public func receive(_ payload: ArraySlice<UInt8>, from peer: NodeID) {
        guard holders[peer] != nil else { return }
        guard let message = try? ReplayMessage.parse(payload) else { stats.malformed += 1; return }
        let now = clock.now()
        holders[peer]?.unansweredSince = nil
        switch message {
        case let .missing(replay, index) where replay == id:
            holders[peer]?.missing.insert(index)
            for (i, t) in transfers where i == index && t.holder == peer { reassign(i) }
        case let .chunk(replay, index, chunk, total, data) where replay == id:
            took(index, Int(chunk), total: Int(total), data, from: peer, now: now)
        default:
            break
        }
    }

    /// Timeouts, silent holders, new transfers and requests.
    public func tick() {
        let now = clock.now()
        for (index, t) in transfers {
            var transfer = t
            for (chunk, ask) in t.asked where now - ask.at >= timeout(ask.of) {
                transfer.asked[chunk] = nil
                if var h = holders[ask.of] {
                    h.inFlight -= 1
                    h.window = max(Int(Self.batch), h.window / 2)
                    holders[ask.of] = h
                }
                stats.timeouts += 1
            }
            transfers[index] = transfer
            // Nothing heard since requests went out: the holder rests, another takes over.
            if let since = holders[t.holder]?.unansweredSince, now - since >= Self.silentAfter {
                holders[t.holder]?.restingUntil = now + Self.rest
                reassign(index)
            }
        }
        startTransfers(now: now)
        for index in transfers.keys { pump(index, now: now) }
    }

    private func timeout(_ peer: NodeID) -> Duration {
        guard let srtt = holders[peer]?.srtt else { return .milliseconds(250) }
        return max(Self.minimumTimeout, srtt * 3)
    }

    /// The holder that has served least, of those that may have `index`:
    /// one not resting after a silence if there is one.
    private func pick(for index: UInt32, now: Instant, avoiding: Set<NodeID> = []) -> NodeID? {
        let candidates = holders.filter { !$0.value.missing.contains(index) && !avoiding.contains($0.key) }
        let awake = candidates.filter { $0.value.restingUntil.map { now >= $0 } ?? true }
        let busy = Dictionary(grouping: transfers.values, by: \.holder).mapValues(\.count)
        return (awake.isEmpty ? candidates : awake).keys.min {
            let a = (busy[$0] ?? 0, holders[$0]?.served ?? 0), b = (busy[$1] ?? 0, holders[$1]?.served ?? 0)
            return a != b ? a < b : $0.publicKey.lexicographicallyPrecedes($1.publicKey)
        }
    }

    private func startTransfers(now: Instant) {
        guard let manifest else {
            let index = ReplayMessage.manifestIndex
            if transfers[index] == nil, let holder = pick(for: index, now: now) { transfers[index] = Transfer(holder: holder) }
            return
        }
        for segment in wanted where transfers.count < parallel {
            let index = UInt32(segment)
            guard manifest.segments.indices.contains(segment), transfers[index] == nil,
                  let holder = pick(for: index, now: now) else { continue }
            var t = Transfer(holder: holder)
            let total = Int(manifest.segments[segment].length)
            t.total = total
            t.chunks = Array(repeating: nil, count: ReplayMessage.chunks(total))
            transfers[index] = t
        }
    }

    /// Asks the transfer's holder for the next chunks its window allows.
    private func pump(_ index: UInt32, now: Instant) {
        guard var t = transfers[index], var h = holders[t.holder] else { return }
        // Without the file's length (the manifest's first chunks), one batch only.
        let count = t.total.map(ReplayMessage.chunks) ?? Int(Self.batch)
        var chunk = 0
        while h.inFlight < h.window, chunk < count {
            guard (t.chunks.indices.contains(chunk) ? t.chunks[chunk] == nil : true), t.asked[chunk] == nil else { chunk += 1; continue }
            var n = 0
            while chunk + n < count, n < Int(Self.batch), h.inFlight + n < h.window,
                  (t.chunks.indices.contains(chunk + n) ? t.chunks[chunk + n] == nil : true), t.asked[chunk + n] == nil {
                t.asked[chunk + n] = (now, t.holder)
                n += 1
            }
            guard n > 0 else { break }
            send(t.holder, ReplayMessage.request(id, index: index, first: UInt16(chunk), count: UInt8(n)).bytes)
            stats.requests += 1
            if h.unansweredSince == nil { h.unansweredSince = now }
            h.inFlight += n
            chunk += n
        }
        holders[t.holder] = h
        transfers[index] = t
    }

    private func took(_ index: UInt32, _ chunk: Int, total: Int, _ data: ArraySlice<UInt8>, from peer: NodeID, now: Instant) {
        guard var t = transfers[index] else { stats.duplicates += 1; return }
        if let expected = t.total, expected != total {
            drop(peer, "served replay file \(index) as \(total) bytes, not \(expected)")
            return
        }
        if t.total == nil {
            t.total = total
            t.chunks = Array(repeating: nil, count: ReplayMessage.chunks(total))
        }
        if let ask = t.asked.removeValue(forKey: chunk) {
            if var h = holders[ask.of] {
                h.inFlight -= 1
                let sample = now - ask.at
                h.srtt = h.srtt.map { ($0 * 7 + sample) / 8 } ?? sample
                h.window = min(Self.maxWindow, h.window + 1)
                holders[ask.of] = h
            }
        }
        guard t.chunks.indices.contains(chunk), t.chunks[chunk] == nil else { stats.duplicates += 1; transfers[index] = t; return }
        t.chunks[chunk] = Array(data)
        t.sources.insert(peer)
        t.received += 1
        stats.chunks += 1
        transfers[index] = t
        if t.received == t.chunks.count { complete(index) }
    }

    private func complete(_ index: UInt32) {
        guard let t = transfers.removeValue(forKey: index) else { return }
        for ask in t.asked.values { holders[ask.of]?.inFlight -= 1 }
        let bytes = t.chunks.flatMap { $0 ?? [] }
        do {
            if index == ReplayMessage.manifestIndex {
                let m = try ReplayManifest.parse(bytes[...])
                guard m.id == id else { throw ReplayError.forged("a manifest of replay \(m.id.text), not \(id.text)") }
                manifest = m
                manifestBytes = bytes
                credit(t.sources, bytes.count)
                onEvent?(.manifest(m))
            } else {
                guard let manifest else { return }
                try manifest.check(segment: Int(index), bytes)
                wanted.removeAll { $0 == Int(index) }
                credit(t.sources, bytes.count)
                onEvent?(.segment(Int(index), bytes))
            }
        } catch {
            stats.badFiles += 1
            // One source: it is to blame. Several: fetch it whole from one to find out.
            if t.sources.count == 1, let culprit = t.sources.first {
                drop(culprit, "\(error)")
            } else if let holder = pick(for: index, now: clock.now()) {
                var again = Transfer(holder: holder)
                if let total = t.total { again.total = total; again.chunks = Array(repeating: nil, count: ReplayMessage.chunks(total)) }
                transfers[index] = again
            }
        }
    }

    private func credit(_ sources: Set<NodeID>, _ bytes: Int) {
        for s in sources {
            let share = bytes / max(1, sources.count)
            stats.bytesFrom[s, default: 0] += share
            holders[s]?.served += share
        }
    }

    /// Another holder takes over a transfer; chunks already come are kept.
    private func reassign(_ index: UInt32) {
        guard var t = transfers[index] else { return }
        for ask in t.asked.values { holders[ask.of]?.inFlight -= 1 }
        t.asked = [:]
        // No other: the same holder is asked again (it may only have been slow), or none is left.
        let same = holders[t.holder].flatMap { $0.missing.contains(index) ? nil : t.holder }
        if let next = pick(for: index, now: clock.now(), avoiding: [t.holder]) ?? same {
            t.holder = next
            transfers[index] = t
        } else {
            transfers[index] = nil
        }
    }

    private func drop(_ peer: NodeID, _ why: String) {
        dropped.insert(peer)
        removeHolder(peer)
        onEvent?(.dropped(peer, why))
    }
}
