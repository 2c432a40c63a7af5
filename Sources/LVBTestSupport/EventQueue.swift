import HeapModule
import LVBCore

/// A timer on the virtual network; `cancel()` stops it before its next firing.
public final class TimerHandle {
    public private(set) var isCancelled = false
    init() {}
    public func cancel() { isCancelled = true }
}

/// Pending virtual-network events ordered by due time, then by the order they
/// were scheduled, so runs with the same inputs replay identically.
struct EventQueue {
    private struct Entry: Comparable {
        let due: Instant
        let sequence: UInt64
        let action: () -> Void

        static func == (a: Entry, b: Entry) -> Bool { a.due == b.due && a.sequence == b.sequence }
        static func < (a: Entry, b: Entry) -> Bool {
            (a.due.nanoseconds, a.sequence) < (b.due.nanoseconds, b.sequence)
        }
    }

    private var heap = Heap<Entry>()
    private var nextSequence: UInt64 = 0

    var count: Int { heap.count }

    mutating func push(at due: Instant, _ action: @escaping () -> Void) {
        heap.insert(Entry(due: due, sequence: nextSequence, action: action))
        nextSequence += 1
    }

    /// Removes and returns the earliest event if it is due no later than `limit`.
    mutating func pop(notAfter limit: Instant) -> (due: Instant, action: () -> Void)? {
        guard let first = heap.min, first.due <= limit else { return nil }
        _ = heap.popMin()
        return (first.due, first.action)
    }
}
