/// A source of random bytes, injected so tests can be deterministic.
/// Key material in production comes from libsodium (`SodiumRandom` in LVBCrypto).
public protocol RandomSource: AnyObject {
    func fill(_ buffer: UnsafeMutableRawBufferPointer)
}

public extension RandomSource {
    func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { fill($0) }
        return out
    }
    func uint32() -> UInt32 {
        var v: UInt32 = 0
        withUnsafeMutableBytes(of: &v) { fill($0) }
        return v
    }
    func uint64() -> UInt64 {
        var v: UInt64 = 0
        withUnsafeMutableBytes(of: &v) { fill($0) }
        return v
    }
    /// Uniform in [0, 1).
    func unit() -> Double { Double(uint64() >> 11) / Double(1 << 53) }
}

/// A deterministic generator (SplitMix64) for simulations and tests only:
/// never for keys outside tests.
public final class SeededRandom: RandomSource, RandomNumberGenerator {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }

    public func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    public func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        var i = 0
        while i < buffer.count {
            var v = next()
            let n = min(8, buffer.count - i)
            withUnsafeBytes(of: &v) { src in
                for j in 0..<n { buffer[i + j] = src[j] }
            }
            i += n
        }
    }
}
