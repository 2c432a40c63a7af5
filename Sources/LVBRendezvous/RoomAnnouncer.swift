import LVBCore
import LVBCrypto
import LVBGossip
import LVBRoom
import LVBTransport

/// A host's role towards its rendezvous servers: dials each one, and over
/// every session with a node that says it is a rendezvous announces the
/// room at once and every `announceInterval` after (viewers, likes, the
/// room's info, the host's nickname and addresses: the reflexive one the
/// rendezvous saw first, then the local ones), and announces it closed
/// when the host leaves or closes it, so it leaves the list at once. Sends
/// each new thumbnail of the room (`setThumbnail`), signed, to every
/// rendezvous, and the latest to one that comes up. When a
/// rendezvous introduces a joiner, dials it at once (hole punching).
public final class RoomAnnouncer: LiveRole {
    private let room: RoomNode
    private let core: TransportCore
    private let clock: Clock
    private let addresses: [PeerAddress]
    private var servers: Set<NodeID> = []
    private let relay: RelayClient?
    /// Where each rendezvous sees this host (its reflexive address there),
    /// and where STUN servers do (`--stun`).
    private var observed: [NodeID: PeerAddress] = [:]
    private var stunned: [PeerAddress: PeerAddress] = [:]
    /// Introductions acted on; beyond this rate they are ignored.
    private var dials = RateLimiter<Int>(count: RendezvousConstants.introductionRate, burst: RendezvousConstants.introductionBurst)
    public private(set) var introductionsDialled = 0
    /// Announcements sent (to all servers at once counts one).
    public private(set) var announcements = 0
    private var lastAnnounced: Instant?
    private var lastSeq: UInt64 = 0
    /// The room's latest thumbnail, signed; thumbnails sent (to all servers at once counts one).
    public private(set) var thumbnail: RoomThumbnail?
    /// Each new thumbnail, once signed (a host's replay keeps the latest).
    public var onThumbnail: ((RoomThumbnail) -> Void)?
    public private(set) var thumbnailsSent = 0
    private var done = false

    /// - Parameters:
    ///   - rendezvous: where the rendezvous servers are (dialled now).
    ///   - addresses: where joiners reach this host.
    ///   - relay: where relay paths come from, if the rendezvous offers its relay.
    public init(room: RoomNode, clock: Clock, rendezvous: [PeerAddress], addresses: [PeerAddress], relay: RelayClient? = nil) {
        self.room = room
        self.relay = relay
        core = room.core
        self.clock = clock
        self.addresses = Array(addresses.prefix(RendezvousConstants.maxAnnouncedAddresses))
        for address in rendezvous { core.connect(to: address, expecting: nil) }
    }

    public func handle(_ event: NodeEvent) {
        guard case .transport(let event) = event else { return }
        switch event {
        case let .hello(id, hello) where hello.role == .rendezvous:
            guard servers.insert(id).inserted, !done else { return }
            announce(to: [id], closed: false)
            sendThumbnail(to: [id])
        case let .gone(id, _):
            servers.remove(id)
            observed[id] = nil
        case let .message(id, .rendezvous, payload) where servers.contains(id):
            guard let message = try? RendezvousMessage.parse(payload) else { return }
            switch message {
            case .observed(let address):
                // A new reflexive address (a NAT rebinding): tell every rendezvous now.
                guard observed.updateValue(address, forKey: id) != address, !done else { return }
                announce(to: servers, closed: false)
            case let .introduction(_, peer, relayed, addresses):
                guard !done, !addresses.isEmpty, peer != core.nodeID, dials.allow(0, now: clock.now()) else { return }
                introductionsDialled += 1
                core.noteIntroduction(of: peer, seenAt: addresses[0], by: id)
                // Direct addresses and the relay path at once: whichever answers first carries the session.
                let viaRelay = relayed ? relay.map { [$0.path(to: peer, via: id)] } ?? [] : []
                core.connect(to: addresses + viaRelay, expecting: peer, punch: true)
            default:
                break
            }
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

    /// A new JPEG thumbnail of the room's picture: signed and sent to every
    /// rendezvous now (after the announcement that lists the room, which the
    /// rendezvous needs to know the host).
    public func setThumbnail(_ jpeg: [UInt8]) {
        guard !done, room.isHost else { return }
        let wall = clock.wallTime()
        let seq = max((thumbnail?.seq ?? 0) + 1, wall.seconds * 1_000_000 + UInt64(wall.nanoseconds / 1000))
        guard let signed = try? RoomThumbnail(room: room.room, seq: seq, jpeg: jpeg, signedBy: core.identity) else { return }
        thumbnail = signed
        onThumbnail?(signed)
        sendThumbnail(to: servers)
    }

    /// A thumbnail message's bytes before its piece: type, room id, seq, part.
    public static let thumbnailHeader = 26

    private func sendThumbnail(to peers: Set<NodeID>) {
        guard let thumbnail, !peers.isEmpty, let pieces = thumbnail.pieces(maxPiece: core.maxPayload - Self.thumbnailHeader) else { return }
        thumbnailsSent += 1
        for piece in pieces {
            let bytes = RendezvousMessage.thumbnail(room: thumbnail.room, seq: thumbnail.seq, piece: piece).encoded
            for peer in peers { try? core.send(bytes, channel: .rendezvous, to: peer) }
        }
    }

    /// A STUN server at `server` sees this host at `address`: announced too, at once when new.
    public func noteReflexive(_ address: PeerAddress, from server: PeerAddress) {
        guard stunned.updateValue(address, forKey: server) != address, !done, !servers.isEmpty else { return }
        announce(to: servers, closed: false)
    }

    /// Reflexive addresses first (what a joiner elsewhere can reach), then local ones.
    private var announcedAddresses: [PeerAddress] {
        let reflexive = Array(observed.values) + Array(stunned.values)
        return (reflexive.sorted { $0.description < $1.description } + addresses).uniqued(limit: RendezvousConstants.maxAnnouncedAddresses)
    }

    private func announce(to peers: Set<NodeID>, closed: Bool) {
        guard room.isHost, let state = room.state else { return }
        lastAnnounced = clock.now()
        let wall = clock.wallTime()
        lastSeq = max(lastSeq + 1, wall.seconds * 1_000_000 + UInt64(wall.nanoseconds / 1000))
        var a = RoomAnnouncement(room: room.room, host: core.nodeID, seq: lastSeq, time: wall.milliseconds, closed: closed || state.isClosed,
                                 viewers: UInt32(clamping: max(0, state.count - 1)), likes: state.likeTotal,
                                 info: state.info, hostNickname: room.profile.nickname, addresses: announcedAddresses)
        a.access = room.access
        guard (try? a.sign(with: core.identity)) != nil else { return }
        announcements += 1
        let bytes = RendezvousMessage.announce(a.encoded).encoded
        for peer in peers { try? core.send(bytes, channel: .rendezvous, to: peer) }
    }
}
