/// The sender's recent video packets by sequence number, to answer generic
/// NACKs (RFC 4585 §6.2.1) with retransmissions of the same bytes. A ring of
/// fixed size: a new packet replaces the one 1024 sequence numbers older.
public struct SendHistory: Sendable {
    private struct Slot: Sendable {
        var sequence: UInt16
        var bytes: [UInt8]
    }

    private var slots: [Slot?]
    /// The most advanced sequence number stored (in wrapping order).
    public private(set) var newest: UInt16?

    public init(capacity: Int = MediaConstants.sendHistoryPackets) {
        slots = Array(repeating: nil, count: max(1, capacity))
    }

    public mutating func store(_ sequence: UInt16, _ bytes: [UInt8]) {
        slots[Int(sequence) % slots.count] = Slot(sequence: sequence, bytes: bytes)
        if newest.map({ sequenceDistance(from: $0, to: sequence) > 0 }) ?? true { newest = sequence }
    }

    /// The packets held after `sequence` up to the newest, in order (holes
    /// skipped): none when `sequence` is the newest or a little ahead of it
    /// (by at most `limit`); nil when more than `limit` would come, or the
    /// ring no longer reaches back that far, or nothing is held.
    public func packets(after sequence: UInt16, limit: Int) -> [[UInt8]]? {
        guard let newest else { return nil }
        let span = sequenceDistance(from: sequence, to: newest)
        guard span > 0 else { return span >= -limit ? [] : nil }
        guard span <= min(limit, slots.count) else { return nil }
        return (1...span).compactMap { packet(sequence &+ UInt16($0)) }
    }

    /// Forgets the packet of `sequence` (it was not the origin's: a NACK must not get it again).
    public mutating func remove(_ sequence: UInt16) {
        if slots[Int(sequence) % slots.count]?.sequence == sequence { slots[Int(sequence) % slots.count] = nil }
    }

    /// The packet sent with `sequence`, if it is still held.
    public func packet(_ sequence: UInt16) -> [UInt8]? {
        guard let slot = slots[Int(sequence) % slots.count], slot.sequence == sequence else { return nil }
        return slot.bytes
    }
}

