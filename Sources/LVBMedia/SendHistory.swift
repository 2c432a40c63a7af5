/// The sender's recent video packets by sequence number, to answer generic
/// NACKs (RFC 4585 §6.2.1) with retransmissions of the same bytes. A ring of
/// fixed size: a new packet replaces the one 1024 sequence numbers older.
public struct SendHistory: Sendable {
    private struct Slot: Sendable {
        var sequence: UInt16
        var bytes: [UInt8]
    }

    private var slots: [Slot?]

    public init(capacity: Int = MediaConstants.sendHistoryPackets) {
        slots = Array(repeating: nil, count: max(1, capacity))
    }

    public mutating func store(_ sequence: UInt16, _ bytes: [UInt8]) {
        slots[Int(sequence) % slots.count] = Slot(sequence: sequence, bytes: bytes)
    }

    /// The packet sent with `sequence`, if it is still held.
    public func packet(_ sequence: UInt16) -> [UInt8]? {
        guard let slot = slots[Int(sequence) % slots.count], slot.sequence == sequence else { return nil }
        return slot.bytes
    }
}

