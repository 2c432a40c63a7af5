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

/// How far `b` is ahead of `a` in 16-bit sequence space (negative: behind),
/// within half the range (RFC 3550 §A.1 reasoning).
func sequenceDistance(from a: UInt16, to b: UInt16) -> Int { Int(Int16(bitPattern: b &- a)) }

/// `a` comes before `b` in 16-bit sequence space (at exactly half the range apart, `a` does).
func sequencePrecedes(_ a: UInt16, _ b: UInt16) -> Bool { Int16(bitPattern: a &- b) < 0 }
typealias TimestampUnwrapper = RTPUnwrapper<UInt32>
