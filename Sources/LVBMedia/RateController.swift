import LVBCore
#if canImport(Glibc)
import Glibc
#endif

/// Loss-based sender rate control that goes both ways (the loss half of
/// Google Congestion Control, draft-ietf-rmcat-gcc-02 §6): above 10 % loss the
/// target drops by half the loss fraction; below 2 % it probes back up by 8 %
/// per second; in between it holds.
public struct RateController: Sendable {
    public let minKbps: Int
    public let maxKbps: Int
    public private(set) var targetKbps: Double
    private var lastReport: Instant?

    public init(maxKbps: Int, minKbps: Int = MediaConstants.minVideoKbps) {
        self.maxKbps = max(1, maxKbps)
        self.minKbps = min(minKbps, self.maxKbps)
        targetKbps = Double(self.maxKbps)
    }

    /// Takes one receiver report's fraction lost (0...1); returns the new target.
    @discardableResult
    public mutating func report(fractionLost loss: Double, at now: Instant) -> Int {
        let elapsed = lastReport.map { min((now - $0).seconds, 2) } ?? 0.5
        lastReport = now
        if loss > MediaConstants.backoffLoss {
            targetKbps *= 1 - 0.5 * loss
        } else if loss < MediaConstants.probeLoss {
            targetKbps *= pow(MediaConstants.probeGainPerSecond, elapsed)
        }
        targetKbps = min(Double(maxKbps), max(Double(minKbps), targetKbps))
        return Int(targetKbps)
    }
}
