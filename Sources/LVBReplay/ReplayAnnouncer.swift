import LVBCore
import LVBCrypto
import LVBTransport

/// A holder's side of the replay list: tells each rendezvous it holds a
/// session with which replays it holds whole (ended ones, by their
/// host-signed cards) and where it is, at once when a session comes up or
/// `refresh` is called, and every `interval` after (the list forgets a
/// holder not heard within `ReplayDirectory.holderLifetime`). Sans-IO.
public final class ReplayAnnouncer {
    public let library: ReplayLibrary
    private let core: TransportCore
    private let clock: Clock
    private var rendezvous: Set<NodeID> = []
    private var last: Instant?
    private var due = true
    /// The addresses this node gives (local ones; the rendezvous adds the one it sees).
    public var addresses: [PeerAddress] = []
    /// Cards told last time: one gone is withdrawn (a rendezvous that missed
    /// the withdrawal forgets the holder after its lifetime).
    private var told: [ReplayID: ReplayCard] = [:]

    public static let interval: Duration = .seconds(30)
    /// What goes to a rendezvous after a held replay's card (its thumbnail,
    /// in the rendezvous's own messages), each on its channel: once per
    /// session with that rendezvous, not with every announcement.
    public var extras: ((ReplayCard) -> [(channel: DataChannel, bytes: [UInt8])])?
    private var extrasSent: [NodeID: Set<ReplayID>] = [:]

    public init(library: ReplayLibrary, core: TransportCore, clock: Clock) {
        self.library = library
        self.core = core
        self.clock = clock
    }

    /// A rendezvous to tell (its session may still be coming up).
    public func add(rendezvous id: NodeID) {
        if rendezvous.insert(id).inserted { due = true }
    }

    /// Tell every rendezvous again now (a replay ended, or was deleted).
    public func refresh() { due = true }

    public func handle(_ event: TransportEvent) {
        if case let .hello(id, hello) = event, hello.role == .rendezvous {
            rendezvous.insert(id)
            // A new session (the rendezvous may have restarted): everything again.
            extrasSent[id] = nil
            announce(to: [id])
        }
    }

    public func tick() {
        let now = clock.now()
        guard due || last.map({ now - $0 >= Self.interval }) ?? true else { return }
        due = false
        last = now
        announce(to: Array(rendezvous))
    }

    private func announce(to servers: [NodeID]) {
        let cards = library.cards().filter { $0.info.ended && !$0.info.isPrivate }
        let current = Dictionary(cards.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        var messages = cards.map { ReplayListMessage.held($0, addresses: addresses, withdrawn: false).bytes }
        messages += told.filter { current[$0.key] == nil }.map { ReplayListMessage.held($0.value, addresses: [], withdrawn: true).bytes }
        told = current
        for server in servers where core.isEstablished(with: server) {
            for m in messages { try? core.send(m, channel: .replay, to: server) }
            guard let extras else { continue }
            for card in cards where extrasSent[server, default: []].insert(card.id).inserted {
                for (channel, m) in extras(card) { try? core.send(m, channel: channel, to: server) }
            }
        }
    }
}
