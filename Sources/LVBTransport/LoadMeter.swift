import DequeModule
import LVBCore

/// Decides when a responder is under load (man/lvbnode-protocol.7, Cookies):
/// when more than `threshold` initiations with a valid mac1, this one
/// included, arrived within the last second. A sliding window rather than
/// fixed one-second slots: with slots, a flood that straddles a slot
/// boundary passes up to twice the threshold without being asked for a
/// cookie, and whether a burst is caught depends on when the node started.
struct LoadMeter {
    private var recent = Deque<Instant>()

    /// Records one arrival at `now`; true when it is over `threshold` in the last second.
    /// Keeps at most `threshold` instants, so a flood costs no memory.
    mutating func isOverThreshold(arrivalAt now: Instant, threshold: Int) -> Bool {
        while let first = recent.first, now - first >= TransportConstants.loadWindow { recent.removeFirst() }
        recent.append(now)
        guard recent.count > threshold else { return false }
        recent.removeFirst()
        return true
    }
}
