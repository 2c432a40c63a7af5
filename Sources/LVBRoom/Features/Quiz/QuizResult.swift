import LVBCore
import LVBCrypto
import LVBGossip

/// The host's tally of a quiz, signed when the quiz closes (`answer` 0),
/// and again when it names the right option (`/reveal N`): how many
/// members chose each option (the answers it accepted, one a member), how
/// many chose the right one, and the first of them in the order their
/// answers came. Latest wins; a late joiner's snapshot carries the latest
/// while it speaks of the latest question.
///
///     body: quiz(8) ‖ n(1: 2...6) ‖ count(4) × n ‖ answer(1: 0 not named, 1...n)
///           ‖ winners(4) ‖ w(1: 0...12) ‖ member(32) × w
public struct QuizResult: EventContent, Equatable {
    public static let kind = EventKind(18, "quizResult")
    /// The most winners a result names (the rest are counted).
    public static let maxNamed = 12
    public static let maxBodyLength = 8 + 1 + 4 * QuizQuestion.options.upperBound + 1 + 4 + 1 + 32 * maxNamed

    public var quiz: UInt64
    public var counts: [UInt32]
    /// The right option (1-based), 0 until the host names it.
    public var answer: UInt8
    /// How many chose the right option, and the first `maxNamed` of them.
    public var winners: UInt32
    public var named: [NodeID]

    public init(quiz: UInt64, counts: [UInt32], answer: UInt8, winners: UInt32, named: [NodeID]) {
        self.quiz = quiz
        self.counts = counts
        self.answer = answer
        self.winners = winners
        self.named = named
    }

    public func validate() throws(EventError) {
        guard QuizQuestion.options.contains(counts.count) else { throw .badValue("a quiz result counts \(counts.count) options") }
        guard Int(answer) <= counts.count else { throw .badValue("quiz answer \(answer) of \(counts.count) options") }
        guard named.count <= Self.maxNamed, named.count <= Int(winners) else { throw .badValue("a quiz result names \(named.count) of \(winners) winners") }
        guard Set(named).count == named.count else { throw .badValue("a quiz result names a winner twice") }
        if answer == 0 {
            guard winners == 0 else { throw .badValue("a quiz result with no answer named has winners") }
        } else {
            guard winners == counts[Int(answer) - 1] else { throw .badValue("quiz winners \(winners) are not the right option's count") }
        }
    }

    public func encode(into w: inout ByteWriter) {
        w.write(quiz)
        w.write(UInt8(counts.count))
        for c in counts { w.write(c) }
        w.write(answer)
        w.write(winners)
        w.write(UInt8(named.count))
        for id in named { w.write(bytes: id.publicKey) }
    }

    public static func decode(_ r: inout RoomEventReader) throws(EventError) -> QuizResult {
        let quiz = try r.uint64()
        let n = Int(try r.uint8())
        guard QuizQuestion.options.contains(n) else { throw .badValue("a quiz result counts \(n) options") }
        var counts: [UInt32] = []
        for _ in 0..<n { counts.append(try r.uint32()) }
        let answer = try r.uint8(), winners = try r.uint32()
        let w = Int(try r.uint8())
        guard w <= maxNamed else { throw .badValue("a quiz result names \(w) winners (at most \(maxNamed))") }
        var named: [NodeID] = []
        for _ in 0..<w { named.append(try r.nodeID()) }
        return QuizResult(quiz: quiz, counts: counts, answer: answer, winners: winners, named: named)
    }
}

/// The host's alone; latest wins; it counts the options its question has.
extension QuizResult: RoomEventRule {
    static var retention: EventRetention { .latest }

    static func isNews(_ e: RoomEvent, in state: RoomState) -> Bool {
        e.body.as(QuizResult.self)?.quiz == state.latest(QuizQuestion.self)?.quiz
    }

    func decide(_ e: RoomEvent, in state: RoomState, now: Instant, limited: Bool) -> RoomState.Verdict {
        if let q = state.latest(QuizQuestion.self), q.quiz == quiz, q.options.count != counts.count, e.author == state.host {
            return .rejected(.stale)
        }
        return state.hostsLatest(e)
    }

    static func notice(for change: RoomChange, names: RoomNames) -> RoomNotice? {
        guard let (_, result) = posted(change) else { return nil }
        let tally = result.counts.enumerated().map { "\($0.offset + 1)) \($0.element)" }.joined(separator: "  ")
        var human = "quiz over: \(tally)"
        if result.answer > 0 {
            let more = Int(result.winners) - result.named.count
            let who = result.named.map { names($0) }.joined(separator: ", ") + (more > 0 ? " and \(more) more" : "")
            human = "quiz: the answer is \(result.answer); \(tally); \(result.winners == 0 ? "nobody got it" : "right: " + who)"
        }
        return RoomNotice(result.line(names), human: human, tag: "quiz")
    }

    /// `quiz_result`: the tally, the right option (null until named) and the winners.
    func line(_ names: RoomNames) -> JSONLine {
        var l = JSONLine(event: "quiz_result")
        l.add("id", Quiz.idText(quiz))
        l.addRaw("counts", "[" + counts.map(String.init).joined(separator: ",") + "]")
        l.add("answers", Int(counts.reduce(0) { $0 + UInt64($1) }))
        if answer > 0 { l.add("answer", Int(answer)) } else { l.addRaw("answer", "null") }
        l.addRaw("winners", "[" + named.map { id in
            var o = JSONLine()
            o.add("id", id.text)
            o.add("nick", names(id))
            return o.text
        }.joined(separator: ",") + "]")
        l.add("winners_count", Int(winners))
        return l
    }
}
