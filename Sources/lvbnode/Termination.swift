import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// How a running node ends, and the exit status that goes with it.
enum ExitReason: Sendable {
    case signal(Int32)
    case duration
    case quit
    case roomClosed
    /// A replay played to its end.
    case replayEnded
    /// The process that started it (`--parent-pid`, the mesh) is gone.
    case orphaned
    /// Kicked, or signed in elsewhere: status 3.
    case removed(String)
    case failed(String)

    var status: Int32 {
        switch self {
        case .failed: 1
        case .removed: 3
        default: 0
        }
    }
}

/// Resolves once with the first reason to stop: SIGINT/SIGTERM, the
/// `--duration` deadline, `/quit`, or a fatal condition.
final class Termination: @unchecked Sendable {
    private let lock = NSLockish()
    private var reason: ExitReason?
    private var waiter: CheckedContinuation<ExitReason, Never>?
    private var sources: [DispatchSourceSignal] = []

    /// `parent`: end (leaving cleanly) once that process is no longer this one's parent.
    init(duration: Double?, parent: Int32? = nil) {
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { [weak self] in self?.finish(.signal(sig)) }
            source.resume()
            sources.append(source)
        }
        if let duration {
            DispatchQueue.global().asyncAfter(deadline: .now() + duration) { [weak self] in self?.finish(.duration) }
        }
        if let parent { watch(parent) }
    }

    /// Looks every 200 ms whether `parent` is still the parent (a dead one's children go to init or a subreaper).
    private func watch(_ parent: Int32) {
        guard getppid() == parent else { return finish(.orphaned) }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(200)) { [weak self] in self?.watch(parent) }
    }

    func finish(_ r: ExitReason) {
        let w: CheckedContinuation<ExitReason, Never>? = lock.withLock {
            guard reason == nil else { return nil }
            reason = r
            defer { waiter = nil }
            return waiter
        }
        w?.resume(returning: r)
    }

    /// Waits again after the room closed (a host serving its replay on).
    func rearm() {
        lock.withLock {
            if case .roomClosed = self.reason { self.reason = nil }
        }
    }

    func wait() async -> ExitReason {
        await withCheckedContinuation { c in
            let ready: ExitReason? = lock.withLock {
                if let reason { return reason }
                waiter = c
                return nil
            }
            if let ready { c.resume(returning: ready) }
        }
    }
}
