import LVBCore
import LVBCrypto
import LVBGossip

/// The online quiz (the studio seed's studio type I), a room feature: the
/// host asks (`/quiz SECONDS QUESTION | OPTION | OPTION …`, a signed
/// `QuizQuestion` to the whole room), each member answers the host alone
/// (`/answer N`, a signed `QuizAnswer`; one answer a member counts), and
/// when the time is up the host signs the tally (`QuizResult`), again with
/// the right option and its winners on `/reveal N`.
final class Quiz: RoomFeature {
    /// How often a member sends its answer again until the host acknowledges it.
    static let resend: Duration = .seconds(1)
    /// How long after the close a member still tries to deliver its answer
    /// (the host's clock decides; the two clocks may differ a little).
    static let lateSlack: Duration = .seconds(5)
    /// Answer messages the host takes from one member a second, and at once.
    static let answerRate = 4
    static let answerBurst = 8

    /// The host's quiz: its question, when it closes on this node's clock,
    /// and the answers it counted (each member's first, its bytes, in order).
    struct Round {
        var question: QuizQuestion
        var closesAt: Instant
        var answers: [NodeID: (option: UInt8, encoded: [UInt8])] = [:]
        var order: [NodeID] = []
        var closed = false

        var counts: [UInt32] {
            var counts = [UInt32](repeating: 0, count: question.options.count)
            for (option, _) in answers.values { counts[Int(option) - 1] += 1 }
            return counts
        }
    }

    /// A member's own answer: until the host acknowledges it, sent again.
    struct Mine {
        var quiz: UInt64
        var message: QuizAnswer
        var lastSent: Instant
        var giveUpAt: Instant
        var acked = false
    }

    private unowned let node: RoomNode
    private var round: Round?
    private var mine: Mine?
    private var buckets = RateLimiter<NodeID>(count: answerRate, burst: answerBurst)

    /// Host: answers refused (forged, for another member or room, too fast,
    /// a second one, too late) and repeats of a counted one.
    private(set) var refused = 0
    private(set) var repeated = 0

    init(node: RoomNode) { self.node = node }

    static let kinds: [any RoomEventRule.Type] = [QuizQuestion.self, QuizResult.self]
    static let messages: [any RoomMessageContent.Type] = [QuizAnswer.self, QuizAck.self]

