import LVBCore
import LVBCrypto
import LVBGossip

/// The host's rank of the room's givers: the points each gave, as the host
/// tallied the gift events it accepted (a giver's own word counts for its
/// gifts, not for its total), the top `maxEntries`, and the room's total.
/// Sent when it changes, at most every `giftRankInterval`; latest wins; a
/// late joiner's snapshot carries it.
///
///     body: total(8) ‖ n(1: 0...10) ‖ (member(32) ‖ points(8)) × n, most points first
public struct GiftRank: EventContent, Equatable {
    public static let kind = EventKind(15, "giftRank")
    public static let maxEntries = 10
    public static let maxBodyLength = 8 + 1 + 40 * maxEntries

    public struct Entry: Equatable, Sendable {
        public var member: NodeID
        public var points: UInt64
        public init(member: NodeID, points: UInt64) {
            self.member = member
            self.points = points
        }

        /// n(1) ‖ (member(32) ‖ points(8)) × n.
        static func write(_ entries: [Entry], into w: inout ByteWriter) {
            w.write(UInt8(entries.count))
            for entry in entries {
                w.write(bytes: entry.member.publicKey)
                w.write(entry.points)
            }
        }

        static func read(_ r: inout RoomEventReader, max: Int, what: String) throws(EventError) -> [Entry] {
            let n = Int(try r.uint8())
            guard n <= max else { throw .badValue("\(what) lists \(n) givers (at most \(max))") }
            var entries: [Entry] = []
            for _ in 0..<n { entries.append(Entry(member: try r.nodeID(), points: try r.uint64())) }
            return entries
        }

        /// A JSON array of {"id","nick","points"}.
        static func json(_ entries: [Entry], _ names: RoomNames) -> String {
            "[" + entries.map { entry in
                var o = JSONLine()
                o.add("id", entry.member.text)
                o.add("nick", names(entry.member))
                o.add("points", Int(clamping: entry.points))
                return o.text
            }.joined(separator: ",") + "]"
        }
    }

    public var total: UInt64
    public var top: [Entry]

    public init(total: UInt64, top: [Entry]) {
        self.total = total
        self.top = top
    }

    public func validate() throws(EventError) {
        guard top.count <= Self.maxEntries else { throw .badValue("gift rank lists \(top.count) givers (at most \(Self.maxEntries))") }
        guard Set(top.map(\.member)).count == top.count else { throw .badValue("gift rank lists a giver twice") }
        guard zip(top, top.dropFirst()).allSatisfy({ $0.points >= $1.points }) else { throw .badValue("gift rank is not ordered by points") }
        guard top.allSatisfy({ $0.points <= total }) else { throw .badValue("gift rank lists more points than its total") }
    }

    public func encode(into w: inout ByteWriter) {
        w.write(total)
        Entry.write(top, into: &w)
    }

    public static func decode(_ r: inout RoomEventReader) throws(EventError) -> GiftRank {
        let total = try r.uint64()
        return GiftRank(total: total, top: try Entry.read(&r, max: maxEntries, what: "gift rank"))
    }
}

extension EventKind {
    public static let giftRank = GiftRank.kind
}

extension EventBody {
    public static func giftRank(_ g: GiftRank) -> EventBody { EventBody(g) }
}

/// The host's alone; latest wins.
extension GiftRank: RoomEventRule {
    static var retention: EventRetention { .latest }

    func decide(_ e: RoomEvent, in state: RoomState, now: Instant, limited: Bool) -> RoomState.Verdict {
        state.hostsLatest(e)
    }
}

extension GiftRank {
    static func notice(for change: RoomChange, names: RoomNames) -> RoomNotice? {
        guard let (_, rank) = posted(change) else { return nil }
        return RoomNotice(rank.line(names), human: "", tag: "gift")
    }

    /// `gift_rank`: the room's total and its top givers, most points first.
    public func line(_ names: RoomNames) -> JSONLine {
        var l = JSONLine(event: "gift_rank")
        l.add("total", Int(clamping: total))
        l.addRaw("top", Entry.json(top, names))
        return l
    }

    /// The rank as lines of text (`/rank`).
    public func text(_ names: RoomNames) -> String {
        guard !top.isEmpty else { return "no gifts yet" }
        let lines = top.enumerated().map { i, entry in "\(i + 1). \(names(entry.member)) \(entry.points) points" }
        return "top givers (\(total) points in all):\n" + lines.joined(separator: "\n")
    }
}
