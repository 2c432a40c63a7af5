import LVBCore
import LVBCrypto
import LVBGossip

/// The author's cumulative like count: grow-only, so the room's total is the
/// sum over authors of each author's highest, whatever arrives late or twice.
///
///     body: total(8)
public struct LikeTotal: EventContent, Equatable {
    public static let kind = EventKind(3, "like")
    public static let maxBodyLength = 8
    public var total: UInt64

    public init(total: UInt64) { self.total = total }

    public func validate() throws(EventError) {}
    public func encode(into w: inout ByteWriter) { w.write(total) }
    public static func decode(_ r: inout RoomEventReader) throws(EventError) -> LikeTotal { LikeTotal(total: try r.uint64()) }
}

extension EventKind {
    public static let like = LikeTotal.kind
}

extension EventBody {
    public static func like(total: UInt64) -> EventBody { EventBody(LikeTotal(total: total)) }
}

/// A total not above the author's adds nothing; a higher one, within the like rate, raises it.
extension LikeTotal: RoomEventRule {
    func decide(_ e: RoomEvent, in state: RoomState, now: Instant, limited: Bool) -> RoomState.Verdict {
        guard total > state.likeTally.total(of: e.author) else { return .duplicate }
        if limited, !state.likeBuckets.allow(e.author, now: now) { return .rejected(.rateLimited) }
        state.likeTally.raise(e, to: total)
        return .accepted([.like(author: e.author, authorTotal: total, roomTotal: state.likeTally.roomTotal)])
    }
}

extension LikeTotal {
    static func notice(for change: RoomChange, names: RoomNames) -> RoomNotice? {
        guard case let .like(author, authorTotal, roomTotal) = change else { return nil }
        var l = names.line("like", author)
        l.add("count", Int(authorTotal))
        l.add("total", Int(roomTotal))
        return RoomNotice(l, human: "\(names(author)) likes this (room total \(roomTotal))", tag: "like")
    }

    /// Most likes one page command sends.
    public static let maxPerPageCommand = 100
    /// Most likes one console command sends.
    public static let maxPerConsoleCommand: UInt64 = 1000

    static var commands: [RoomCommand] {
        [RoomCommand(console: "/like [N]", "like the stream (N times, N from 1 to 1000)") { rest in
             guard let n = rest.isEmpty ? 1 : UInt64(rest), n >= 1, n <= maxPerConsoleCommand else { return nil }
             return { try $0.like(n) }
         },
         RoomCommand(page: "like") { fields throws(CommandFieldError) in
             let n = try fields.count("count", in: 1...maxPerPageCommand, fallback: 1)
             return { try $0.like(UInt64(n)) }
         }]
    }
}

extension RoomNode {
    /// Adds `count` likes (the event carries this node's running total).
    public func like(_ count: UInt64 = 1) throws(RoomActionError) {
        guard let state else { throw .notInRoom }
        // Our running total is whatever the room holds for us (history
        // included, so a restarted node continues from its earlier count).
        try publish(.like(total: state.likes(of: core.nodeID) + max(1, count))).get()
    }
}
