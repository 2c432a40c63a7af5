import LVBCore
import LVBCrypto
import LVBGossip

/// A member's answer to a quiz, sent to the host alone over their session
/// (a room of thousands does not carry every answer to everyone), signed
/// by the member so the host's tally rests on answers it can show; and the
/// host's acknowledgement. Integers big-endian.
///
///     21 answer  room(16) ‖ quiz(8) ‖ member(32) ‖ option(1: 1...6) ‖ sent(8) ‖ signature(64)
///     22 ack     room(16) ‖ quiz(8) ‖ option(1) ‖ verdict(1: 1 counted,
///                2 another answer of this member counts (`option` is it), 3 closed)
///
///     signature = Ed25519 by `member` over "lvbnode quiz v1" ‖ 0x00 ‖
///                 every byte of the answer before the signature, type included
///
/// A member sends its answer again every `Quiz.resend` until the host
/// acknowledges it; the host acknowledges a repeat of the answer it counted
/// and counts it once.
struct QuizAnswer: RoomMessageContent, Equatable {
    static let context = Array("lvbnode quiz v1".utf8)
    static let types: [RoomMessage.Kind] = [.quizAnswer]
    static let length = 1 + 16 + 8 + 32 + 1 + 8 + 64

    let room: RoomID
    let quiz: UInt64
    let member: NodeID
    let option: UInt8
    /// The member's wall clock when it answered (ms since the Unix epoch).
    let sent: UInt64
    let signature: [UInt8]

    init(room: RoomID, quiz: UInt64, option: UInt8, sent: UInt64, member: Identity) {
        self.room = room
        self.quiz = quiz
        self.member = member.nodeID
        self.option = option
        self.sent = sent
        signature = member.sign(Self.context + [0] + Self.layout(room, quiz, member.nodeID, option, sent))
    }

    private init(room: RoomID, quiz: UInt64, member: NodeID, option: UInt8, sent: UInt64, signature: [UInt8]) {
        self.room = room
        self.quiz = quiz
        self.member = member
        self.option = option
        self.sent = sent
        self.signature = signature
    }

    private static func layout(_ room: RoomID, _ quiz: UInt64, _ member: NodeID, _ option: UInt8, _ sent: UInt64) -> [UInt8] {
        var w = ByteWriter(capacity: length)
        w.write(RoomMessage.Kind.quizAnswer.rawValue)
        w.write(bytes: room.bytes)
        w.write(quiz)
        w.write(bytes: member.publicKey)
        w.write(option)
        w.write(sent)
        return w.bytes
    }

    /// True when the member it names signed it.
    var isSigned: Bool {
        Identity.verify(signature: signature, message: Self.context + [0] + Self.layout(room, quiz, member, option, sent), by: member)
    }

    var encoded: [UInt8] { Self.layout(room, quiz, member, option, sent) + signature }

    static func parse(_ bytes: ArraySlice<UInt8>) throws(RoomError) -> QuizAnswer {
        guard bytes.count == length else { throw bytes.count < length ? .truncated : .trailingBytes }
        var r = ByteReader(bytes.dropFirst())
        do {
            let room = try RoomID.read(from: &r)
            let quiz = try r.readUInt64()
            let member = try NodeID(publicKey: Array(try r.readBytes(32)))
            let option = try r.readUInt8()
            guard (1...QuizQuestion.options.upperBound).contains(Int(option)) else { throw RoomError.unknownResult(option) }
            let sent = try r.readUInt64()
            return QuizAnswer(room: room, quiz: quiz, member: member, option: option, sent: sent, signature: Array(try r.readBytes(64)))
        } catch let e as RoomError {
            throw e
        } catch {
            throw .truncated
        }
    }

    func received(from peer: NodeID, by node: RoomNode) { node.feature(Quiz.self)?.received(self, from: peer) }
}

/// The host's word on an answer (type 22).
struct QuizAck: RoomMessageContent, Equatable {
    enum Verdict: UInt8, Sendable {
        /// Counted (now or before: a repeat of the same answer).
        case counted = 1
        /// Another answer of this member counts; `option` is it.
        case answeredBefore = 2
        /// The quiz is closed, or the host knows no such quiz.
        case closed = 3
    }

    static let types: [RoomMessage.Kind] = [.quizAck]
    static let length = 1 + 16 + 8 + 1 + 1

    let room: RoomID
    let quiz: UInt64
    let option: UInt8
    let verdict: Verdict

    var encoded: [UInt8] {
        var w = ByteWriter(capacity: Self.length)
        w.write(RoomMessage.Kind.quizAck.rawValue)
        w.write(bytes: room.bytes)
        w.write(quiz)
        w.write(option)
        w.write(verdict.rawValue)
        return w.bytes
    }

    static func parse(_ bytes: ArraySlice<UInt8>) throws(RoomError) -> QuizAck {
        guard bytes.count == length else { throw bytes.count < length ? .truncated : .trailingBytes }
        var r = ByteReader(bytes.dropFirst())
        do {
            let room = try RoomID.read(from: &r)
            let quiz = try r.readUInt64()
            let option = try r.readUInt8()
            let raw = try r.readUInt8()
            guard let verdict = Verdict(rawValue: raw) else { throw RoomError.unknownResult(raw) }
            return QuizAck(room: room, quiz: quiz, option: option, verdict: verdict)
        } catch let e as RoomError {
            throw e
        } catch {
            throw .truncated
        }
    }

    func received(from peer: NodeID, by node: RoomNode) { node.feature(Quiz.self)?.received(self, from: peer) }
}

extension RoomMessage.Kind {
    static let quizAnswer = Self(rawValue: 21)
    static let quizAck = Self(rawValue: 22)
}
