import LVBCore

/// Keeps one published medium's RTP numbering continuous when the source
/// behind it changes (a co-host's page camera taking over from the node's
/// own encoder, and back): each source numbers its packets from its own
/// random start, but a subscriber must see one stream, whose sequence
/// numbers go on by one (RFC 3550 §5.1: a jump of `maxDropout` or more reads
/// as a restart, anything less as loss to NACK) and whose timestamps go on
/// by the time that passed. After `splice()`, the next packet is mapped to
/// follow the last one sent; every later packet of that source keeps the
/// same offset. Before any splice the offsets are zero: packets pass as made.
public struct RTPSplicer: Sendable {
    /// The medium's RTP clock (90 kHz video, 48 kHz audio).
    public let clockRate: Int
    private var seqOffset: UInt16 = 0
    private var tsOffset: UInt32 = 0
    private var last: (seq: UInt16, ts: UInt32, at: Instant)?
    private var pending = false

    public init(clockRate: Int) { self.clockRate = clockRate }

    /// The next packet comes from another source.
    public mutating func splice() { pending = last != nil }

    /// Renumbers `packet` (sent at `now`) onto the stream.
    public mutating func rewrite(_ packet: inout RTPPacket, now: Instant) {
        if pending, let last {
            pending = false
            // At least one tick on: the new source's first frame is a new moment.
            let elapsed = max(1, VideoStreamEncoder.ticks(now - last.at, rate: clockRate))
            seqOffset = last.seq &+ 1 &- packet.sequenceNumber
            tsOffset = last.ts &+ elapsed &- packet.timestamp
        }
        packet.sequenceNumber &+= seqOffset
        packet.timestamp &+= tsOffset
        // Packets of one frame share the timestamp: the moment is the first's.
        if packet.timestamp != last?.ts { last = (packet.sequenceNumber, packet.timestamp, now) } else { last?.seq = packet.sequenceNumber }
    }
}
