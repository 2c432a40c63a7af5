import Dispatch
import Foundation
import Testing

/// Runs each test of a suite on a thread of its own, a few at a time.
///
/// The process tests are synchronous: they wait for a node's events by
/// polling and sleeping. Swift Testing calls a synchronous test on the
/// cooperative pool, which has one thread per core, so on two cores two
/// sleeping tests held the whole pool: the rest of the suite (the CPU-bound
/// scenarios too) waited behind them, and the suite took about twice the sum
/// of their waits. Under this trait a test case's task prefers an executor
/// that runs it on a serial dispatch queue of its own (a thread that may
/// block), so its waits hold nobody else. The task stays the same, so
/// `#expect` still reports to its test.
///
/// At most `LVBNODE_E2E_PARALLEL` (default 4) such test cases run at once:
/// each runs several nodes, and a machine full of them would starve the
/// timing the tests check.
struct OwnThreadTrait: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    func scopeProvider(for test: Test, testCase: Test.Case?) -> OwnThreadTrait? {
        testCase == nil ? nil : self
    }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        await ProcessTestSlots.shared.acquire()
        do {
            try await withTaskExecutorPreference(QueueExecutor()) {
                // The preference applies from the task's next enqueue on: hop
                // there before the test starts blocking.
                await Task.yield()
                try await function()
            }
        } catch {
            await ProcessTestSlots.shared.release()
            throw error
        }
        await ProcessTestSlots.shared.release()
    }
}

extension Trait where Self == OwnThreadTrait {
    /// Each test on a thread of its own: see `OwnThreadTrait`.
    static var ownThread: Self { OwnThreadTrait() }
}

/// A task executor backed by one serial dispatch queue. A serial queue runs
/// on libdispatch's overcommitting pool, which adds a thread when the ones it
/// has are blocked, unlike Swift's cooperative pool.
final class QueueExecutor: TaskExecutor, @unchecked Sendable {
    private let queue = DispatchQueue(label: "lvbnode.e2e.test")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// A counting semaphore for test cases, awaited without holding a thread.
actor ProcessTestSlots {
    static let shared = ProcessTestSlots(
        count: ProcessInfo.processInfo.environment["LVBNODE_E2E_PARALLEL"].flatMap(Int.init).map { max(1, $0) } ?? 4)

    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(count: Int) { free = count }

    func acquire() async {
        if free > 0 {
            free -= 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func release() {
        if waiting.isEmpty {
            free += 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}
