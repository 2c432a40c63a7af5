import LVBCore
import LVBCrypto
import LVBGossip
import LVBMedia
import LVBTransport
import NIOCore
import NIOPosix

/// Why a node could not start.
public enum NodeStartError: Error {
    /// The socket could not be bound (the underlying error).
    case bind(Error)
    /// A media source, codec or output could not be set up.
    case media(MediaError)
}

/// Runs a `LiveNode` over a real UDP socket: the transport's loop carries the
/// room, the media fan-out and the receive pipelines; encoders run on threads
/// of their own. Every call into the node happens on the loop.
public final class UDPLiveNode: @unchecked Sendable {
    public let udp: UDPNode
    /// Set once on the loop during `start`; read only on the loop.
    public private(set) var node: LiveNode!
    private let threads: ThreadEncodeScheduler
    private var ticker: RepeatedTask?
    private var pollTask: Scheduled<Void>?
    private var pollDue: Instant?
    private var stopped = false

    private init(udp: UDPNode, threads: ThreadEncodeScheduler) {
        self.udp = udp
        self.threads = threads
    }

    /// Binds `listen`, builds the node from `plan` (given the bound address) and starts it. `prepare`
    /// sees the node (and the bound address) on its loop before it starts;
    /// `onOutput` runs on the loop for every output from the first.
    public static func start(plan: @escaping (PeerAddress) -> NodePlan, identity: Identity, listen: PeerAddress, config: TransportConfig,
                             prepare: @escaping (LiveNode, PeerAddress) -> Void = { _, _ in },
                             onOutput: @escaping (NodeOutput) -> Void) async throws(NodeStartError) -> UDPLiveNode {
        let box = NodeBox()
        let udp: UDPNode
        do {
            udp = try await UDPNode.start(identity: identity, listen: listen, config: config,
                                          group: MultiThreadedEventLoopGroup.singleton) { event in
                if let node = box.node { node.handle(event) } else { onOutput(.transport(event)) }
            }
        } catch {
            throw .bind(error)
        }
        let runner = UDPLiveNode(udp: udp, threads: ThreadEncodeScheduler())
        let loop = udp.eventLoop
        let built: Result<Void, MediaError>
        do {
            built = try await udp.submit { core -> Result<Void, MediaError> in
                do throws(MediaError) {
                    let node = try LiveNode(plan: plan(udp.localAddress), core: core, clock: SystemClock.shared, random: SodiumRandom.shared,
                                            scheduler: runner.threads, hop: { body in loop.execute(body) })
                    node.onOutput = onOutput
                    node.onWakeupChanged = { [weak runner] in runner?.pollSoonerIfDue() }
                    runner.node = node
                    box.node = node
                    prepare(node, udp.localAddress)
                    node.start()
                    return .success(())
                } catch {
                    return .failure(error)
                }
            }
        } catch {
            built = .failure(.invalidParameter("the node's loop stopped: \(error)"))
        }
        if case .failure(let e) = built {
            await runner.threads.shutdown()
            await udp.close()
            throw .media(e)
        }
        let tick = TimeAmount.nanoseconds(GossipConstants.tickInterval.nanosecondsClamped)
        runner.ticker = loop.scheduleRepeatedTask(initialDelay: tick, delay: tick) { _ in box.node?.tick() }
        loop.execute { runner.schedulePoll() }
        return runner
    }

    /// Runs `body` with the node on its loop.
    public func execute(_ body: @escaping (LiveNode) -> Void) {
        udp.eventLoop.execute { [self] in body(node) }
    }

    /// Runs `body` on the loop and returns its result.
    public func submit<T>(_ body: @escaping (LiveNode) throws -> T) async throws -> T {
        try await udp.eventLoop.submit { [self] in try body(node) }.get()
    }

    /// Leaves the room: announces it and waits until every member we hold a
    /// session with has acknowledged, at most `limit`. Returns whether they all did.
    public func leave(within limit: Duration) async -> Bool {
        _ = try? await submit { $0.leave() }
        let deadline = SystemClock.shared.now() + limit
        while SystemClock.shared.now() < deadline {
            if (try? await submit { $0.leaveSettled }) == true { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return (try? await submit { $0.leaveSettled }) ?? false
    }

    /// Stops all activity: encoders, timers, the room. The sessions stay
    /// until `close`.
    public func halt() async {
        _ = try? await submit { [self] node in
            stopped = true
            pollTask?.cancel()
            node.stop()
        }
        ticker?.cancel()
        await threads.shutdown()
    }

    /// Ends the sessions — with a bye to each peer, or without a word
    /// (`abandon`: a node replaced by another process of the same identity
    /// must not end that process's sessions) — then finishes the output files.
    public func close(abandon: Bool) async {
        if abandon { await udp.abandon() } else { await udp.close() }
        _ = try? await udp.eventLoop.submit { [self] in node.closeOutputs() }.get()
    }

    /// Polls the receive pipelines when their next work is due (at least every
    /// 100 ms, at most every millisecond), until `stop`. On the loop.
    private func schedulePoll() {
        let now = SystemClock.shared.now()
        let wait = node.pollWait(now: now)
        pollDue = now + wait
        pollTask = udp.eventLoop.scheduleTask(in: .nanoseconds(wait.nanosecondsClamped)) { [weak self] in
            guard let self, !self.stopped else { return }
            node.poll()
            schedulePoll()
        }
    }

    /// A packet that brings the next work closer moves the poll up. On the loop.
    private func pollSoonerIfDue() {
        guard !stopped, node.pollsSooner(than: pollDue) else { return }
        pollTask?.cancel()
        schedulePoll()
    }
}

/// The node, once built; read on the loop only.
private final class NodeBox: @unchecked Sendable {
    var node: LiveNode?
}
