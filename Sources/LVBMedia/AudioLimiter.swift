#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A peak limiter for one output of the mix: turns a 32-bit sum of 16-bit
/// blocks into Int16, passing it unchanged while it stays below the threshold.
///
/// The mixer hands over a whole 20 ms block at once, so the limiter looks
/// ahead within it at no extra latency: a backward pass finds, for every
/// sample, the gain that lets each later peak land on the threshold with a
/// ramp of the attack's time constant; a forward pass lets the gain recover
/// with the release's. Within a block nothing passes the threshold; only a
/// peak at the very start of a block is met with a step instead of a ramp.
/// The hard clamp at the end is the last safety. State carries over between
/// blocks, so each output stream needs its own instance.
public struct AudioLimiter: Sendable {
    public let threshold: Float
    private let attackCoefficient: Float
    private let releaseCoefficient: Float
    /// Current gain, 1 when idle.
    public private(set) var gain: Float = 1
    /// Per-sample gain ceiling of the block being processed, kept between blocks.
    private var scratch: [Float] = []

    /// A limiter with the project's tuning (MixConstants) at `sampleRate`.
    public init(threshold: Float = MixConstants.limiterThreshold,
                attack: Duration = MixConstants.limiterAttack,
                release: Duration = MixConstants.limiterRelease,
                sampleRate: Int = MediaConstants.audioClockRate) {
        self.threshold = max(1, min(threshold, 32767))
        attackCoefficient = Self.coefficient(attack, sampleRate: sampleRate)
        releaseCoefficient = Self.coefficient(release, sampleRate: sampleRate)
    }

    /// One-pole smoothing factor for time constant `time` (0 = instant).
    private static func coefficient(_ time: Duration, sampleRate: Int) -> Float {
        let seconds = Double(time.components.seconds) + Double(time.components.attoseconds) * 1e-18
        let samples = seconds * Double(max(1, sampleRate))
        guard samples > 0 else { return 0 }
        return Float(exp(-1 / samples))
    }

    /// Limits `input` into `output` (the shorter length wins).
    public mutating func process(_ input: UnsafeBufferPointer<Int32>,
                                 into output: UnsafeMutableBufferPointer<Int16>) {
        let n = min(input.count, output.count)
        guard n > 0 else { return }
        // Taken out of self so the closures below may read the other fields.
        var need = scratch
        scratch = []
        if need.count < n { need = [Float](repeating: 1, count: n) }
        let (threshold, attack, release) = (threshold, attackCoefficient, releaseCoefficient)
        var g = gain
        need.withUnsafeMutableBufferPointer { need in
            // Backward: the most gain each sample may have, given the peaks after it.
            var later: Float = 1
            for i in stride(from: n - 1, through: 0, by: -1) {
                let magnitude = Float(input[i].magnitude)
                let target = magnitude > threshold ? threshold / magnitude : 1
                later = min(target, 1 - (1 - later) * attack)
                need[i] = later
            }
            // Forward: recover slowly, never above what is needed.
            for i in 0..<n {
                g = min(need[i], 1 - (1 - g) * release)
                // Float never quite reaches 1 on release; snap so quiet input is bit-exact again.
                if g > 0.99999 { g = 1 }
                if g == 1 {
                    output[i] = Int16(clamping: input[i])
                } else {
                    let scaled = (Float(input[i]) * g).rounded()
                    output[i] = Int16(max(-32768, min(32767, scaled)))
                }
            }
        }
        gain = g
        scratch = need
    }

    /// Limits one block of sums; convenient for tests and one-off use.
    public mutating func process(_ input: [Int32]) -> [Int16] {
        var output = [Int16](repeating: 0, count: input.count)
        input.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { process(source, into: $0) }
        }
        return output
    }
}