    /// A quiz's id as printed: 16 hex digits.
    static func idText(_ quiz: UInt64) -> String {
        let hex = String(quiz, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    // MARK: Host

    /// Asks the room `question` with `options`, open `seconds`.
    func ask(_ question: String, options: [String], seconds: UInt16) throws(RoomActionError) {
        guard node.isHost else { throw .hostOnly }
        guard node.isAdmitted else { throw .notInRoom }
        if let round, !round.closed {
            throw .refused("a quiz is open for \(max(0, Int((round.closesAt - node.clock.now()).seconds.rounded(.up)))) s more; /reveal N ends it now")
        }
        let q = QuizQuestion(quiz: node.random.uint64(), endsAt: node.wallMs() + UInt64(seconds) * 1000, seconds: seconds,
                             question: question, options: options)
        do { try q.validate() } catch { throw .invalid("\(error)") }
        _ = try node.publish(EventBody(q)).get()
        round = Round(question: q, closesAt: node.clock.now() + .seconds(Int64(seconds)))
    }

    /// Names the right option (1-based): the quiz closes now if it was open,
    /// and the host signs the tally with the winners.
    func reveal(_ option: Int) throws(RoomActionError) {
        guard node.isHost else { throw .hostOnly }
        guard var round else { throw .refused("no quiz to reveal: ask one with /quiz SECONDS QUESTION | OPTION | OPTION") }
        guard (1...round.question.options.count).contains(option) else {
            throw .invalid("the quiz has options 1 to \(round.question.options.count)")
        }
        round.closed = true
        self.round = round
        let right = round.order.filter { round.answers[$0]?.option == UInt8(option) }
        try publishResult(round, answer: UInt8(option), winners: right)
    }

    private func publishResult(_ round: Round, answer: UInt8, winners: [NodeID]) throws(RoomActionError) {
        let result = QuizResult(quiz: round.question.quiz, counts: round.counts, answer: answer, winners: UInt32(winners.count),
                                named: Array(winners.prefix(QuizResult.maxNamed)))
        _ = try node.publish(EventBody(result)).get()
    }

    /// An answer from `peer` (host).
    func received(_ answer: QuizAnswer, from peer: NodeID) {
        guard node.isHost, node.isAdmitted else { return }
        let now = node.clock.now()
        guard buckets.allow(peer, now: now) else { return refuse() }
        // Only a member's own answer, for this room (the session says who sent it).
        guard answer.member == peer, answer.room == node.room else {
            node.penalize(peer)
            return refuse()
        }
        guard var round, round.question.quiz == answer.quiz, !round.closed else {
            refuse()
            return ack(answer, option: answer.option, .closed, to: peer)
        }
        if let counted = round.answers[peer] {
            // The same answer again (its ack was lost): acknowledged, counted once.
            if counted.encoded == answer.encoded { repeated += 1 } else { refuse() }
            return ack(answer, option: counted.option, counted.encoded == answer.encoded ? .counted : .answeredBefore, to: peer)
        }
        guard Int(answer.option) <= round.question.options.count, answer.isSigned else {
            node.penalize(peer)
            return refuse()
        }
        round.answers[peer] = (answer.option, answer.encoded)
        round.order.append(peer)
        self.round = round
        ack(answer, option: answer.option, .counted, to: peer)
    }

    private func refuse() { refused += 1 }

    private func ack(_ answer: QuizAnswer, option: UInt8, _ verdict: QuizAck.Verdict, to peer: NodeID) {
        node.send(RoomMessage(content: QuizAck(room: node.room, quiz: answer.quiz, option: option, verdict: verdict)), to: peer)
    }

    // MARK: Member

    /// Answers the open quiz with option `option` (1-based).
    func answer(_ option: Int) throws(RoomActionError) {
        guard let state = node.state else { throw .notInRoom }
        guard !node.isHost else { throw .refused("the host asks the quiz; members answer it") }
        guard let q = state.latest(QuizQuestion.self), q.endsAt > node.wallMs(), state.latest(QuizResult.self)?.quiz != q.quiz else {
            throw .refused("no quiz is open")
        }
        guard (1...q.options.count).contains(option) else { throw .invalid("the quiz has options 1 to \(q.options.count)") }
        if let mine, mine.quiz == q.quiz {
            throw .refused("you already answered this quiz (\(mine.message.option)); one answer counts")
        }
        let now = node.clock.now()
        let message = QuizAnswer(room: node.room, quiz: q.quiz, option: UInt8(option), sent: node.wallMs(), member: node.identity)
        let open = Duration.milliseconds(Int64(q.endsAt - node.wallMs()))
        mine = Mine(quiz: q.quiz, message: message, lastSent: now, giveUpAt: now + open + Self.lateSlack)
        node.send(RoomMessage(content: message), to: node.host)
        show(q.quiz, option: option, status: "sent", human: "your answer \(option) went to the host")
    }

    /// The host's word on our answer (member).
    func received(_ ack: QuizAck, from peer: NodeID) {
        guard peer == node.host, !node.isHost, ack.room == node.room, var mine, mine.quiz == ack.quiz, !mine.acked else { return }
        mine.acked = true
        self.mine = mine
        switch ack.verdict {
        case .counted:
            show(ack.quiz, option: Int(ack.option), status: "counted", human: "the host counted your answer \(ack.option)")
        case .answeredBefore:
            show(ack.quiz, option: Int(ack.option), status: "refused",
                 human: "the host refused your answer: an earlier one of yours (\(ack.option)) counts")
        case .closed:
            show(ack.quiz, option: Int(mine.message.option), status: "late", human: "your answer came after the quiz closed")
        }
    }

    private func show(_ quiz: UInt64, option: Int, status: String, human: String) {
        node.show(RoomNotice(Self.answerLine(quiz, option: option, status: status), human: human, tag: "quiz"))
    }

    /// `quiz_answer`: this member's answer and where it stands (sent, counted, refused, late).
    private static func answerLine(_ quiz: UInt64, option: Int, status: String) -> JSONLine {
        var l = JSONLine(event: "quiz_answer")
        l.add("id", idText(quiz))
        l.add("answer", option)
        l.add("status", status)
        return l
    }

    // MARK: The feature

    func tick(now: Instant) {
        if var round, !round.closed, now >= round.closesAt {
            round.closed = true
            self.round = round
            try? publishResult(round, answer: 0, winners: [])
        }
        if var mine, !mine.acked {
            if now >= mine.giveUpAt {
                self.mine?.acked = true
                show(mine.quiz, option: Int(mine.message.option), status: "unanswered", human: "the host never acknowledged your answer")
            } else if now - mine.lastSent >= Self.resend {
                mine.lastSent = now
                self.mine = mine
                node.send(RoomMessage(content: mine.message), to: node.host)
            }
        }
    }

    func changed(_ change: RoomChange) {
        // The result is out: nothing more to deliver.
        guard case .posted(let e) = change, let result = e.body.as(QuizResult.self), mine?.quiz == result.quiz else { return }
        mine?.acked = true
    }

    func current(_ names: RoomNames) -> [JSONLine] {
        guard let state = node.state else { return [] }
        var lines: [JSONLine] = []
        for kind in Self.kinds {
            if let e = state.latest[kind.kind], kind.isNews(e, in: state), let notice = kind.notice(for: .posted(e), names: names) {
                lines.append(notice.line)
            }
        }
        if let mine, lines.count > 0 {
            lines.append(Self.answerLine(mine.quiz, option: Int(mine.message.option), status: mine.acked ? "counted" : "sent"))
        }
        return lines
    }

    static var commands: [RoomCommand] {
        [RoomCommand(console: "/quiz SECONDS QUESTION | OPTION | OPTION [| …]",
                     "ask the room a quiz of 2 to 6 options, open 5 to 600 s (host)") { text in
             guard let (seconds, question, options) = parse(text) else { return nil }
             return { try $0.feature(Quiz.self)?.ask(question, options: options, seconds: seconds) }
         },
         RoomCommand(console: "/answer N", "answer the open quiz with option N (one answer counts)") { text in
             guard let n = Int(text) else { return nil }
             return { try $0.feature(Quiz.self)?.answer(n) }
         },
         RoomCommand(console: "/reveal N", "close the quiz and name option N the right one (host)") { text in
             guard let n = Int(text) else { return nil }
             return { try $0.feature(Quiz.self)?.reveal(n) }
         },
         RoomCommand(page: "quiz") { fields throws(CommandFieldError) in
             let seconds = try fields.count("seconds", in: Int(QuizQuestion.seconds.lowerBound)...Int(QuizQuestion.seconds.upperBound), fallback: 30)
             guard let (_, question, options) = parse("\(seconds) " + (try fields.text("text"))) else { throw .invalid("text") }
             return { try $0.feature(Quiz.self)?.ask(question, options: options, seconds: UInt16(seconds)) }
         },
         RoomCommand(page: "answer") { fields throws(CommandFieldError) in
             let n = try option(fields)
             return { try $0.feature(Quiz.self)?.answer(n) }
         },
         RoomCommand(page: "reveal") { fields throws(CommandFieldError) in
             let n = try option(fields)
             return { try $0.feature(Quiz.self)?.reveal(n) }
         }]
    }

    /// A page's `answer` field: an option number.
    private static func option(_ fields: any CommandFields) throws(CommandFieldError) -> Int {
        guard fields.has("answer") else { throw .missing("answer") }
        return try fields.count("answer", in: 1...QuizQuestion.options.upperBound, fallback: 0)
    }

    /// "SECONDS QUESTION | OPTION | OPTION …": the parts, checked for count and time (lengths: the event's own checks).
    static func parse(_ text: String) -> (UInt16, String, [String])? {
        let words = text.split(separator: " ", maxSplits: 1).map(String.init)
        guard words.count == 2, let seconds = UInt16(words[0]), QuizQuestion.seconds.contains(seconds) else { return nil }
        let parts = words[1].split(separator: "|", omittingEmptySubsequences: false).map { part in
            String(part.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
        }
        guard parts.count >= 1 + QuizQuestion.options.lowerBound, parts.count <= 1 + QuizQuestion.options.upperBound,
              parts.allSatisfy({ !$0.isEmpty }) else { return nil }
        return (seconds, parts[0], Array(parts.dropFirst()))
    }
}
