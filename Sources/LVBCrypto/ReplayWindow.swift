/// Sliding-window replay protection for transport counters (RFC 6479's bitmap
/// ring, as wireguard-go's replay.Filter). The caller must only call `accept`
/// after the packet's tag has verified, so forged counters cannot move the window.
public struct ReplayWindow: Sendable {
    static let blockBits = 64
    static let ringBlocks = 128                                   // power of two
    /// Counters this far behind the newest one are still accepted once (8128).
    public static let windowSize = UInt64((ringBlocks - 1) * blockBits)

    private var newest: UInt64 = 0
    private var ring = [UInt64](repeating: 0, count: ringBlocks)

    public init() {}

    /// True when `counter` is new and below `limit`; marks it seen.
    public mutating func accept(_ counter: UInt64, limit: UInt64) -> Bool {
        guard counter < limit else { return false }
        let block = counter / UInt64(Self.blockBits)
        if counter > newest {
            // Clear the blocks the window slides over (all of them on a far jump).
            let current = newest / UInt64(Self.blockBits)
            let advance = min(block - current, UInt64(Self.ringBlocks))
            var i: UInt64 = 1
            while i <= advance {
                ring[Int((current + i) & UInt64(Self.ringBlocks - 1))] = 0
                i += 1
            }
            newest = counter
        } else if newest - counter > Self.windowSize {
            return false
        }
        let index = Int(block & UInt64(Self.ringBlocks - 1))
        let bit = UInt64(1) << (counter % UInt64(Self.blockBits))
        if ring[index] & bit != 0 { return false }
        ring[index] |= bit
        return true
    }
}
