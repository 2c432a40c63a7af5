#if canImport(Glibc)
import Glibc
#endif

/// Level in dB (re full scale) of the `frequency` component of 48 kHz
/// `samples` (Goertzel): how the link-mic tests hear whose tone is in a mix.
public func toneLevel(_ samples: [Int16], at frequency: Double, sampleRate: Double = 48000) -> Double {
    let coefficient = 2 * cos(2 * Double.pi * frequency / sampleRate)
    var s1 = 0.0, s2 = 0.0
    for x in samples {
        let s0 = Double(x) / 32768 + coefficient * s1 - s2
        s2 = s1
        s1 = s0
    }
    let power = max(0, s1 * s1 + s2 * s2 - coefficient * s1 * s2)
    // A full-scale sine gives power (N/2)²; floor so silence is a finite -200 dB.
    let amplitude = 2 * sqrt(power) / Double(max(1, samples.count))
    return 20 * log10(max(amplitude, 1e-10))
}
