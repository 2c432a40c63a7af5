import LVBCore
import LVBCrypto
import LVBGossip

/// PK signalling between two hosts (issue 30): sent straight over the
/// session between them on the room channel, and signed by the sending
/// host, so it proves which host asked, answered or ended, whichever
/// session carried it. Integers big-endian; `from` is the sender's room,
/// `to` the receiver's; `sent` the sender's wall clock (ms since the Unix
/// epoch), which the receiver holds against its own to refuse stale or
/// replayed messages.
///
///     16 request  from(16) ‖ to(16) ‖ pk(8) ‖ sent(8) ‖ minutes(1: 1...60)
///                 ‖ len(1) ‖ title(0…100: the asking room's) ‖ signature(64)
///     17 answer   from(16) ‖ to(16) ‖ pk(8) ‖ sent(8) ‖ verdict(1: 1 accept, 2 reject)
///                 ‖ len(1) ‖ reason(0…200) ‖ signature(64)
///     18 end      from(16) ‖ to(16) ‖ pk(8) ‖ sent(8) ‖ reason(1: a PKEndReason) ‖ signature(64)
///     19 alive    from(16) ‖ to(16) ‖ pk(8) ‖ sent(8) ‖ score(8) ‖ signature(64)
///
///     signature = Ed25519 by the sender over "lvbnode pk v1" ‖ 0x00 ‖
///                 every byte of the message before the signature, type included
///
/// `pk` is a random id the asking host picks for one request; the answer,
/// either side's end and the keepalives name it. A keepalive carries the
/// sender's score in the battle; the receiver shows it in its own room with
/// the keepalive itself as proof (`PKBattle`).
public struct PKMessage: RoomMessageContent, Equatable {
    public enum Body: Equatable, Sendable {
        /// A host asks another for a PK of `minutes`; `title` is its room's.
        case request(minutes: UInt8, title: String)
        /// The other host accepts (`reason` empty) or rejects.
        case answer(accepted: Bool, reason: String)
        /// Either host ends the PK (or the asking host withdraws its request).
        case end(PKEndReason)
        /// Once a second during a PK: the sender is still in it, and its score.
        case alive(score: UInt64)
    }

    public let from: RoomID
    public let to: RoomID
    public let pk: UInt64
    /// The sender's wall clock when it signed, in ms since the Unix epoch.
    public let sent: UInt64
    public let body: Body
    public let signature: [UInt8]
    private let signed: [UInt8]

    public static let context = Array("lvbnode pk v1".utf8)
    public static let minutes: ClosedRange<UInt8> = 1...60
    public static let reasonMax = 200
    public static let titleMax = 100

    /// Signs a message as `sender`; a reason is cut to `reasonMax` bytes.
    public init(from: RoomID, to: RoomID, pk: UInt64, sent: UInt64, body: Body, sender: Identity) {
        var body = body
        if case let .answer(accepted, reason) = body { body = .answer(accepted: accepted, reason: LinkMicMessage.cut(reason, max: Self.reasonMax)) }
        if case let .request(minutes, title) = body { body = .request(minutes: minutes, title: LinkMicMessage.cut(title, max: Self.titleMax)) }
        let signed = Self.layout(from: from, to: to, pk: pk, sent: sent, body: body)
        self.init(from: from, to: to, pk: pk, sent: sent, body: body, signed: signed, signature: sender.sign(Self.context + [0] + signed))
    }

    private init(from: RoomID, to: RoomID, pk: UInt64, sent: UInt64, body: Body, signed: [UInt8], signature: [UInt8]) {
        self.from = from
        self.to = to
        self.pk = pk
        self.sent = sent
        self.body = body
        self.signed = signed
        self.signature = signature
    }

    /// True when `sender` signed it.
    public func isSigned(by sender: NodeID) -> Bool {
        Identity.verify(signature: signature, message: Self.context + [0] + signed, by: sender)
    }

    public var encoded: [UInt8] { signed + signature }

