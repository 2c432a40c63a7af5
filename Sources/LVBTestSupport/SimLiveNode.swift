import LVBCore
import LVBCrypto
import LVBGossip
import LVBMedia
import LVBRoom

/// The node driver on the virtual network: a `LiveNode` on a simulated node,
/// ticked by the network's clock and polled when its pipelines say work is
/// due, exactly as `UDPLiveNode` runs it over UDP — with everything it reported.
public final class SimLiveNode {
    public let sim: SimulatedNode
    public let node: LiveNode
    public private(set) var outputs: [NodeOutput] = []
    /// Whether `outputs` keeps what the node reports (a large, long scenario turns it off).
    public var recordsOutputs = true
    private unowned let network: VirtualNetwork
    private var ticker: TimerHandle?
    private var pollTimer: TimerHandle?
    private var pollDue: Instant?

    public init(_ sim: SimulatedNode, plan: NodePlan, network: VirtualNetwork, random: RandomSource) throws(MediaError) {
        self.sim = sim
        self.network = network
        node = try LiveNode(plan: plan, core: sim.core, clock: network.clock, random: random,
                            scheduler: VirtualEncodeScheduler(network: network), hop: { $0() })
        sim.recordsEvents = false
        node.onOutput = { [unowned self] in if recordsOutputs { outputs.append($0) } }
        node.onWakeupChanged = { [unowned self] in pollSoonerIfDue() }
        sim.onTransportEvent = { [unowned self] in node.handle($0) }
        ticker = network.every(GossipConstants.tickInterval) { [unowned self] in node.tick() }
        node.start()
        schedulePoll()
    }

    public var id: NodeID { sim.id }
    public var room: RoomNode { node.room }

    /// Room outputs only.
    public var roomOutputs: [RoomOutput] { outputs.compactMap { if case .room(let r) = $0 { r } else { nil } } }

    /// Stops the node as if its process died.
    public func crash() {
        ticker?.cancel()
        pollTimer?.cancel()
        node.stop()
        sim.crash()
    }

    private func schedulePoll() {
        let now = network.clock.now()
        let wait = node.pollWait(now: now)
        pollDue = now + wait
        pollTimer = network.schedule(after: wait) { [weak self] in
            guard let self else { return }
            node.poll()
            schedulePoll()
        }
    }

    private func pollSoonerIfDue() {
        guard node.pollsSooner(than: pollDue) else { return }
        pollTimer?.cancel()
        schedulePoll()
    }
}
