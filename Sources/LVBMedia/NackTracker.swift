import LVBCore

/// Finds RTP packets that did not arrive and decides when to ask for them
/// again with a generic NACK (RFC 4585 §6.2.1), as WebRTC's NackRequester and
/// pion's NACK generator do: a gap is requested once reordering is ruled out,
/// retried every max(1.5 × RTT, 20 ms) up to 10 times, and forgotten when the
/// packet arrives, grows too old, or the decoder has moved past it.
public struct NackTracker: Sendable {
    private struct Entry: Sendable {
        var seq: Int64
        var detectedAt: Instant
        var sentAt: Instant?
        var tries = 0
    }

    /// Round-trip time to the sender; the owner feeds the transport's estimate.
    public var rtt: Duration = .milliseconds(100)
    /// Missing packets that arrived after we had asked for them.
    public private(set) var recovered = 0
    /// Sequence numbers requested, retries included.
    public private(set) var requested = 0
    /// Missing packets given up on (too many tries, too old, or over the tracking bound).
    public private(set) var givenUp = 0
    /// Refused packets not asked for again: asked `sealReasks` times already.
    public private(set) var reasksRefused = 0

    /// Missing sequence numbers in ascending order (new gaps are always the newest).
    private var entries: [Entry] = []
    private var unwrapper = SequenceUnwrapper()
    /// Times each recently refused packet was asked for again (unwrapped; the newest `nackMaxTracked`).
    private var reasked: [Int64: Int] = [:]
    private var reaskedOrder: [Int64] = []

    public init() {}

    /// Sequence numbers currently believed missing, oldest first.
    public var missing: [UInt16] { entries.map { UInt16(truncatingIfNeeded: $0.seq) } }

    private var retryInterval: Duration {
        max(rtt * ReceiverConstants.nackRetryRTTFactor, ReceiverConstants.nackRetryFloor)
    }

    /// Call for every RTP packet of the stream as it arrives (duplicates too).
    /// Returns true when the packet answers a NACK we sent.
    @discardableResult
    public mutating func insert(_ sequenceNumber: UInt16, at now: Instant) -> Bool {
        let previous = unwrapper.newest
        let seq = unwrapper.unwrap(sequenceNumber)
        guard let previous else { return false }
        if seq > previous {
            let gap = seq - previous - 1
            if gap > ReceiverConstants.nackMaxGap {
                // A jump, not loss: what was missing before it cannot be repaired usefully either.
                givenUp += entries.count
                entries.removeAll()
            } else if gap > 0 {
                entries.reserveCapacity(entries.count + Int(gap))
                for s in (previous + 1)..<seq { entries.append(Entry(seq: s, detectedAt: now)) }
                let excess = entries.count - ReceiverConstants.nackMaxTracked
                if excess > 0 {
                    givenUp += excess
                    entries.removeFirst(excess)
                }
            }
            return false
        }
        guard let i = index(of: seq) else { return false }
        let entry = entries.remove(at: i)
        if entry.tries > 0 { recovered += 1 }
        return entry.tries > 0
    }

    /// Counts the `count` packets before `sequenceNumber` as missing too,
    /// those not tracked already: the stream's first packet did not start its
    /// frame, so the frame's start was lost where no gap can show it (a GOP
    /// burst whose first packets were lost).
    public mutating func expect(_ count: Int, before sequenceNumber: UInt16, at now: Instant) {
        guard count > 0, unwrapper.newest != nil else { return }
        let first = unwrapper.peek(sequenceNumber)
        track(Array((first - Int64(count))..<first), at: now)
    }

    /// Counts packets that arrived as missing again (their frame was refused:
    /// not what the origin sent), those not tracked already, not older than
    /// the newest by more than `nackMaxGap`, and not asked for again
    /// `sealReasks` times already: a liar answers each request with another
    /// lie, so what it costs to ask is bounded per packet, not by round trips.
    public mutating func missingAgain(_ sequenceNumbers: [UInt16], at now: Instant) {
        guard let newest = unwrapper.newest else { return }
        var again: [Int64] = []
        for seq in sequenceNumbers.map({ unwrapper.peek($0) }) where seq <= newest && newest - seq <= ReceiverConstants.nackMaxGap {
            let times = reasked[seq] ?? 0
            guard times < ReceiverConstants.sealReasks else {
                reasksRefused += 1
                continue
            }
            if times == 0 {
                reaskedOrder.append(seq)
                if reaskedOrder.count > ReceiverConstants.nackMaxTracked { reasked[reaskedOrder.removeFirst()] = nil }
            }
            reasked[seq] = times + 1
            again.append(seq)
        }
        track(again, at: now)
    }

    /// Tracks these (unwrapped) sequence numbers as missing from `now`, those
    /// not tracked already; the oldest beyond `nackMaxTracked` are given up.
    private mutating func track(_ seqs: [Int64], at now: Instant) {
        let added = seqs.filter { index(of: $0) == nil }.map { Entry(seq: $0, detectedAt: now) }
        guard !added.isEmpty else { return }
        entries = (added + entries).sorted { $0.seq < $1.seq }
        let excess = entries.count - ReceiverConstants.nackMaxTracked
        if excess > 0 {
            givenUp += excess
            entries.removeFirst(excess)
        }
    }

    /// Sequence numbers to request now (at most `limit`, oldest first); marks them sent.
    public mutating func poll(now: Instant, limit: Int = ReceiverConstants.nackMaxPerFeedback) -> [UInt16] {
        expire(now: now)
        let newest = unwrapper.newest ?? .min
        let interval = retryInterval
        var out: [UInt16] = []
        for i in entries.indices where out.count < limit {
            guard dueTime(entries[i], newest: newest, interval: interval) <= now else { continue }
            entries[i].sentAt = now
            entries[i].tries += 1
            out.append(UInt16(truncatingIfNeeded: entries[i].seq))
        }
        requested += out.count
        return out
    }

    /// Forgets missing packets before `sequenceNumber`: the decoder has moved
    /// past them (it decoded the keyframe that starts there).
    public mutating func removeBefore(_ sequenceNumber: UInt16) {
        let seq = unwrapper.peek(sequenceNumber)
        let n = entries.prefix { $0.seq < seq }.count
        entries.removeFirst(n)
    }

    /// The next time `poll` has something to do, if anything is tracked.
    public func nextWakeup() -> Instant? {
        let newest = unwrapper.newest ?? .min
        let interval = retryInterval
        return entries.lazy.map { entry in
            min(self.dueTime(entry, newest: newest, interval: interval),
                entry.detectedAt + ReceiverConstants.nackMaxAge)
        }.min()
    }

    /// When an entry should be (re)requested; after its last try, when it is given up.
    private func dueTime(_ e: Entry, newest: Int64, interval: Duration) -> Instant {
        if let sentAt = e.sentAt { return sentAt + interval }
        if newest - e.seq >= ReceiverConstants.nackReorderPackets { return e.detectedAt }
        return e.detectedAt + ReceiverConstants.nackReorderWait
    }

    private mutating func expire(now: Instant) {
        let interval = retryInterval
        let before = entries.count
        entries.removeAll { e in
            now >= e.detectedAt + ReceiverConstants.nackMaxAge
                || (e.tries >= ReceiverConstants.nackMaxTries && now >= (e.sentAt ?? e.detectedAt) + interval)
        }
        givenUp += before - entries.count
    }

    private func index(of seq: Int64) -> Int? {
        var lo = 0, hi = entries.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if entries[mid].seq < seq { lo = mid + 1 } else { hi = mid }
        }
        return lo < entries.count && entries[lo].seq == seq ? lo : nil
    }
}
