import LVBCore
import LVBCrypto
import LVBGossip
@testable import LVBRoom
import LVBTestSupport
import LVBTransport
import Testing

/// The online quiz (a room feature) on the virtual network with 5 % loss:
/// every member gets the question and the same tally, answers reach the
/// host once each (a second, a replay, a forgery or someone else's refused),
/// and late joiners get the open quiz and the result.
@Suite struct QuizScenarioTests {
    private static func run(_ line: String, on node: RoomNode) throws {
        let word = line.hasPrefix("/") ? String(line.prefix { $0 != " " }) : ""
        let command = try #require(RoomEvents.command(console: word), "no command \(word)")
        let rest = line.dropFirst(word.count).drop { $0 == " " }
        try command.consoleAction(String(rest))(node)
    }

    private static func questions(_ sim: RoomSim) -> [QuizQuestion] {
        sim.changes.compactMap { if case .posted(let e) = $0 { e.body.as(QuizQuestion.self) } else { nil } }
    }

    private static func results(_ sim: RoomSim) -> [QuizResult] {
        sim.changes.compactMap { if case .posted(let e) = $0 { e.body.as(QuizResult.self) } else { nil } }
    }

    private static func answers(_ sim: RoomSim) -> [String] {
        sim.outputs.compactMap { output in
            guard case .feature(let n as RoomNotice) = output, n.line.text.contains("\"event\":\"quiz_answer\"") else { return nil }
            return n.line.text
        }
    }

