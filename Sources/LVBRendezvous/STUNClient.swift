import LVBCore
import LVBCrypto
import LVBRoom
import LVBTransport

/// Asks STUN servers (any RFC 8489 Binding server: a rendezvous's port, or a
/// public one) where they see this node, from the node's own socket, so the
/// answer is the NAT mapping its sessions use: a Binding request at start,
/// repeated every `requestRetry` until answered, and every `stunRefresh`
/// after (which also keeps the mapping alive). Answers are taken from the
/// transport's side channel when they carry one of our transaction ids;
/// anything else goes on to the transport.
public final class STUNClient: LiveRole {
    /// A server's answer: this node's reflexive address as `server` sees it.
    public var onReflexive: ((PeerAddress, PeerAddress) -> Void)?
    public private(set) var reflexive: [PeerAddress: PeerAddress] = [:]

    private let core: TransportCore
    private let clock: Clock
    private let random: RandomSource
    private let servers: [PeerAddress]
    private var pending: [[UInt8]: (server: PeerAddress, sent: Instant)] = [:]
    private var lastAsked: [PeerAddress: Instant] = [:]
    private var done = false

    public init(core: TransportCore, clock: Clock, random: RandomSource, servers: [PeerAddress]) {
        self.core = core
        self.clock = clock
        self.random = random
        self.servers = servers
        core.addSideChannel { [unowned self] bytes, source in take(bytes, from: source) }
        for server in servers { ask(server) }
    }

    public func handle(_ event: NodeEvent) {}

    public func tick() {
        guard !done else { return }
        let now = clock.now()
        for server in servers {
            let answered = reflexive[server] != nil
            let wait = answered ? RendezvousConstants.stunRefresh : RendezvousConstants.requestRetry
            if let last = lastAsked[server], now - last < wait { continue }
            ask(server)
        }
    }

    public func leave() { done = true }
    public func stop() { done = true }

    private func ask(_ server: PeerAddress) {
        let id = random.bytes(RendezvousConstants.transactionIDSize)
        let request = STUNMessage(type: RendezvousConstants.MessageType.bindingRequest, transactionID: id).encoded(fingerprint: true)
        let now = clock.now()
        // Old transactions of this server are forgotten: only the latest may answer.
        pending = pending.filter { $0.value.server != server }
        pending[id] = (server, now)
        lastAsked[server] = now
        core.sendRaw(request, to: server)
    }

    /// A Binding success for one of our transactions, from the server it was sent to.
    private func take(_ bytes: ArraySlice<UInt8>, from source: PeerAddress) -> Bool {
        guard STUNMessage.looksLikeSTUN(bytes), let message = try? STUNMessage.parse(bytes),
              let asked = pending[message.transactionID], asked.server == source else { return false }
        pending[message.transactionID] = nil
        guard message.type == RendezvousConstants.MessageType.bindingSuccess,
              let value = message.attribute(RendezvousConstants.Attribute.xorMappedAddress)?.value,
              let address = try? STUNAddress.decodeXOR(value, transactionID: message.transactionID) else { return true }
        let changed = reflexive.updateValue(address, forKey: source) != address
        if changed { onReflexive?(address, source) }
        return true
    }
}
