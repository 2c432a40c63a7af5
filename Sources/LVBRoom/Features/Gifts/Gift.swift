import LVBCore
import LVBCrypto
import LVBGossip

/// One kind of gift in the catalogue built into the binary. Points only:
/// no money moves, nothing is bought; a gift is a viewer's signed cheer
/// that the room shows and the host ranks.
public struct GiftKind: Equatable, Sendable {
    /// The wire id (1...).
    public let id: UInt8
    public let name: String
    /// Points one of it counts for the giver's rank (and a PK's score).
    public let points: UInt32
    /// How the page and console show it.
    public let glyph: String
    /// Big gifts fly across the picture; small ones stack in a corner.
    public let big: Bool
}

/// The gifts this version knows. A gift id not listed here is refused like
/// a malformed event (a newer version adds entries, never renumbers).
public enum GiftCatalogue {
    public static let all: [GiftKind] = [
        GiftKind(id: 1, name: "rose", points: 1, glyph: "🌹", big: false),
        GiftKind(id: 2, name: "heart", points: 10, glyph: "💖", big: false),
        GiftKind(id: 3, name: "rocket", points: 100, glyph: "🚀", big: true),
        GiftKind(id: 4, name: "crown", points: 500, glyph: "👑", big: true),
    ]

    public static func gift(_ id: UInt8) -> GiftKind? { all.first { $0.id == id } }
    public static func named(_ name: String) -> GiftKind? { all.first { $0.name == name.lowercased() } }

    /// "rose (1), heart (10), …" for help and mistakes.
    public static var names: String { all.map { "\($0.name) (\($0.points))" }.joined(separator: ", ") }
}

/// A gift: `count` of one catalogue kind, part of the author's combo
/// `combo` (the same kind again within `RoomConstants.giftComboWindow`
/// continues it), whose running count with this event is `comboCount`.
///
///     body: gift(1) ‖ count(2: 1...99) ‖ combo(4) ‖ comboCount(4: count...9999)
public struct Gift: EventContent, Equatable {
    public static let kind = EventKind(14, "gift")
    public static let maxCount: UInt16 = 99
    public static let maxComboCount: UInt32 = 9999
    public static let maxBodyLength = 1 + 2 + 4 + 4
    public var gift: UInt8
    public var count: UInt16
    public var combo: UInt32
    public var comboCount: UInt32

    public init(gift: UInt8, count: UInt16, combo: UInt32, comboCount: UInt32) {
        self.gift = gift
        self.count = count
        self.combo = combo
        self.comboCount = comboCount
    }

    public var catalogued: GiftKind? { GiftCatalogue.gift(gift) }

    /// The points this event adds to its author's rank.
    public var points: UInt64 { UInt64(count) * UInt64(catalogued?.points ?? 0) }

    public func validate() throws(EventError) {
        guard catalogued != nil else { throw .badValue("gift \(gift) is not in the catalogue") }
        guard (1...Self.maxCount).contains(count) else { throw .badValue("gift count \(count) is not 1...\(Self.maxCount)") }
        guard (UInt32(count)...Self.maxComboCount).contains(comboCount) else {
            throw .badValue("gift combo count \(comboCount) is not \(count)...\(Self.maxComboCount)")
        }
    }

    public func encode(into w: inout ByteWriter) {
        w.write(gift)
        w.write(count)
        w.write(combo)
        w.write(comboCount)
    }

    public static func decode(_ r: inout RoomEventReader) throws(EventError) -> Gift {
        Gift(gift: try r.uint8(), count: try r.uint16(), combo: try r.uint32(), comboCount: try r.uint32())
    }
}

extension EventKind {
    public static let gift = Gift.kind
}

extension EventBody {
    public static func gift(_ g: Gift) -> EventBody { EventBody(g) }
}

/// Anyone not muted, within the gift rate; every node tallies the points
/// it saw (the host's tally is the room's rank, `GiftRank`) and follows
/// each combo until it rests.
extension Gift: RoomEventRule {
    func decide(_ e: RoomEvent, in state: RoomState, now: Instant, limited: Bool) -> RoomState.Verdict {
        if state.isMuted(e.author) { return .rejected(.authorMuted) }
        let book = state.part(GiftBook.self)
        if limited, !book.buckets.allow(e.author, now: now) { return .rejected(.rateLimited) }
        book.tally.add(e, self, now: now)
        return .accepted([.posted(e)])
    }
}

extension Gift {
    static func notice(for change: RoomChange, names: RoomNames) -> RoomNotice? {
        if case let .giftCombo(author, gift, combo, count) = change, let kind = GiftCatalogue.gift(gift) {
            var l = names.line("gift_combo", author)
            l.add("gift", kind.name)
            l.add("combo", Int(combo))
            l.add("count", Int(count))
            l.add("points", Int(count) * Int(kind.points))
            return RoomNotice(l, human: "\(names(author)) sent \(kind.glyph) \(kind.name) ×\(count) in a row (\(Int(count) * Int(kind.points)) points)", tag: "gift")
        }
        guard let (e, g) = posted(change), let kind = g.catalogued else { return nil }
        var l = names.line("gift", e.author)
        l.add("gift", kind.name)
        l.add("glyph", kind.glyph)
        l.add("big", kind.big)
        l.add("count", Int(g.count))
        l.add("combo", Int(g.combo))
        l.add("combo_count", Int(g.comboCount))
        l.add("points", Int(g.points))
        // One line a combo: its first event; the rest show in the page and in JSON, and the combo's end says the total.
        let human = g.comboCount == UInt32(g.count) ? "\(names(e.author)) sends \(kind.glyph) \(kind.name)\(g.count > 1 ? " ×\(g.count)" : "")" : ""
        return RoomNotice(l, human: human, tag: "gift")
    }

    static var commands: [RoomCommand] {
        [RoomCommand(console: "/gift NAME [N]", "send a gift (points only, no money): \(GiftCatalogue.names); N from 1 to \(maxCount)") { rest in
             let words = rest.split(separator: " ").map(String.init)
             guard (1...2).contains(words.count), GiftCatalogue.named(words[0]) != nil else { return nil }
             let count = words.count == 2 ? UInt16(words[1]) : 1
             guard let count, (1...maxCount).contains(count) else { return nil }
             return { try $0.gift(words[0], count: count) }
         },
         RoomCommand(page: "gift") { fields throws(CommandFieldError) in
             let name = try fields.word("gift")
             guard GiftCatalogue.named(name) != nil else { throw .invalid("gift") }
             let count = try fields.count("count", in: 1...Int(maxCount), fallback: 1)
             return { try $0.gift(name, count: UInt16(count)) }
         }]
    }
}

extension RoomNode {
    /// Sends `count` of the gift called `name`: the same gift again within
    /// `RoomConstants.giftComboWindow` of the last continues its combo.
    public func gift(_ name: String, count: UInt16 = 1) throws(RoomActionError) {
        try feature(Gifts.self)?.send(name, count: count)
    }
}
