import LVBCore
import LVBMedia

/// Runs encode steps on the virtual network's clock, on the test's thread:
/// the library's encode pump without real threads or sleeping.
public final class VirtualEncodeScheduler: EncodeScheduler {
    private unowned let network: VirtualNetwork

    public init(network: VirtualNetwork) { self.network = network }

    public func repeating(from start: Instant, every interval: Duration, _ step: @escaping (Int) -> Bool) {
        arm(slot: 0, start: start, interval: interval, step)
    }

    private func arm(slot n: Int, start: Instant, interval: Duration, _ step: @escaping (Int) -> Bool) {
        let due = start + interval * n
        let now = network.clock.now()
        network.schedule(after: due > now ? due - now : .zero) { [weak self] in
            guard let self, step(n) else { return }
            // Like the threads in the binary: skip slots already missed.
            var next = n + 1
            while start + interval * (next + 1) <= network.clock.now() { next += 1 }
            arm(slot: next, start: start, interval: interval, step)
        }
    }
}
