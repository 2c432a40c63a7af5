/// The current group of pictures: every video packet from the last keyframe
/// on, so a viewer that joins now decodes a picture at once instead of waiting
/// for the next keyframe ("instant first frame"). The origin adds whole frames
/// (`add`); a relay inserts packets one by one as they arrive (`insert`). A
/// cache is filled one way: switching ways starts it afresh.
public struct GOPCache: Sendable {
    public private(set) var packets: [[UInt8]] = []
    public private(set) var bytes = 0
    /// How many of `packets` (the first ones) are the GOP's keyframe.
    public private(set) var keyframePackets = 0
    /// False from an over-long GOP until the next keyframe.
    public private(set) var isComplete = false
    public let maxBytes: Int
    /// Most packets a GOP inserted packet by packet may hold (keeps the
    /// sequence numbers of one GOP well within half their range).
    public let maxPackets: Int
    /// When filled by `insert`: the sequence number and RTP timestamp of each
    /// of `packets`, in sequence order (the first starts the keyframe).
    private var order: [Position] = []
    private struct Position: Sendable {
        var sequence: UInt16
        var timestamp: UInt32
    }
    /// When filled by `insert`: where the newest keyframe started, kept when
    /// an over-long GOP is dropped, so that a late copy of an older start
    /// cannot begin a GOP of old and new frames.
    private var lastStart: UInt16?

    public init(maxBytes: Int = MediaConstants.gopCacheMaxBytes, maxPackets: Int = MediaConstants.gopCacheMaxPackets) {
        self.maxBytes = maxBytes
        self.maxPackets = max(1, maxPackets)
    }

    /// Adds one encoded frame's packets; a keyframe starts a new GOP.
    public mutating func add(_ frame: [[UInt8]], keyframe: Bool) {
        if !order.isEmpty { clear() }
        if keyframe {
            packets.removeAll(keepingCapacity: true)
            bytes = 0
            keyframePackets = frame.count
            isComplete = true
        }
        guard isComplete else { return }
        let size = frame.reduce(0) { $0 + $1.count }
        guard bytes + size <= maxBytes else {
            packets.removeAll()
            bytes = 0
            keyframePackets = 0
            isComplete = false
            return
        }
        packets += frame
        bytes += size
    }

    /// The keyframe's packets alone (what a keyframes-only subscriber starts from).
    public var keyframe: ArraySlice<[UInt8]> { packets.prefix(keyframePackets) }

    /// Inserts one video packet of a stream that arrives packet by packet and
    /// in any order (a relay), keeping the GOP in sequence order from the
    /// packet that starts its keyframe, so a joiner's burst needs no
    /// reordering. `startsKeyframe` (VP8: S = 1, PID = 0, P = 0) starts a new
    /// GOP unless it is older than the current one; the new GOP keeps the
    /// packets after it that came before it (reordering, a repaired start).
    /// Returns those of them that belong to the new keyframe (its RTP
    /// timestamp): keyframes-only subscribers were not sent them yet.
    @discardableResult
    public mutating func insert(_ packet: [UInt8], sequence: UInt16, timestamp: UInt32, startsKeyframe: Bool) -> [[UInt8]] {
        if order.count != packets.count { clear() }
        if startsKeyframe, lastStart.map({ sequencePrecedes($0, sequence) }) ?? true {
            return restart(packet, sequence: sequence, timestamp: timestamp)
        }
        // Before the first keyframe, in an over-long GOP, or older than this GOP: not cached.
        guard isComplete, let start = order.first, !sequencePrecedes(sequence, start.sequence) else { return [] }
        var i = order.count
        while i > 0, sequencePrecedes(sequence, order[i - 1].sequence) { i -= 1 }
        guard i == 0 || order[i - 1].sequence != sequence else { return [] }
        guard bytes + packet.count <= maxBytes, packets.count < maxPackets else {
            dropOverlong()
            return []
        }
        packets.insert(packet, at: i)
        order.insert(Position(sequence: sequence, timestamp: timestamp), at: i)
        bytes += packet.count
        if timestamp == start.timestamp, i <= keyframePackets { keyframePackets += 1 }
        return []
    }

    /// A new GOP from the packet that starts its keyframe, with the cached packets after it.
    private mutating func restart(_ packet: [UInt8], sequence: UInt16, timestamp: UInt32) -> [[UInt8]] {
        let firstAfter = order.firstIndex { sequencePrecedes(sequence, $0.sequence) } ?? order.count
        let keptPackets = packets[firstAfter...], keptOrder = order[firstAfter...]
        let early = keptOrder.prefix { $0.timestamp == timestamp }.count
        let keptBytes = keptPackets.reduce(packet.count) { $0 + $1.count }
        lastStart = sequence
        guard keptBytes <= maxBytes, keptPackets.count < maxPackets else {
            dropOverlong()
            return []
        }
        packets = [packet] + keptPackets
        order = [Position(sequence: sequence, timestamp: timestamp)] + keptOrder
        bytes = keptBytes
        keyframePackets = 1 + early
        isComplete = true
        return Array(packets[1..<(1 + early)])
    }

    /// Whether a packet of `sequences` is held (filled by `insert`).
    public func holds(any sequences: Set<UInt16>) -> Bool { order.contains { sequences.contains($0.sequence) } }

    /// Forgets everything until the next keyframe (the stream was replaced).
    public mutating func clear() {
        dropOverlong()
        lastStart = nil
    }

    /// Forgets the GOP until the next keyframe, newer than the last one.
    private mutating func dropOverlong() {
        packets.removeAll()
        order.removeAll()
        bytes = 0
        keyframePackets = 0
        isComplete = false
    }

}

