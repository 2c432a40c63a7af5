import LVBCore
import LVBCrypto
import LVBGossip
import LVBRoom
import LVBTransport

/// A running node's view of the room list: asks the rendezvous servers it
/// already holds sessions with (its introducer's or announcer's) for a page
/// of live rooms, over its own transport — the console's `/rooms` — and
/// remembers the latest answer for each page, so a room can be named by its
/// place in the list (`/switch N`).
public final class RoomBrowser: AttachedRole {
    private let client: RendezvousClient
    public private(set) var servers: [NodeID] = []
    /// The latest answer for each page asked (pages from 0).
    public private(set) var pages: [Int: [RoomAnnouncement]] = [:]

    public init(core: TransportCore, clock: Clock, random: RandomSource) {
        client = RendezvousClient(core: core, clock: clock, random: random)
        client.onAnswer = { [unowned self] answer in
            if case let .page(page, _, rooms) = answer { pages[page] = rooms }
            onList?(answer)
            onAnswer?(answer)
        }
    }

    /// Each answer (a page of verified announcements) — the console's.
    public var onAnswer: ((RendezvousClient.Answer) -> Void)?
    /// Each answer as well — the room switcher's.
    var onList: ((RendezvousClient.Answer) -> Void)?
    /// A rendezvous session came up (the first list can be asked).
    var onServer: (() -> Void)?

    /// Asks the first rendezvous for page `page` (from 0); false with none connected yet.
    @discardableResult
    public func list(page: Int) -> Bool {
        guard let server = servers.first else { return false }
        client.list(page: page, from: server)
        return true
    }

    /// Asks the first rendezvous for one room; false with none connected yet.
    @discardableResult
    public func resolve(_ room: RoomID) -> Bool {
        guard let server = servers.first else { return false }
        client.resolve(room, from: server)
        return true
    }

    /// The room at `position` in the list as last answered (from 1, pages of
    /// `RendezvousConstants.roomsPerPage`), if that page was asked.
    public func room(at position: Int) -> RoomAnnouncement? {
        guard position >= 1 else { return nil }
        let page = (position - 1) / RendezvousConstants.roomsPerPage, index = (position - 1) % RendezvousConstants.roomsPerPage
        guard let rooms = pages[page], index < rooms.count else { return nil }
        return rooms[index]
    }

    /// A listed room by id, from the answers so far.
    public func room(_ id: RoomID) -> RoomAnnouncement? {
        for page in pages.keys.sorted() { if let a = pages[page]?.first(where: { $0.room == id }) { return a } }
        return nil
    }

    public func handle(_ event: TransportEvent) {
        switch event {
        case let .hello(id, hello) where hello.role == .rendezvous:
            if !servers.contains(id) {
                servers.append(id)
                onServer?()
            }
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
