import LVBCore

/// Network impairment applied to datagrams on one direction of a link.
public struct Impairment: Sendable, Equatable {
    /// Probability a datagram is dropped, 0...1.
    public var loss: Double
    /// Base one-way delay.
    public var delay: Duration
    /// Uniform extra delay in 0...jitter, drawn per copy.
    public var jitter: Duration
    /// Probability a datagram is delivered twice, 0...1.
    public var duplicate: Double
    /// Probability a datagram is held back by `reorderDelay` extra, so later
    /// datagrams overtake it, 0...1.
    public var reorder: Double
    /// Extra delay of a held-back datagram.
    public var reorderDelay: Duration

    public init(
        loss: Double = 0, delay: Duration = .zero, jitter: Duration = .zero,
        duplicate: Double = 0, reorder: Double = 0, reorderDelay: Duration = .milliseconds(20)
    ) {
        self.loss = loss
        self.delay = delay
        self.jitter = jitter
        self.duplicate = duplicate
        self.reorder = reorder
        self.reorderDelay = reorderDelay
    }

    /// A perfect link: no loss, no delay.
    public static let none = Impairment()

    /// The delivery delays for one datagram: empty = dropped, two entries =
    /// duplicated. Draws from `random` only for the impairments that are
    /// enabled, so an unimpaired link consumes no randomness.
    public func plan(random: RandomSource) -> [Duration] {
        if loss > 0, random.unit() < loss { return [] }
        var delays = [oneDelay(random)]
        if duplicate > 0, random.unit() < duplicate {
            delays.append(oneDelay(random))
        }
        return delays
    }

    private func oneDelay(_ random: RandomSource) -> Duration {
        var d = max(.zero, delay)
        if jitter > .zero {
            let ns = Double(jitter.nanosecondsClamped) * random.unit()
            d += .nanoseconds(Int64(ns))
        }
        if reorder > 0, random.unit() < reorder {
            d += max(.zero, reorderDelay)
        }
        return d
    }

    /// Checks that probabilities are in 0...1 and durations are not negative.
    public func validate() throws(ImpairmentError) {
        for (name, p) in [("loss", loss), ("duplicate", duplicate), ("reorder", reorder)] {
            guard (0...1).contains(p) else { throw .probabilityOutOfRange(name: name, value: p) }
        }
        for (name, d) in [("delay", delay), ("jitter", jitter), ("reorderDelay", reorderDelay)] {
            guard d >= .zero else { throw .negativeDuration(name: name, value: d) }
        }
    }
}

/// Why an `Impairment` was rejected by `validate()`.
public enum ImpairmentError: Error, Equatable, CustomStringConvertible {
    /// A probability (loss, duplicate, reorder) was outside 0...1 or not a number.
    case probabilityOutOfRange(name: String, value: Double)
    /// A duration (delay, jitter, reorderDelay) was negative.
    case negativeDuration(name: String, value: Duration)

    public var description: String {
        switch self {
        case let .probabilityOutOfRange(name, value):
            "impairment \(name) is \(value): use a probability between 0 and 1 (e.g. 0.05 for 5%)"
        case let .negativeDuration(name, value):
            "impairment \(name) is \(value.milliseconds) ms: use a duration of 0 ms or more"
        }
    }
}
