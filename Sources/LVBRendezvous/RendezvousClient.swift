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
        /// The room's thumbnail, verified against its host's key; nil: none
        /// newer than the one this node has, or one that did not verify.
        case thumbnail(RoomID, RoomThumbnail?)
    }

    public var onAnswer: ((Answer) -> Void)?
    /// Announcements that did not verify (a broken or lying rendezvous).
    public private(set) var invalidAnnouncements = 0
    /// Thumbnails refused: pieces that did not fit together or a signature
    /// that is not the room's host's.
    public private(set) var invalidThumbnails = 0

    private let core: TransportCore
    private let clock: Clock
    private let random: RandomSource
    private var pages: [UInt32: (page: Int, parts: [Int: [RoomAnnouncement]])] = [:]
    private var resolves: [UInt32: RoomID] = [:]
    /// Thumbnails asked for: the room, its host (from its signed announcement), and the pieces so far.
    private var thumbnails: [UInt32: (room: RoomID, host: NodeID, assembly: ThumbnailAssembly?)] = [:]
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

    /// Asks for `room`'s thumbnail if newer than `have` (0: any); `host` is the
    /// room's host as its signed announcement says, whose signature it must carry.
    public func thumbnail(_ room: RoomID, host: NodeID, have: UInt64, from rendezvous: NodeID) {
        let request = random.uint32()
        thumbnails[request] = (room, host, nil)
        ask(request, RendezvousMessage.thumbnailRequest(request: request, room: room, have: have), rendezvous)
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
        case let .thumbnailAnswer(request, room, seq, piece):
            guard var pending = thumbnails[request], pending.room == room else { return }
            guard let piece else {
                finish(request, .thumbnail(room, nil))
                return
            }
            if pending.assembly.map({ $0.seq != seq || $0.count != piece.count }) ?? false {
                // Pieces of another thumbnail (a retry crossed a newer one): start over with these.
                pending.assembly = nil
            }
            var assembly = pending.assembly ?? ThumbnailAssembly(room: room, seq: seq, count: piece.count)
            do {
                guard let done = try assembly.add(piece) else {
                    pending.assembly = assembly
                    thumbnails[request] = pending
                    return
                }
                guard done.verify(host: pending.host) else { throw ThumbnailError.badSignature }
                finish(request, .thumbnail(room, done))
            } catch {
                invalidThumbnails += 1
                finish(request, .thumbnail(room, nil))
            }
        default:
            break
        }
    }

    private func finish(_ request: UInt32, _ answer: Answer) {
        thumbnails[request] = nil
        unanswered[request] = nil
        onAnswer?(answer)
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
