import LVBCore
import LVBCrypto
import LVBGossip

/// A link-mic signalling message (man/lvbnode-protocol.7, LINK-MIC): sent
/// straight over the session between a viewer and the host, on the room
/// channel, and signed by its sender, so it proves who asked and who answered
/// even outside that session. Integers big-endian.
///
///     5 request   room(16) ‖ request(8) ‖ len(1) ‖ message(0…200) ‖ signature(64)
///     6 answer    room(16) ‖ request(8) ‖ guest(32) ‖ verdict(1: 1 accept, 2 reject)
///                 ‖ len(1) ‖ reason(0…200) ‖ signature(64)
///     7 hangup    room(16) ‖ request(8) ‖ reason(1: a StageReason) ‖ signature(64)
///
///     signature = Ed25519 by the sender over "lvbnode linkmic v1" ‖ 0x00 ‖
///                 every byte of the message before the signature, type included
///
/// `request` is a random id the viewer picks for one request; the answer and
/// either side's hangup name it, so an answer cannot be replayed onto a later
/// request.
public struct LinkMicMessage: RoomMessageContent, Equatable {
    public enum Body: Equatable, Sendable {
        /// A viewer asks the host to go on stage.
        case request(message: String)
        /// The host accepts (`reason` empty) or rejects `guest`'s request.
        case answer(guest: NodeID, accepted: Bool, reason: String)
        /// Either side ends the stage session (or a viewer withdraws its request).
        case hangup(StageReason)
    }

    public let room: RoomID
    public let request: UInt64
    public let body: Body
    public let signature: [UInt8]
    /// The bytes the signature covers (after the context).
    private let signed: [UInt8]

    /// Signs a message as `sender`; text fields are cut to `RoomConstants.linkMicTextMax` bytes.
    public init(room: RoomID, request: UInt64, body: Body, sender: Identity) {
        var body = body
        switch body {
        case .request(let m): body = .request(message: Self.cut(m))
        case let .answer(guest, accepted, reason): body = .answer(guest: guest, accepted: accepted, reason: Self.cut(reason))
        case .hangup: break
        }
        let signed = Self.layout(room: room, request: request, body: body)
        self.init(room: room, request: request, body: body, signed: signed,
                  signature: sender.sign(RoomConstants.linkMicContext + [0] + signed))
    }

    private init(room: RoomID, request: UInt64, body: Body, signed: [UInt8], signature: [UInt8]) {
        self.room = room
        self.request = request
        self.body = body
        self.signed = signed
        self.signature = signature
    }

    /// True when `sender` signed it.
    public func isSigned(by sender: NodeID) -> Bool {
        Identity.verify(signature: signature, message: RoomConstants.linkMicContext + [0] + signed, by: sender)
    }

    public var encoded: [UInt8] { signed + signature }

    var kind: RoomMessage.Kind {
        switch body {
        case .request: .linkMicRequest
        case .answer: .linkMicAnswer
        case .hangup: .linkMicHangup
        }
    }

    private static func layout(room: RoomID, request: UInt64, body: Body) -> [UInt8] {
        var w = ByteWriter(capacity: 1 + 16 + 8 + 34 + RoomConstants.linkMicTextMax)
        switch body {
        case .request: w.write(RoomMessage.Kind.linkMicRequest.rawValue)
        case .answer: w.write(RoomMessage.Kind.linkMicAnswer.rawValue)
        case .hangup: w.write(RoomMessage.Kind.linkMicHangup.rawValue)
        }
        w.write(bytes: room.bytes)
        w.write(request)
        switch body {
        case .request(let message):
            w.writeShortBytes(Array(message.utf8))
        case let .answer(guest, accepted, reason):
            w.write(bytes: guest.publicKey)
            w.write(UInt8(accepted ? 1 : 2))
            w.writeShortBytes(Array(reason.utf8))
        case .hangup(let reason):
            w.write(reason.rawValue)
        }
        return w.bytes
    }

    /// Parses types 5–7 (the signature is checked by the receiver, which
    /// knows the sender). Any deviation from the layout throws.
    static func parse(_ bytes: ArraySlice<UInt8>) throws(RoomError) -> LinkMicMessage {
        guard bytes.count > 64 else { throw .truncated }
        let signed = bytes.dropLast(64)
        var r = ByteReader(signed)
        do {
            let type = try r.readUInt8()
            let room = try RoomID.read(from: &r)
            let request = try r.readUInt64()
            let body: Body
            switch type {
            case RoomMessage.Kind.linkMicRequest.rawValue:
                body = .request(message: try text(&r))
            case RoomMessage.Kind.linkMicAnswer.rawValue:
                guard let guest = try? NodeID(publicKey: Array(try r.readBytes(32))) else { throw RoomError.badNodeID }
                let verdict = try r.readUInt8()
                guard verdict == 1 || verdict == 2 else { throw RoomError.unknownResult(verdict) }
                body = .answer(guest: guest, accepted: verdict == 1, reason: try text(&r))
            case RoomMessage.Kind.linkMicHangup.rawValue:
                let raw = try r.readUInt8()
                guard let reason = StageReason(rawValue: raw) else { throw RoomError.unknownResult(raw) }
                body = .hangup(reason)
            default:
                throw RoomError.unknownMessage(type)
            }
            guard r.isAtEnd else { throw RoomError.trailingBytes }
            return LinkMicMessage(room: room, request: request, body: body, signed: Array(signed), signature: Array(bytes.suffix(64)))
        } catch let e as RoomError {
            throw e
        } catch {
            throw .truncated
        }
    }

    static func text(_ r: inout ByteReader, max: Int = RoomConstants.linkMicTextMax) throws -> String {
        let length = Int(try r.readUInt8())
        guard length <= max else { throw RoomError.badText }
        // The room events' text rules (valid UTF-8, no control characters).
        guard let s = try? EventText.decode(try r.readBytes(length)),
              !s.unicodeScalars.contains(where: { EventText.isControl($0.value) }) else {
            throw RoomError.badText
        }
        return s
    }

    /// At most `linkMicTextMax` bytes of UTF-8, cut on a character boundary, without control characters.
    static func cut(_ text: String, max: Int = RoomConstants.linkMicTextMax) -> String {
        var out = ""
        var bytes = 0
        for ch in text where !ch.unicodeScalars.contains(where: { EventText.isControl($0.value) }) {
            let n = ch.utf8.count
            guard bytes + n <= max else { break }
            out.append(ch)
            bytes += n
        }
        return out
    }
}

extension LinkMicMessage {
    static let types: [RoomMessage.Kind] = [.linkMicRequest, .linkMicAnswer, .linkMicHangup]

    func received(from peer: NodeID, by node: RoomNode) { node.feature(LinkMic.self)?.receive(self, from: peer) }
}

extension RoomMessage.Kind {
    public static let linkMicRequest = Self(rawValue: 5)
    public static let linkMicAnswer = Self(rawValue: 6)
    public static let linkMicHangup = Self(rawValue: 7)
}
