import LVBCore
import LVBMedia
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Runs encode steps on threads of their own, one per repetition (one per
/// medium), on the system clock: a slow encode never holds the node's loop,
/// and one medium never waits for the other.
public final class ThreadEncodeScheduler: EncodeScheduler, @unchecked Sendable {
    private let group: MultiThreadedEventLoopGroup
    private var loops: EventLoopIterator
    private let stopped = NIOLockedValueBox(false)
    private let clock: Clock

    public init(threads: Int = 2, clock: Clock = SystemClock.shared) {
        group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        loops = group.makeIterator()
        self.clock = clock
    }

    public func repeating(from start: Instant, every interval: Duration, _ step: @escaping (Int) -> Bool) {
        let loop = loops.next() ?? group.next()
        let body = UnsafeTransfer(step)
        schedule(on: loop, start: start, interval: interval, index: 0, step: body)
    }

    private func schedule(on loop: EventLoop, start: Instant, interval: Duration, index: Int,
                          step: UnsafeTransfer<(Int) -> Bool>) {
        let due = start + interval * index
        let now = clock.now()
        let delay = TimeAmount.nanoseconds(due > now ? (due - now).nanosecondsClamped : 0)
        loop.scheduleTask(in: delay) { [self] in
            guard !stopped.withLockedValue({ $0 }), step.value(index) else { return }
            // Skip slots already missed rather than bursting to catch up.
            var next = index + 1
            let after = clock.now()
            while start + interval * (next + 1) <= after { next += 1 }
            schedule(on: loop, start: start, interval: interval, index: next, step: step)
        }
    }

    /// Stops scheduling steps. Waits up to half a second for the threads to
    /// finish: a source blocked reading a silent pipe must not hold the exit.
    public func shutdown() async {
        stopped.withLockedValue { $0 = true }
        let done = NIOLockedValueBox(false)
        group.shutdownGracefully { _ in done.withLockedValue { $0 = true } }
        for _ in 0..<50 where !done.withLockedValue({ $0 }) {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }
}

/// Moves a value the compiler cannot prove sendable to the one thread that
/// uses it (each source and encoder lives on exactly one loop).
public struct UnsafeTransfer<T>: @unchecked Sendable {
    public let value: T
    public init(_ value: T) { self.value = value }
}
