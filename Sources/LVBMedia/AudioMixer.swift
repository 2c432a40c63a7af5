/// The host's link-mic audio mix: one block of the host and of each guest in,
/// the mix everyone hears and, per guest, the mix-minus that guest hears out.
///
/// Inputs are added at a fixed gain (MixConstants.mixGain), never scaled by
/// 1/n, so the host's level does not change when a guest joins or leaves;
/// each output has its own AudioLimiter to keep the sum within Int16.
/// A missing, nil or short block counts as silence; a long one is cut.
public final class AudioMixer<Key: Hashable> {
    /// Samples per block (20 ms at 48 kHz).
    public let blockSize: Int
    private var everyoneLimiter = AudioLimiter()
    private var guestLimiters: [Key: AudioLimiter] = [:]
    /// Sum of every input, then reused for each guest's mix-minus; kept
    /// between calls so a block costs no scratch allocation.
    private var total: [Int32]
    private var scratch: [Int32]

    public init(blockSize: Int = MediaConstants.audioFrameSamples) {
        self.blockSize = max(1, blockSize)
        total = [Int32](repeating: 0, count: self.blockSize)
        scratch = total
    }

    /// Mixes one block. `minus` has one entry per key of `guests`: the host and
    /// all other guests, never that guest itself. The host hears the guests
    /// on its own device, so it gets no mix-minus here.
    public func mix(host: [Int16]?, guests: [Key: [Int16]]) -> (everyone: [Int16], minus: [Key: [Int16]]) {
        // A guest no longer passed has left the stage: its limiter starts afresh next time.
        if guestLimiters.keys.contains(where: { guests[$0] == nil }) {
            guestLimiters = guestLimiters.filter { guests[$0.key] != nil }
        }
        total.withUnsafeMutableBufferPointer { sum in
            sum.update(repeating: 0)
            if let host { Self.add(host, to: sum, sign: 1) }
            for samples in guests.values { Self.add(samples, to: sum, sign: 1) }
        }
        let everyone = limited(total, by: &everyoneLimiter)
        var minus: [Key: [Int16]] = Dictionary(minimumCapacity: guests.count)
        for (key, samples) in guests {
            // Subtracting the guest from the exact integer sum removes it completely.
            scratch.withUnsafeMutableBufferPointer { out in
                _ = out.update(fromContentsOf: total)
                Self.add(samples, to: out, sign: -1)
            }
            var limiter = guestLimiters[key] ?? AudioLimiter()
            minus[key] = limited(scratch, by: &limiter)
            guestLimiters[key] = limiter
        }
        return (everyone, minus)
    }

    /// Forgets `key`'s limiter state (the guest left the stage).
    public func remove(_ key: Key) {
        guestLimiters[key] = nil
    }

    /// Adds `samples` × mixGain × `sign` into `sum`, up to `sum.count` samples.
    private static func add(_ samples: [Int16], to sum: UnsafeMutableBufferPointer<Int32>, sign: Int32) {
        let n = min(samples.count, sum.count)
        samples.withUnsafeBufferPointer { source in
            if MixConstants.mixGain == 1 {
                for i in 0..<n { sum[i] &+= sign &* Int32(source[i]) }
            } else {
                let gain = MixConstants.mixGain * Float(sign)
                for i in 0..<n { sum[i] &+= Int32((Float(source[i]) * gain).rounded()) }
            }
        }
    }

    private func limited(_ sum: [Int32], by limiter: inout AudioLimiter) -> [Int16] {
        [Int16](unsafeUninitializedCapacity: sum.count) { out, count in
            out.initialize(repeating: 0)
            sum.withUnsafeBufferPointer { limiter.process($0, into: out) }
            count = sum.count
        }
    }
}
