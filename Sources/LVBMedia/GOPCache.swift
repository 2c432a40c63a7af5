/// The current group of pictures: every video packet from the last keyframe
/// on, so a viewer that joins now decodes a picture at once instead of waiting
/// for the next keyframe ("instant first frame").
public struct GOPCache: Sendable {
    public private(set) var packets: [[UInt8]] = []
    public private(set) var bytes = 0
    /// How many of `packets` (the first ones) are the GOP's keyframe.
    public private(set) var keyframePackets = 0
    /// False from an over-long GOP until the next keyframe.
    public private(set) var isComplete = false
    public let maxBytes: Int

    public init(maxBytes: Int = MediaConstants.gopCacheMaxBytes) { self.maxBytes = maxBytes }

    /// Adds one encoded frame's packets; a keyframe starts a new GOP.
    public mutating func add(_ frame: [[UInt8]], keyframe: Bool) {
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
}

