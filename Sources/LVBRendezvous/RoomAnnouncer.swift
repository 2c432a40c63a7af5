import LVBCore
import LVBCrypto
import LVBGossip
import LVBRoom
import LVBTransport

/// A host's role towards its rendezvous servers: dials each one, and over
/// every session with a node that says it is a rendezvous announces the
/// room at once and every `announceInterval` after (viewers, likes, the
/// room's info, the host's nickname and addresses), and announces it closed
/// when the host leaves or closes it, so it leaves the list at once.
public final class RoomAnnouncer: AttachedRole {
    private let room: RoomNode
    private let core: TransportCore
    private let clock: Clock
    private let addresses: [PeerAddress]
    private var servers: Set<NodeID> = []
    private var lastAnnounced: Instant?
    private var lastSeq: UInt64 = 0
    private var done = false

    /// - Parameters:
    ///   - rendezvous: where the rendezvous servers are (dialled now).
    ///   - addresses: where joiners reach this host.
    public init(room: RoomNode, clock: Clock, rendezvous: [PeerAddress], addresses: [PeerAddress]) {
        self.room = room
        core = room.core
        self.clock = clock
        self.addresses = Array(addresses.prefix(RendezvousConstants.maxAnnouncedAddresses))
        for address in rendezvous { core.connect(to: address, expecting: nil) }
    }

    public func handle(_ event: TransportEvent) {
        switch event {
        case let .hello(id, hello) where hello.role == .rendezvous:
            guard servers.insert(id).inserted, !done else { return }
            announce(to: [id], closed: false)
        case let .gone(id, _):
            servers.remove(id)
        default:
            break
        }
    }

    public func tick() {
        guard !done, !servers.isEmpty else { return }
        let now = clock.now()
        if let last = lastAnnounced, now - last < RendezvousConstants.announceInterval { return }
        announce(to: servers, closed: false)
    }

    public func leave() { close() }
    public func stop() { close() }

    private func close() {
        guard !done else { return }
        done = true
        announce(to: servers, closed: true)
    }

    private func announce(to peers: Set<NodeID>, closed: Bool) {
        guard room.isHost, let state = room.state else { return }
        lastAnnounced = clock.now()
        let wall = clock.wallTime()
        lastSeq = max(lastSeq + 1, wall.seconds * 1_000_000 + UInt64(wall.nanoseconds / 1000))
        var a = RoomAnnouncement(room: room.room, host: core.nodeID, seq: lastSeq, time: wall.milliseconds, closed: closed || state.isClosed,
                                 viewers: UInt32(clamping: max(0, state.members.count - 1)), likes: state.likeTotal,
                                 info: state.info, hostNickname: room.profile.nickname, addresses: addresses)
        a.access = room.access
        guard (try? a.sign(with: core.identity)) != nil else { return }
        let bytes = RendezvousMessage.announce(a.encoded).encoded
        for peer in peers { try? core.send(bytes, channel: .rendezvous, to: peer) }
    }
}
