import LVBCore
import LVBCrypto
import LVBGossip
import LVBRoom
import LVBTransport

/// A viewer's quick switch between the rooms a rendezvous lists (`/switch`,
/// `/next`, `/prev`): keeps the rooms next to the current one in the list
/// ready — a session with each host, admitted, subscribed to its keyframes
/// (`LiveNode.preload`) — so that a switch there shows a picture at once
/// and then goes live; any other listed room is reached cold (dialled, or
/// introduced through the rendezvous as a join by room id is). The list is
/// the browser's first page, asked again every `browseRefresh`.
public final class RoomSwitcher: LiveRole {
    /// Rooms kept ready on each side of the current one (0: none, every switch is cold).
    public var neighbours = 1
    /// A switch asked by room id that had to be resolved first, and failed.
    public var onRefused: ((String) -> Void)?

    public let browser: RoomBrowser
    private unowned let node: LiveNode
    private let clock: Clock
    private let random: RandomSource
    private let relay: RelayClient?
    private let addresses: [PeerAddress]
    private var introducers: [NodeID: RoomIntroducer] = [:]
    private var lastRefresh: Instant?
    private var resolving: RoomID?

    /// - Parameters:
    ///   - browser: the node's view of the list (attached to the node too).
    ///   - addresses: this node's own addresses, for introductions.
    ///   - relay: relay paths, if the rendezvous offers its relay.
    public init(node: LiveNode, browser: RoomBrowser, clock: Clock, random: RandomSource,
                addresses: [PeerAddress], relay: RelayClient?) {
        self.node = node
        self.browser = browser
        self.clock = clock
        self.random = random
        self.addresses = addresses
        self.relay = relay
        browser.onServer = { [unowned self] in refresh() }
        browser.observe { [unowned self] answer in listed(answer) }
    }

    /// The room this node is in now.
    public var currentRoom: RoomID { node.room.room }

    /// The rooms in list order (the pages asked so far).
    public var rooms: [RoomAnnouncement] { browser.rooms }

    /// Switches to the room at `position` in the list (from 1, as `/rooms` numbers it).
    @discardableResult
    public func switchTo(position: Int) throws(RoomActionError) -> Bool {
        guard let room = browser.room(at: position) else {
            throw .refused("no room \(position) in the list this node has; /rooms [PAGE] lists them")
        }
        return try switchTo(room)
    }

    /// Switches to room `id`: at once if listed, else once the rendezvous says where it is.
    public func switchTo(id: RoomID) throws(RoomActionError) {
        if let room = browser.room(id) {
            try switchTo(room)
            return
        }
        guard browser.resolve(id) else { throw .refused("not connected to the rendezvous yet; try again in a moment") }
        resolving = id
    }

    /// The next (`step` 1) or previous (-1) open room in the list, wrapping around.
    @discardableResult
    public func step(_ step: Int) throws(RoomActionError) -> Bool {
        guard let room = neighbour(step) else {
            throw .refused(rooms.isEmpty ? "the room list is empty (or not here yet); /rooms asks for it" : "no other open room is listed")
        }
        return try switchTo(room)
    }

    /// Switches to an announced room. Returns whether it was preloaded.
    @discardableResult
    public func switchTo(_ room: RoomAnnouncement) throws(RoomActionError) -> Bool {
        guard room.access == 0 else {
            throw .refused("room \(room.room.text) is private: join it with `lvbnode join \(room.room.text) --password …` (or --invite)")
        }
        let preloaded = try node.switchRoom(to: room.room, host: room.host)
        dial(room)
        updatePreloads()
        return preloaded
    }

    /// The open room `step` places away from the current one in the list.
    private func neighbour(_ step: Int) -> RoomAnnouncement? {
        let current = node.room.room
        let list = rooms.filter { $0.access == 0 || $0.room == current }
        guard let i = list.firstIndex(where: { $0.room == current }) else {
            // Not in the list (joined by ticket): the list's first or last.
            return step > 0 ? list.first : list.last
        }
        guard list.count > 1 else { return nil }
        return list[((i + step) % list.count + list.count) % list.count]
    }

    /// Preloads the neighbours, drops preloads that no longer are.
    private func updatePreloads() {
        guard !node.room.isHost else { return }
        var wanted: [RoomAnnouncement] = []
        for distance in stride(from: 1, through: neighbours, by: 1) {
            for step in [distance, -distance] {
                if let room = neighbour(step), room.room != node.room.room, !wanted.contains(where: { $0.room == room.room }) {
                    wanted.append(room)
                }
            }
        }
        for id in node.preloads.keys where !wanted.contains(where: { $0.room == id }) { node.dropPreload(id) }
        for room in wanted {
            node.preload(room.room, host: room.host)
            dial(room)
        }
        // Introductions only for hosts still of interest.
        let hosts = Set(node.preloads.values.map(\.host) + [node.room.host])
        introducers = introducers.filter { hosts.contains($0.key) }
    }

    /// Opens a session with the room's host unless there is one, through an
    /// introduction (hole punching, the rendezvous's relay) as a join by
    /// room id does: nothing goes to the host before it, whatever range its
    /// addresses are in (a host on our LAN answers the punch's first,
    /// hop-limited initiation).
    private func dial(_ room: RoomAnnouncement) {
        guard !node.core.isEstablished(with: room.host), introducers[room.host]?.introduced != false else { return }
        guard !browser.servers.isEmpty else {
            node.core.connect(to: room.addresses, expecting: room.host)
            return
        }
        introduce(room)
    }

    private func introduce(_ room: RoomAnnouncement) {
        introducers[room.host] = RoomIntroducer(core: node.core, clock: clock, random: random, rendezvous: [], room: room.room,
                                                host: room.host, addresses: addresses, relay: relay, fallback: room.addresses,
                                                connected: browser.servers)
    }

    private func refresh() {
        lastRefresh = clock.now()
        browser.list(page: 0)
    }

    private func listed(_ answer: RendezvousClient.Answer) {
        switch answer {
        case .page(0, _, _):
            updatePreloads()
        case let .resolved(id, found) where id == resolving:
            resolving = nil
            guard let found else {
                onRefused?("room \(id.text) is not listed by the rendezvous (it may have ended); /rooms lists the live ones")
                return
            }
            do { try switchTo(found) } catch { onRefused?(error.description) }
        default:
            break
        }
    }

    public func handle(_ event: NodeEvent) {
        guard case .transport(let event) = event else { return }
        for introducer in introducers.values { introducer.handle(.transport(event)) }
    }

    public func tick() {
        for introducer in introducers.values { introducer.tick() }
        guard !browser.servers.isEmpty, !node.room.isHost else { return }
        if lastRefresh.map({ clock.now() - $0 >= RendezvousConstants.browseRefresh }) ?? true { refresh() }
    }

    public func leave() {}
    public func stop() {}
}
