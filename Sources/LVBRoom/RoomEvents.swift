import LVBCore
import LVBGossip

/// What one kind of room event means to a room: who may send it, how fast,
/// and what it changes in the room's state. A kind is one file in
/// `LVBRoom/Events` — its wire body and checks (`EventContent`), this rule,
/// and how it shows — and one line in `RoomEvents.kinds`.
protocol RoomEventRule: EventContent {
    /// Checks the author's rights, the rate (`limited`: not history) and the
    /// state, then applies `e` (which carries this content) to `state`.
    func decide(_ e: RoomEvent, in state: RoomState, now: Instant, limited: Bool) -> RoomState.Verdict
}

/// The room event kinds this version knows, registered in one table: a new
/// kind is a new file in `Events/` and one line here. An event of a kind not
/// listed is refused like a malformed one (counted, its sender penalised).
public enum RoomEvents {
    static let kinds: [any RoomEventRule.Type] = [
        ChatLine.self,
        BulletComment.self,
        LikeTotal.self,
        MemberJoin.self,
        MemberLeave.self,
        Profile.self,
        RoomInfo.self,
        Kick.self,
        Mute.self,
        RoomClosure.self,
        StageChange.self,
        RelayPosition.self,
    ]

    /// The wire side of the table, for the gossip layer and anyone parsing events.
    public static let table = EventKindTable(kinds)
}
