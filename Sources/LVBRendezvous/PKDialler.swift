import LVBCore
import LVBCrypto
import LVBGossip
import LVBRoom
import LVBTransport

/// A host's way to the other room of a PK (`/pk ROOM-ID`): finds the room
/// through the rendezvous (listed, or resolved by id), opens a session with
/// its host through an introduction as a joiner by room id does (hole
/// punching both ways, the rendezvous's relay raced against direct paths),
/// then hands the room node the request. The other host answers over that
/// session; the media of the PK flows over it too.
public final class PKDialler: PKAsking {
    private let node: LiveNode
    private let browser: RoomBrowser
    private let relay: RelayClient?
    private let addresses: [PeerAddress]
    private let clock: Clock
    private let random: RandomSource
    /// The room asked for and for how long, since when, and once found its announcement.
    private var wanted: (room: RoomID, minutes: UInt8, since: Instant, found: RoomAnnouncement?)?
    private var introducer: RoomIntroducer?
    /// What could not be done after the command returned (not listed, unreachable, refused).
    public var onRefused: ((String) -> Void)?
    /// Sessions to other hosts this node opened for PKs.
    public private(set) var dialled = 0

    /// How long finding and reaching the other host may take before the ask is given up.
    public static let reachTimeout: Duration = .seconds(15)

    public init(node: LiveNode, browser: RoomBrowser, relay: RelayClient?, addresses: [PeerAddress], clock: Clock, random: RandomSource) {
        self.node = node
        self.browser = browser
        self.relay = relay
        self.addresses = addresses
        self.clock = clock
        self.random = random
        browser.observe { [unowned self] answer in resolved(answer) }
    }

    /// Asks room `target` (a room id, or its place in the last `/rooms` list) for a PK of `minutes`.
    public func ask(_ target: String, minutes: UInt8) throws(RoomActionError) {
        guard node.room.isHost else { throw .hostOnly }
        guard case .idle = node.room.pkPhase, wanted == nil else { throw .refused(PKError.busy.description) }
        guard PKMessage.minutes.contains(minutes) else { throw .refused(PKError.badMinutes.description) }
        let found: RoomAnnouncement?
        let id: RoomID
        if let n = Int(target), n >= 1 {
            guard let listed = browser.room(at: n) else { throw .refused("no room \(n) in the list this node has; /rooms [PAGE] lists them") }
            (found, id) = (listed, listed.room)
        } else if target.count == 26, let bytes = try? Base32.decode(target.lowercased()), let parsed = try? RoomID(bytes: bytes) {
            (found, id) = (browser.room(parsed), parsed)
        } else {
            throw .refused("usage: /pk ROOM-ID|N [MINUTES] (the 26-character room id, or N as /rooms numbers the rooms)")
        }
        guard id != node.room.room else { throw .refused(PKError.ownRoom.description) }
        wanted = (id, minutes, clock.now(), nil)
        if let found {
            dial(found)
        } else if !browser.resolve(id) {
            wanted = nil
            throw .refused("not connected to the rendezvous yet; try again in a moment")
        }
    }

    private func resolved(_ answer: RendezvousClient.Answer) {
        guard case let .resolved(id, found) = answer, let wanted, wanted.room == id, wanted.found == nil else { return }
        guard let found else {
            giveUp("room \(id.text) is not listed by the rendezvous (it may have ended); /rooms lists the live ones")
            return
        }
        dial(found)
    }

    /// Opens a session with the room's host unless there is one; asks once it is up.
    private func dial(_ room: RoomAnnouncement) {
        wanted?.found = room
        if node.core.isEstablished(with: room.host) {
            askNow()
            return
        }
        dialled += 1
        introducer = RoomIntroducer(core: node.core, clock: clock, random: random, rendezvous: [], room: room.room, host: room.host,
                                    addresses: addresses, relay: relay, fallback: room.addresses, connected: browser.servers)
    }

    private func askNow() {
        guard let wanted, let found = wanted.found else { return }
        self.wanted = nil
        introducer = nil
        do { try node.room.askPK(found.room, host: found.host, minutes: wanted.minutes, theirTitle: found.info.title ?? "") }
        catch { onRefused?(error.description) }
    }

    private func giveUp(_ why: String) {
        wanted = nil
        introducer = nil
        onRefused?(why)
    }

    public func handle(_ event: NodeEvent) {
        guard case .transport(let transport) = event else { return }
        introducer?.handle(event)
        if case .established(let info) = transport, let host = wanted?.found?.host, info.id == host { askNow() }
    }

    public func tick() {
        introducer?.tick()
        guard let wanted, clock.now() - wanted.since >= Self.reachTimeout else { return }
        giveUp(wanted.found == nil
               ? "the rendezvous did not answer about room \(wanted.room.text); try again in a moment"
               : "could not reach the host of room \(wanted.room.text) within \(Self.reachTimeout.components.seconds) s (no path through either NAT or the relay)")
    }
}
