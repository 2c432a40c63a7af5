import LVBCore
import LVBCrypto
import LVBGossip

/// A PK battle as this room's host shows it to its room: which room it is
/// against, when the timer ends, both sides' scores and, once over, how it
/// ended. This side's score is the host's own count of the likes and gift
/// points its audience gave since the battle began; the other side's comes
/// with its proof, the other host's own signed keepalive that states it
/// (`PKMessage` alive, to this room, for this battle), so no host can
/// inflate the other's number, and every viewer checks it. The host's
/// alone; latest wins; a late joiner's snapshot carries a running battle.
///
///     body: stage(1: 1 started, 2 score, 3 over) ‖ pk(8) ‖ otherRoom(16) ‖ otherHost(32)
///           ‖ endsAt(8: wall ms) ‖ ending(1: 0 running, a PKBattle.Ending) ‖ ours(8) ‖ theirs(8)
///           ‖ len(1) ‖ title(0…100: the other room's) ‖ len(2) ‖ proof(0…128)
///           ‖ n(1: 0...3) ‖ (member(32) ‖ points(8)) × n: this side's top givers in the battle
public struct PKBattle: EventContent, Equatable {
    public static let kind = EventKind(16, "pkBattle")
    /// A keepalive is 121 bytes.
    public static let proofMax = 128
    public static let maxGivers = 3
    public static let maxBodyLength = 1 + 8 + 16 + 32 + 8 + 1 + 8 + 8 + 1 + PKMessage.titleMax + 2 + proofMax + 1 + 40 * maxGivers

    public enum Stage: UInt8, Sendable {
        case started = 1, score = 2, over = 3
    }

    /// How a battle ended (the `ending` byte; 0 while it runs).
    public enum Ending: UInt8, Sendable, CustomStringConvertible {
        /// This room's host ended it.
        case endedHere = 1
        /// The other room's host ended it.
        case endedThere = 2
        case timeUp = 3
        /// The other host fell silent (left, crashed, lost).
        case otherSilent = 4
        /// The other room closed.
        case otherClosed = 5

        public var description: String {
            switch self {
            case .endedHere: "ended_by_host"
            case .endedThere: "ended_by_other"
            case .timeUp: "time_up"
            case .otherSilent: "other_host_silent"
            case .otherClosed: "other_room_closed"
            }
        }
    }

    public var stage: Stage
    public var pk: UInt64
    public var otherRoom: RoomID
    public var otherHost: NodeID
    public var endsAt: UInt64
    public var ending: Ending?
    public var ours: UInt64
    public var theirs: UInt64
    public var title: String
    /// The other host's keepalive stating `theirs` (empty while it stated nothing).
    public var proof: [UInt8]
    /// This side's top givers in the battle (gift points since it began), most first.
    public var top: [GiftRank.Entry]

    public init(stage: Stage, pk: UInt64, otherRoom: RoomID, otherHost: NodeID, endsAt: UInt64, ending: Ending?,
                ours: UInt64, theirs: UInt64, title: String, proof: [UInt8], top: [GiftRank.Entry] = []) {
        self.stage = stage
        self.pk = pk
        self.otherRoom = otherRoom
        self.otherHost = otherHost
        self.endsAt = endsAt
        self.ending = ending
        self.ours = ours
        self.theirs = theirs
        self.title = title
        self.proof = proof
        self.top = top
    }

    /// Who leads: 1 this side, -1 the other, 0 level.
    public var lead: Int { ours > theirs ? 1 : ours < theirs ? -1 : 0 }

    /// The other host's keepalive in `proof`, checked against this battle
    /// (nil: no proof). Throws when it does not hold up.
    func provenScore() throws(EventError) -> PKMessage? {
        guard !proof.isEmpty else {
            guard theirs == 0 else { throw .badValue("PK score of the other side without its host's proof") }
            return nil
        }
        guard let m = try? PKMessage.parse(proof[...]), case .alive(let score) = m.body else {
            throw .badValue("PK proof is not the other host's keepalive")
        }
        guard m.pk == pk, m.from == otherRoom, score == theirs else { throw .badValue("PK proof is for another battle or score") }
        guard m.isSigned(by: otherHost) else { throw .badValue("PK proof is not signed by the other host") }
        return m
    }

    public func validate() throws(EventError) {
        if !title.isEmpty { try EventText.check(title, field: "PK title", max: PKMessage.titleMax) }
        guard proof.count <= Self.proofMax else { throw .badValue("PK proof of \(proof.count) bytes") }
        guard (stage == .over) == (ending != nil) else { throw .badValue("PK ending and stage disagree") }
        _ = try provenScore()
        guard top.count <= Self.maxGivers, Set(top.map(\.member)).count == top.count,
              zip(top, top.dropFirst()).allSatisfy({ $0.points >= $1.points }), top.allSatisfy({ $0.points <= ours }) else {
            throw .badValue("PK top givers: at most \(Self.maxGivers), none twice, most first, none above the score")
        }
    }

