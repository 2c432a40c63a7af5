import LVBCore
import LVBCrypto
import LVBGossip
import LVBTransport

/// Asks a rendezvous for the room list or for one room, sans-IO over a
/// session with it; checks every announcement's signature before passing it on.
public final class RendezvousClient {
    public enum Answer: Equatable, Sendable {
        /// One page of the list (pages count from 0) and how many rooms are live in all.
        case page(page: Int, total: Int, rooms: [RoomAnnouncement])
        /// The room asked for, or nil: not listed.
        case resolved(RoomID, RoomAnnouncement?)
    }

    public var onAnswer: ((Answer) -> Void)?
    /// Announcements that did not verify (a broken or lying rendezvous).
    public private(set) var invalidAnnouncements = 0

    private let core: TransportCore
    private let clock: Clock
    private let random: RandomSource
    private var pages: [UInt32: (page: Int, parts: [Int: [RoomAnnouncement]])] = [:]
    private var resolves: [UInt32: RoomID] = [:]
    /// Requests not fully answered yet: asked again every `requestRetry`
    /// (a request or an answer can be lost; the same id, so answers match).
    private var unanswered: [UInt32: (bytes: [UInt8], to: NodeID, sent: Instant)] = [:]

    public init(core: TransportCore, clock: Clock, random: RandomSource) {
        self.core = core
        self.clock = clock
        self.random = random
    }

    public func list(page: Int, from rendezvous: NodeID) {
        let request = random.uint32()
        pages[request] = (page, [:])
        ask(request, RendezvousMessage.list(request: request, page: UInt16(clamping: page)), rendezvous)
    }

    public func resolve(_ room: RoomID, from rendezvous: NodeID) {
        let request = random.uint32()
        resolves[request] = room
        ask(request, RendezvousMessage.resolve(request: request, room: room), rendezvous)
    }

    /// Asks again what is still unanswered; call with the node's tick.
    public func tick() {
        let now = clock.now()
        for (request, u) in unanswered where now - u.sent >= RendezvousConstants.requestRetry {
            unanswered[request]?.sent = now
            try? core.send(u.bytes, channel: .rendezvous, to: u.to)
        }
    }

    private func ask(_ request: UInt32, _ message: RendezvousMessage, _ rendezvous: NodeID) {
        let bytes = message.encoded
        unanswered[request] = (bytes, rendezvous, clock.now())
        try? core.send(bytes, channel: .rendezvous, to: rendezvous)
    }

    public func handle(_ event: TransportEvent) {
        guard case let .message(_, .rendezvous, payload) = event, let message = try? RendezvousMessage.parse(payload) else { return }
        switch message {
        case let .rooms(request, _, total, part, parts, announcements):
            guard var pending = pages[request] else { return }
            pending.parts[Int(part)] = verified(announcements)
            guard pending.parts.count == Int(parts) else {
                pages[request] = pending
                return
            }
            pages[request] = nil
            unanswered[request] = nil
            let rooms = (0..<Int(parts)).flatMap { pending.parts[$0] ?? [] }
            onAnswer?(.page(page: pending.page, total: Int(total), rooms: rooms))
        case let .resolved(request, bytes):
            guard let room = resolves.removeValue(forKey: request) else { return }
            unanswered[request] = nil
            let announcement = bytes.flatMap { verified([$0]).first }
            onAnswer?(.resolved(room, announcement?.room == room ? announcement : nil))
        default:
            break
        }
    }

    private func verified(_ list: [[UInt8]]) -> [RoomAnnouncement] {
        list.compactMap { bytes in
            guard let a = try? RoomAnnouncement.parse(bytes[...]) else {
                invalidAnnouncements += 1
                return nil
            }
            return a
        }
    }
}
