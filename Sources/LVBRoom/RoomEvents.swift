import LVBCore
import LVBGossip

/// What one kind of room event means to a room: who may send it, how fast,
/// what it changes in the room's state, how that shows, and the commands
/// that post it. A kind is one file in `LVBRoom/Events` — its wire body and
/// checks (`EventContent`), this rule, its notice and commands, and the
/// room node's method that posts it — and one line in `RoomEvents.kinds`.
protocol RoomEventRule: EventContent {
    /// Checks the author's rights, the rate (`limited`: not history) and the
    /// state, then applies `e` (which carries this content) to `state`.
    func decide(_ e: RoomEvent, in state: RoomState, now: Instant, limited: Bool) -> RoomState.Verdict

    /// How a change this kind's rule makes shows (nil: not one of its
    /// changes, or one that shows nothing).
    static func notice(for change: RoomChange, names: RoomNames) -> RoomNotice?

    /// The console and page commands that post this kind.
    static var commands: [RoomCommand] { get }

    /// What the room keeps of this kind for itself and for late joiners.
    static var retention: EventRetention { get }

    /// Whether a kept event (`retention`) still goes to a late joiner.
    static func isNews(_ e: RoomEvent, in state: RoomState) -> Bool
}

/// What a room keeps of an event kind (`RoomEventRule.retention`).
enum EventRetention: Sendable {
    /// Nothing the room keeps for it: the kind's rule keeps what it needs
    /// (chat history, like totals, presence, moderation…).
    case none
    /// The latest event of the kind, by its author's sequence number
    /// (`RoomState.keepLatest`): an older one is refused as stale, and a late
    /// joiner's snapshot carries the one kept while it is news.
    case latest
    /// The latest event of the kind from each author, by its sequence
    /// number (`RoomState.keepByAuthor`): profiles, relay positions. A late
    /// joiner's snapshot carries those of the members it shows, while news.
    case latestPerAuthor
}

extension RoomEventRule {
    static var commands: [RoomCommand] { [] }
    static var retention: EventRetention { .none }
    static func isNews(_ e: RoomEvent, in state: RoomState) -> Bool { true }

    /// The notice of a change that carries an event of this kind (`.posted`).
    static func posted(_ change: RoomChange) -> (RoomEvent, Self)? {
        guard case .posted(let e) = change, let content = e.body.as(Self.self) else { return nil }
        return (e, content)
    }
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
        RoomClosure.self,
        RelayPosition.self,
    ] + RoomFeatures.kinds

    /// The wire side of the table, for the gossip layer and anyone parsing events.
    public static let table = EventKindTable(kinds)

    /// How `change` shows, as the kind that made it describes it (nil: it shows nothing).
    public static func notice(for change: RoomChange, names: RoomNames) -> RoomNotice? {
        for kind in kinds {
            if let notice = kind.notice(for: change, names: names) { return notice }
        }
        return nil
    }

    /// Every kind's commands, in the table's order, then the features' own.
    public static let commands: [RoomCommand] = kinds.flatMap { $0.commands } + RoomFeatures.commands

    /// The console command for a word ("/like"; "" for plain text).
    public static func command(console word: String) -> RoomCommand? { commands.first { $0.word == word } }

    /// The page command called `name`.
    public static func command(page name: String) -> RoomCommand? { commands.first { $0.pageName == name } }
}