    public func encode(into w: inout ByteWriter) {
        w.write(stage.rawValue)
        w.write(pk)
        w.write(bytes: otherRoom.bytes)
        w.write(bytes: otherHost.publicKey)
        w.write(endsAt)
        w.write(ending?.rawValue ?? 0)
        w.write(ours)
        w.write(theirs)
        w.writeShortBytes(Array(title.utf8))
        w.write(UInt16(proof.count))
        w.write(bytes: proof)
        GiftRank.Entry.write(top, into: &w)
    }

    public static func decode(_ r: inout RoomEventReader) throws(EventError) -> PKBattle {
        guard let stage = Stage(rawValue: try r.uint8()) else { throw .badValue("PK stage") }
        let pk = try r.uint64()
        guard let otherRoom = try? RoomID(bytes: Array(try r.bytes(16))) else { throw .badRoomID }
        let otherHost = try r.nodeID(), endsAt = try r.uint64()
        let rawEnding = try r.uint8()
        let ending = rawEnding == 0 ? nil : Ending(rawValue: rawEnding)
        guard rawEnding == 0 || ending != nil else { throw .badValue("PK ending \(rawEnding)") }
        let ours = try r.uint64(), theirs = try r.uint64()
        let titleLength = Int(try r.uint8())
        guard titleLength <= PKMessage.titleMax else { throw .textTooLong(field: "PK title", max: PKMessage.titleMax) }
        let title = try EventText.decode(try r.bytes(titleLength))
        let proofLength = Int(try r.uint16())
        guard proofLength <= proofMax else { throw .badValue("PK proof of \(proofLength) bytes") }
        let proof = Array(try r.bytes(proofLength))
        let top = try GiftRank.Entry.read(&r, max: maxGivers, what: "PK top")
        return PKBattle(stage: stage, pk: pk, otherRoom: otherRoom, otherHost: otherHost, endsAt: endsAt, ending: ending,
                        ours: ours, theirs: theirs, title: title, proof: proof, top: top)
    }
}

extension EventKind {
    public static let pkBattle = PKBattle.kind
}

extension EventBody {
    public static func pkBattle(_ b: PKBattle) -> EventBody { EventBody(b) }
}

/// The host's alone, its proof addressed to this room; latest wins.
extension PKBattle: RoomEventRule {
    static var retention: EventRetention { .latest }

    /// A battle still running; one that is over is old news to a late joiner.
    static func isNews(_ e: RoomEvent, in state: RoomState) -> Bool { e.body.as(PKBattle.self)?.ending == nil }

    func decide(_ e: RoomEvent, in state: RoomState, now: Instant, limited: Bool) -> RoomState.Verdict {
        if e.author == state.host, let proof = try? provenScore(), proof.to != state.room {
            return .rejected(.wrongRoom)
        }
        return state.hostsLatest(e)
    }
}

extension PKBattle {
    static func notice(for change: RoomChange, names: RoomNames) -> RoomNotice? {
        guard let (_, battle) = posted(change) else { return nil }
        return RoomNotice(battle.line(names), human: battle.text, tag: "pk")
    }

    /// `pk_started`, `pk_score`, `pk_ended`: the whole battle as it stands.
    public func line(_ names: RoomNames) -> JSONLine {
        var l = JSONLine(event: stage == .started ? "pk_started" : stage == .score ? "pk_score" : "pk_ended")
        l.add("pk", String(pk, radix: 16))
        l.add("room", otherRoom.text)
        l.add("host", otherHost.text)
        l.add("title", title)
        l.add("ends_at", Int(clamping: endsAt))
        l.add("ours", Int(clamping: ours))
        l.add("theirs", Int(clamping: theirs))
        l.addRaw("top", GiftRank.Entry.json(top, names))
        if let ending {
            l.add("reason", ending.description)
            l.add("result", lead > 0 ? "won" : lead < 0 ? "lost" : "draw")
        }
        return l
    }

    /// This side's top givers in the battle as text (`/rank` during a PK).
    public func giversText(_ names: RoomNames) -> String {
        guard !top.isEmpty else { return "no gifts for this side in the PK yet" }
        return "top givers in the PK (\(ours) points for this side):\n"
            + top.enumerated().map { i, e in "\(i + 1). \(names(e.member)) \(e.points) points" }.joined(separator: "\n")
    }

    private var text: String {
        let against = title.isEmpty ? "room \(otherRoom.text)" : "«\(title)»"
        switch stage {
        case .started: return "PK against \(against) began: likes and gifts score for this side"
        case .score: return "PK score \(ours) : \(theirs) against \(against)"
        case .over:
            let result = lead > 0 ? "won" : lead < 0 ? "lost" : "drew"
            return "PK against \(against) over (\(ending?.description ?? "")): this side \(result) \(ours) : \(theirs)"
        }
    }
}