    @Test(arguments: [49, 50, 51, 52, 53] as [UInt64])
    func everyMemberGetsTheQuestionAndTheSameTallyAndOneAnswerEachCounts(seed: UInt64) throws {
        let net = VirtualNetwork(seed: seed, defaultImpairment: Impairment(loss: 0.05, delay: .milliseconds(10), jitter: .milliseconds(5)))
        let nodes = net.makeNodes(12, seed: seed)
        let random = SeededRandom(seed: seed ^ 0xABC)
        let roomID = RoomID.random(random)
        let policy = AdmissionPolicy(room: roomID, host: nodes[0].core.identity, mode: .open, clock: net.clock)
        let host = RoomSim(nodes[0], RoomNode(hosting: policy, core: nodes[0].core, clock: net.clock, random: random,
                                              info: RoomInfo(title: "quiz night")), network: net)
        func join(_ n: SimulatedNode) -> RoomSim {
            let r = RoomNode(joining: roomID, host: nodes[0].id, proof: .none, core: n.core, clock: net.clock, random: random)
            n.core.connect(to: nodes[0].address, expecting: nodes[0].id)
            return RoomSim(n, r, network: net)
        }
        let viewers = nodes[1...8].map(join)
        #expect(net.run(until: { viewers.allSatisfy(\.room.isAdmitted) }, timeout: .seconds(30)))
        net.run(for: .seconds(3))

        // A viewer cannot ask; the host asks.
        #expect(throws: RoomActionError.hostOnly) { try Self.run("/quiz 30 Which? | A | B", on: viewers[0].room) }
        #expect(throws: RoomActionError.self) { try Self.run("/answer 1", on: viewers[0].room) }  // none open
        try Self.run("/quiz 30 Which river is longest? | Nile | Amazon | Yangtze", on: host.room)
        #expect(throws: RoomActionError.self) { try Self.run("/quiz 30 Another? | A | B", on: host.room) }  // one at a time
        #expect(net.run(until: { viewers.allSatisfy { Self.questions($0).count == 1 } }, timeout: .seconds(10)))
        let q = try #require(Self.questions(host).first)
        #expect(q.options == ["Nile", "Amazon", "Yangtze"])
        for v in viewers { #expect(Self.questions(v) == [q]) }

        // Answers: four say 2, two say 1, one says 3, one stays silent.
        let chosen = [2, 2, 2, 2, 1, 1, 3]
        for (v, n) in zip(viewers, chosen) { try Self.run("/answer \(n)", on: v.room) }
        #expect(throws: RoomActionError.self) { try Self.run("/answer 1", on: viewers[0].room) }  // a second answer
        #expect(throws: RoomActionError.self) { try Self.run("/answer 4", on: viewers[7].room) }  // no such option
        net.run(for: .seconds(4))
        for v in viewers.prefix(7) { #expect(Self.answers(v).last?.contains("\"status\":\"counted\"") == true, "\(Self.answers(v))") }

        // What a liar tries, straight to the host: another member's answer
        // (replayed from elsewhere), its own answer signed by another key,
        // and its own counted answer again (counted once).
        let quiz = try #require(host.room.feature(Quiz.self))
        let refusedBefore = quiz.refused
        let liar = viewers[7]
        let stolen = QuizAnswer(room: roomID, quiz: q.quiz, option: 3, sent: 1, member: viewers[6].sim.core.identity)
        var forged = QuizAnswer(room: roomID, quiz: q.quiz, option: 1, sent: 1, member: liar.sim.core.identity).encoded
        forged[forged.count - 1] ^= 0x01
        try liar.sim.core.send(stolen.encoded, channel: .room, to: host.id)
        try liar.sim.core.send(forged, channel: .room, to: host.id)
        let again = QuizAnswer(room: roomID, quiz: q.quiz, option: 2, sent: 1, member: viewers[0].sim.core.identity)
        try viewers[0].sim.core.send(again.encoded, channel: .room, to: host.id)  // a different answer from a counted member
        net.run(for: .seconds(2))
        #expect(quiz.refused >= refusedBefore + 2, "refused \(quiz.refused - refusedBefore)")

        // A late joiner, while the quiz is open, gets the question.
        let late = join(nodes[9])
        #expect(net.run(until: { Self.questions(late).count == 1 }, timeout: .seconds(15)))

        // The quiz closes: the host signs the tally; everyone gets the same.
        net.run(for: .seconds(30))
        let tally = try #require(Self.results(host).last)
        #expect(tally.counts == [2, 4, 1])
        #expect(tally.answer == 0 && tally.named.isEmpty)
        for v in viewers + [late] { #expect(Self.results(v).last == tally, "\(Self.results(v))") }
        #expect(throws: RoomActionError.self) { try Self.run("/answer 1", on: viewers[7].room) }  // closed

        // The host names the right answer: the winners, in the order their answers came.
        try Self.run("/reveal 2", on: host.room)
        net.run(for: .seconds(4))
        let revealed = try #require(Self.results(host).last)
        #expect(revealed.answer == 2 && revealed.winners == 4)
        #expect(Set(revealed.named) == Set(viewers.prefix(4).map(\.id)))
        for v in viewers + [late] { #expect(Self.results(v).last == revealed) }

        // A joiner after the reveal gets the question and the result.
        let later = join(nodes[10])
        #expect(net.run(until: { Self.results(later).last == revealed && Self.questions(later) == [q] }, timeout: .seconds(15)))
    }

    @Test func theQuizMessagesParseWhatTheyWriteAndRefuseDeviations() throws {
        let random = SeededRandom(seed: 7)
        let member = Identity.generate()
        let answer = QuizAnswer(room: RoomID.random(random), quiz: 42, option: 3, sent: 1_000, member: member)
        let parsed = try #require(try RoomMessage.parse(answer.encoded[...]).as(QuizAnswer.self))
        #expect(parsed == answer && parsed.isSigned)
        var bad = answer.encoded
        bad[1] ^= 0xFF
        #expect(try RoomMessage.parse(bad[...]).as(QuizAnswer.self)?.isSigned == false)
        #expect(throws: RoomError.self) { try RoomMessage.parse((answer.encoded + [0])[...]) }
        #expect(throws: RoomError.self) { try RoomMessage.parse(answer.encoded.dropLast()) }
        var zero = answer.encoded
        zero[1 + 16 + 8 + 32] = 0  // option 0
        #expect(throws: RoomError.self) { try RoomMessage.parse(zero[...]) }
        let ack = QuizAck(room: answer.room, quiz: 42, option: 3, verdict: .answeredBefore)
        #expect(try RoomMessage.parse(ack.encoded[...]).as(QuizAck.self) == ack)
        var verdict = ack.encoded
        verdict[verdict.count - 1] = 9
        #expect(throws: RoomError.self) { try RoomMessage.parse(verdict[...]) }
    }

    @Test func theQuizEventsCheckTheirLimits() throws {
        #expect(Quiz.parse("30 Q? | A | B")?.2 == ["A", "B"])
        #expect(Quiz.parse("4 Q? | A | B") == nil)  // under 5 s
        #expect(Quiz.parse("601 Q? | A | B") == nil)
        #expect(Quiz.parse("30 Q? | A") == nil)  // one option
        #expect(Quiz.parse("30 Q? | A | B | C | D | E | F | G") == nil)  // seven
        #expect(Quiz.parse("30 Q? | A |  | B") == nil)  // an empty one
        let long = QuizQuestion(quiz: 1, endsAt: 1, seconds: 30, question: String(repeating: "x", count: 161), options: ["a", "b"])
        #expect(throws: EventError.self) { try long.validate() }
        let full = QuizQuestion(quiz: 1, endsAt: 1, seconds: 600, question: String(repeating: "q", count: QuizQuestion.questionMax),
                                options: Array(repeating: String(repeating: "o", count: QuizQuestion.optionMax), count: 6))
        try full.validate()
        var w = ByteWriter(capacity: 600)
        full.encode(into: &w)
        #expect(w.bytes.count == QuizQuestion.maxBodyLength)
        let lying = QuizResult(quiz: 1, counts: [1, 2], answer: 2, winners: 3, named: [])
        #expect(throws: EventError.self) { try lying.validate() }  // winners are the right option's count
        let unnamed = QuizResult(quiz: 1, counts: [1, 2], answer: 0, winners: 1, named: [])
        #expect(throws: EventError.self) { try unnamed.validate() }
    }
}
