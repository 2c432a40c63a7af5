/// The sender's recent video packets by sequence number, to answer generic
/// NACKs (RFC 4585 §6.2.1) with retransmissions of the same bytes. A ring of
/// fixed size: a new packet replaces the one 1024 sequence numbers older.
public struct SendHistory: Sendable {
    private var slots: [(sequence: UInt16, bytes: [UInt8])?]

    public init(capacity: Int = MediaConstants.sendHistoryPackets) {
        slots = Array(repeating: nil, count: max(1, capacity))
    }

    public mutating func store(_ sequence: UInt16, _ bytes: [UInt8]) {
        slots[Int(sequence) % slots.count] = (sequence, bytes)
    }

    /// The packet sent with `sequence`, if it is still held.
    public func packet(_ sequence: UInt16) -> [UInt8]? {
        guard let slot = slots[Int(sequence) % slots.count], slot.sequence == sequence else { return nil }
        return slot.bytes
    }
}

