import LVBCore
import LVBCrypto
import LVBGossip

/// The host's quiz question (the studio seed's online quiz): 2 to 6
/// options, open for 5 to 600 seconds from when the host asked. Members
/// answer the host alone (`QuizAnswer`); the host tallies the answers and
/// signs the result (`QuizResult`). Latest wins; a late joiner's snapshot
/// carries it while it is open or its result is the latest.
///
///     body: quiz(8) ‖ ends(8: wall ms) ‖ seconds(2: 5...600)
///           ‖ len(1: 1...160) ‖ question ‖ n(1: 2...6) ‖ (len(1: 1...48) ‖ option) × n
public struct QuizQuestion: EventContent, Equatable {
    public static let kind = EventKind(17, "quiz")
    public static let questionMax = 160
    public static let optionMax = 48
    public static let options: ClosedRange<Int> = 2...6
    public static let seconds: ClosedRange<UInt16> = 5...600
    public static let maxBodyLength = 8 + 8 + 2 + 1 + questionMax + 1 + options.upperBound * (1 + optionMax)

    /// The host's random id for this quiz; answers and the result name it.
    public var quiz: UInt64
    /// When it closes, on the host's wall clock (ms since the Unix epoch).
    public var endsAt: UInt64
    /// How long it is open.
    public var seconds: UInt16
    public var question: String
    public var options: [String]

    public init(quiz: UInt64, endsAt: UInt64, seconds: UInt16, question: String, options: [String]) {
        self.quiz = quiz
        self.endsAt = endsAt
        self.seconds = seconds
        self.question = question
        self.options = options
    }

    public func validate() throws(EventError) {
        guard Self.seconds.contains(seconds) else { throw .badValue("a quiz lasts \(Self.seconds) seconds, not \(seconds)") }
        try EventText.check(question, field: "quiz question", max: Self.questionMax)
        guard Self.options.contains(options.count) else { throw .badValue("a quiz has \(Self.options) options, not \(options.count)") }
        for option in options { try EventText.check(option, field: "quiz option", max: Self.optionMax) }
    }

    public func encode(into w: inout ByteWriter) {
        w.write(quiz)
        w.write(endsAt)
        w.write(seconds)
        w.writeShortBytes(Array(question.utf8))
        w.write(UInt8(options.count))
        for option in options { w.writeShortBytes(Array(option.utf8)) }
    }

    public static func decode(_ r: inout RoomEventReader) throws(EventError) -> QuizQuestion {
        let quiz = try r.uint64(), endsAt = try r.uint64(), seconds = try r.uint16()
        let question = try text(&r)
        let n = Int(try r.uint8())
        guard Self.options.contains(n) else { throw .badValue("a quiz has \(Self.options) options, not \(n)") }
        var options: [String] = []
        for _ in 0..<n { options.append(try text(&r)) }
        return QuizQuestion(quiz: quiz, endsAt: endsAt, seconds: seconds, question: question, options: options)
    }

    /// len(1) ‖ text.
    private static func text(_ r: inout RoomEventReader) throws(EventError) -> String {
        let length = Int(try r.uint8())
        return try EventText.decode(try r.bytes(length))
    }
}

/// The host's alone; latest wins.
extension QuizQuestion: RoomEventRule {
    static var retention: EventRetention { .latest }

    /// Open, or the one the latest result speaks of.
    static func isNews(_ e: RoomEvent, in state: RoomState) -> Bool {
        guard let q = e.body.as(QuizQuestion.self) else { return false }
        return q.endsAt > state.wallMs || state.latest(QuizResult.self)?.quiz == q.quiz
    }

    func decide(_ e: RoomEvent, in state: RoomState, now: Instant, limited: Bool) -> RoomState.Verdict {
        state.hostsLatest(e)
    }

    static func notice(for change: RoomChange, names: RoomNames) -> RoomNotice? {
        guard let (_, q) = posted(change) else { return nil }
        let choices = q.options.enumerated().map { "\($0.offset + 1)) \($0.element)" }.joined(separator: "  ")
        return RoomNotice(q.line, human: "quiz (\(q.seconds) s): \(q.question)  \(choices)  — /answer N", tag: "quiz")
    }

    /// `quiz`: the question, its options and when it closes.
    var line: JSONLine {
        var l = JSONLine(event: "quiz")
        l.add("id", Quiz.idText(quiz))
        l.add("question", question)
        l.addRaw("options", "[" + options.map(JSONLine.quote).joined(separator: ",") + "]")
        l.add("ends_at", Int(clamping: endsAt))
        l.add("seconds", Int(seconds))
        return l
    }
}