    private static func layout(from: RoomID, to: RoomID, pk: UInt64, sent: UInt64, body: Body) -> [UInt8] {
        var w = ByteWriter(capacity: 1 + 16 + 16 + 8 + 8 + 2 + reasonMax)
        switch body {
        case .request: w.write(RoomMessage.Kind.pkRequest.rawValue)
        case .answer: w.write(RoomMessage.Kind.pkAnswer.rawValue)
        case .end: w.write(RoomMessage.Kind.pkEnd.rawValue)
        case .alive: w.write(RoomMessage.Kind.pkAlive.rawValue)
        }
        w.write(bytes: from.bytes)
        w.write(bytes: to.bytes)
        w.write(pk)
        w.write(sent)
        switch body {
        case let .request(minutes, title):
            w.write(minutes)
            w.writeShortBytes(Array(title.utf8))
        case let .answer(accepted, reason):
            w.write(UInt8(accepted ? 1 : 2))
            w.writeShortBytes(Array(reason.utf8))
        case .end(let reason): w.write(reason.rawValue)
        case .alive(let score): w.write(score)
        }
        return w.bytes
    }

    /// Parses types 16–19 (the signature is checked by the receiver, which
    /// knows the sender). Any deviation from the layout throws.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws(RoomError) -> PKMessage {
        guard bytes.count > 64 else { throw .truncated }
        let signed = bytes.dropLast(64)
        var r = ByteReader(signed)
        do {
            let type = try r.readUInt8()
            let from = try RoomID.read(from: &r)
            let to = try RoomID.read(from: &r)
            let pk = try r.readUInt64()
            let sent = try r.readUInt64()
            let body: Body
            switch type {
            case RoomMessage.Kind.pkRequest.rawValue:
                let minutes = try r.readUInt8()
                guard Self.minutes.contains(minutes) else { throw RoomError.unknownResult(minutes) }
                body = .request(minutes: minutes, title: try LinkMicMessage.text(&r, max: titleMax))
            case RoomMessage.Kind.pkAnswer.rawValue:
                let verdict = try r.readUInt8()
                guard verdict == 1 || verdict == 2 else { throw RoomError.unknownResult(verdict) }
                body = .answer(accepted: verdict == 1, reason: try LinkMicMessage.text(&r, max: reasonMax))
            case RoomMessage.Kind.pkEnd.rawValue:
                let raw = try r.readUInt8()
                guard let reason = PKEndReason(rawValue: raw) else { throw RoomError.unknownResult(raw) }
                body = .end(reason)
            case RoomMessage.Kind.pkAlive.rawValue:
                body = .alive(score: try r.readUInt64())
            default:
                throw RoomError.unknownMessage(type)
            }
            guard r.isAtEnd else { throw RoomError.trailingBytes }
            return PKMessage(from: from, to: to, pk: pk, sent: sent, body: body, signed: Array(signed), signature: Array(bytes.suffix(64)))
        } catch let e as RoomError {
            throw e
        } catch {
            throw .truncated
        }
    }
}

/// Why a PK ended (the `reason` byte of an end message).
public enum PKEndReason: UInt8, Sendable, CustomStringConvertible {
    /// The sender ended it (`/pk end`), or withdrew its request.
    case ended = 1
    /// The PK's time ran out.
    case timeUp = 2
    /// The sender's room closed, or its host is leaving.
    case roomClosed = 3

    public var description: String {
        switch self {
        case .ended: "ended"
        case .timeUp: "time_up"
        case .roomClosed: "room_closed"
        }
    }
}

extension PKMessage {
    static let types: [RoomMessage.Kind] = [.pkRequest, .pkAnswer, .pkEnd, .pkAlive]

    func received(from peer: NodeID, by node: RoomNode) { node.feature(PK.self)?.receive(self, from: peer) }
}

extension RoomMessage.Kind {
    public static let pkRequest = Self(rawValue: 16)
    public static let pkAnswer = Self(rawValue: 17)
    public static let pkEnd = Self(rawValue: 18)
    public static let pkAlive = Self(rawValue: 19)
}
