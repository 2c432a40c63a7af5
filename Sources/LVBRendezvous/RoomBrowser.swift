import LVBCore
import LVBCrypto
import LVBGossip
import LVBReplay
import LVBRoom
import LVBTransport

/// A running node's view of the room list: asks the rendezvous servers it
/// already holds sessions with (its introducer's or announcer's) for a page
/// of live rooms, over its own transport — the console's `/rooms` — and
/// remembers the latest answer for each page, so a room can be named by its
/// place in the list (`/switch N`). With `fetchesThumbnails` it also asks
/// for each listed room's thumbnail after each answer (only when newer than
/// the one it has), paced, and keeps the verified ones of listed rooms.
/// With `listsReplays` it asks for the first page of replays beside the
/// first page of rooms (a studio page lists them after the live rooms),
/// and finds a replay's holders (`findReplay`).
public final class RoomBrowser: LiveRole {
    private let client: RendezvousClient
    private let core: TransportCore
    private let clock: Clock
    public private(set) var servers: [NodeID] = []
    /// The latest answer for each page asked (pages from 0).
    public private(set) var pages: [Int: [RoomAnnouncement]] = [:]
    /// Ask for the listed rooms' thumbnails (a studio page shows them).
    public var fetchesThumbnails = false
    /// The latest verified thumbnail of each listed room.
    public private(set) var thumbnails: [RoomID: RoomThumbnail] = [:]
    /// Rooms whose thumbnail is to be asked for, in list order, and when the last was.
    private var thumbnailQueue: [(room: RoomID, host: NodeID)] = []
    private var lastThumbnailAsk: Instant?
    /// Ask for the replays too (replay channel), each time the first page of rooms is asked.
    public var listsReplays = false
    /// The first page of replays as last answered (newest first), with how many nodes hold each.
    public private(set) var replays: [ReplayListMessage.Listed] = []
    /// The parts of the replay list's answer being put together, and the request they answer.
    private var replayParts: [UInt8: [ReplayListMessage.Listed]] = [:]
    private var replayRequest: UInt32 = 0
    /// Holders of a replay asked with `findReplay`, as the rendezvous answered (none: not listed).
    public var onReplayHolders: ((ReplayID, [ReplayListMessage.Holder]) -> Void)?

    public init(core: TransportCore, clock: Clock, random: RandomSource) {
        self.core = core
        self.clock = clock
        client = RendezvousClient(core: core, clock: clock, random: random)
        client.onAnswer = { [unowned self] answer in
            switch answer {
            case let .thumbnail(room, thumbnail):
                guard let thumbnail, listed(room), thumbnail.seq > thumbnails[room]?.seq ?? 0 else { return }
                thumbnails[room] = thumbnail
                onThumbnail?(room)
                return
            case let .page(page, _, rooms):
                pages[page] = rooms
                listedChanged(rooms.map { ($0.room, $0.host) })
            case .resolved:
                break
            }
            for observer in observers { observer(answer) }
            onAnswer?(answer)
            onListed?()
        }
    }

    /// A listed room's thumbnail arrived (newer than the one before).
    public var onThumbnail: ((RoomID) -> Void)?
    /// A page of the list arrived (every answer, whoever asked).
    public var onListed: (() -> Void)?

    /// Each answer (a page of verified announcements) — the console's.
    public var onAnswer: ((RendezvousClient.Answer) -> Void)?
    /// Each answer as well, to each role that asked to see them (the room switcher, a host's PK dialler).
    private var observers: [(RendezvousClient.Answer) -> Void] = []
    func observe(_ observer: @escaping (RendezvousClient.Answer) -> Void) { observers.append(observer) }
    /// A rendezvous session came up (the first list can be asked).
    var onServer: (() -> Void)?

    /// Asks the first rendezvous for page `page` (from 0); false with none connected yet.
    @discardableResult
    public func list(page: Int) -> Bool {
        guard let server = servers.first else { return false }
        client.list(page: page, from: server)
        if page == 0, listsReplays {
            replayRequest &+= 1
            replayParts = [:]
            try? core.send(ReplayListMessage.list(request: replayRequest, page: 0).bytes, channel: .replay, to: server)
        }
        return true
    }

    /// Asks the first rendezvous who holds replay `id` (`onReplayHolders`); false with none connected yet.
    @discardableResult
    public func findReplay(_ id: ReplayID) -> Bool {
        guard let server = servers.first else { return false }
        try? core.send(ReplayListMessage.find(request: 0, id).bytes, channel: .replay, to: server)
        return true
    }

    /// A listed replay by id, from the last answer.
    public func replay(_ id: ReplayID) -> ReplayListMessage.Listed? { replays.first { $0.card.id == id } }

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

    /// Every listed room from the answers so far, in list order.
    public var rooms: [RoomAnnouncement] { pages.keys.sorted().flatMap { pages[$0] ?? [] } }

    /// A listed room by id, from the answers so far.
    public func room(_ id: RoomID) -> RoomAnnouncement? { rooms.first { $0.room == id } }

    public func handle(_ event: NodeEvent) {
        guard case .transport(let event) = event else { return }
        switch event {
        case let .message(peer, .replay, payload) where ReplayListMessage.isListMessage(payload) && servers.contains(peer):
            replayAnswer(payload)
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

    public func tick() {
        client.tick()
        askNextThumbnail()
    }

    /// Listed live, or the room of a listed replay (its thumbnail is the live's last).
    private func listed(_ room: RoomID) -> Bool {
        pages.values.contains { $0.contains { $0.room == room } } || replays.contains { $0.card.info.room == room }
    }

    /// Thumbnails of rooms that left the list go; the page's rooms are asked about again.
    private func listedChanged(_ rooms: [(room: RoomID, host: NodeID)]) {
        thumbnails = thumbnails.filter { listed($0.key) }
        guard fetchesThumbnails else { return }
        thumbnailQueue.removeAll { a in rooms.contains { $0.room == a.room } }
        thumbnailQueue += rooms
    }

    /// A part of the replay list (the answer to the latest request only), or a replay's holders.
    private func replayAnswer(_ payload: ArraySlice<UInt8>) {
        guard let message = try? ReplayListMessage.parse(payload) else { return }
        switch message {
        case let .listed(request, 0, _, part, parts, listed) where request == replayRequest:
            replayParts[part] = listed
            guard replayParts.count == Int(parts) else { return }
            replays = (0..<parts).flatMap { replayParts[$0] ?? [] }.filter { !$0.card.info.isPrivate }
            replayParts = [:]
            listedChanged(replays.map { ($0.card.info.room, $0.card.info.host) })
            onListed?()
        case let .found(_, id, holders):
            onReplayHolders?(id, holders)
        default:
            break
        }
    }

    /// One thumbnail request per `thumbnailRequestPace`, so a page of rooms
    /// stays within the rendezvous's request rate.
    private func askNextThumbnail() {
        guard !thumbnailQueue.isEmpty, let server = servers.first else { return }
        let now = clock.now()
        if let last = lastThumbnailAsk, now - last < RendezvousConstants.thumbnailRequestPace { return }
        lastThumbnailAsk = now
        let room = thumbnailQueue.removeFirst()
        client.thumbnail(room.room, host: room.host, have: thumbnails[room.room]?.seq ?? 0, from: server)
    }
    public func leave() {}
    public func stop() {}
}
