/// Maps wrapping RTP counters (16-bit sequence numbers, 32-bit timestamps) onto
/// a line: each value is placed within half the counter's range of the newest
/// value seen so far (RFC 3550 §A.1 reasoning, without the cycle bookkeeping).
struct RTPUnwrapper<Counter: FixedWidthInteger & UnsignedInteger>: Sendable {
    private(set) var newest: Int64?

    init() {}

    /// Where `value` lies on the line; moves the reference forward when it is newer.
    mutating func unwrap(_ value: Counter) -> Int64 {
        let u = peek(value)
        if newest.map({ u > $0 }) ?? true { newest = u }
        return u
    }

    /// Where `value` lies on the line, without moving the reference.
    func peek(_ value: Counter) -> Int64 {
        guard let newest else { return Int64(value) }
        let diff = Int64(value &- Counter(truncatingIfNeeded: newest))
        let range = Int64(1) << Counter.bitWidth
        return newest &+ (diff >= range / 2 ? diff - range : diff)
    }
}

typealias SequenceUnwrapper = RTPUnwrapper<UInt16>
typealias TimestampUnwrapper = RTPUnwrapper<UInt32>
