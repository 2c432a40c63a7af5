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
