import LVBCore
import LVBCrypto
import LVBRoom
import LVBTransport

/// A running node's view of the room list: asks the rendezvous servers it
/// already holds sessions with (its introducer's or announcer's) for a page
/// of live rooms, over its own transport — the console's `/rooms`.
public final class RoomBrowser: AttachedRole {
    private let client: RendezvousClient
    private var servers: [NodeID] = []

    public init(core: TransportCore, clock: Clock, random: RandomSource) {
        client = RendezvousClient(core: core, clock: clock, random: random)
    }

    /// Each answer (a page of verified announcements).
    public var onAnswer: ((RendezvousClient.Answer) -> Void)? {
        get { client.onAnswer }
        set { client.onAnswer = newValue }
    }

    /// Asks the first rendezvous for page `page` (from 0); false with none connected yet.
    public func list(page: Int) -> Bool {
        guard let server = servers.first else { return false }
        client.list(page: page, from: server)
        return true
    }

    public func handle(_ event: TransportEvent) {
        switch event {
        case let .hello(id, hello) where hello.role == .rendezvous:
            if !servers.contains(id) { servers.append(id) }
        case let .gone(id, _):
            servers.removeAll { $0 == id }
        default:
            client.handle(event)
        }
    }

    public func tick() { client.tick() }
    public func leave() {}
    public func stop() {}
}
