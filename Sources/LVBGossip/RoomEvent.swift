import LVBCore
import LVBCrypto

/// Identifies an event: its author and the author's sequence number.
public struct EventID: Hashable, Sendable {
    public let author: NodeID
    public let seq: UInt64

    public init(author: NodeID, seq: UInt64) {
        self.author = author
        self.seq = seq
    }
}

// A signed room event; integers big-endian (man/lvbnode-protocol.7 §ROOM EVENTS;
// this diagram and each kind's file in LVBRoom/Events are the reference).
//
//      0       1                17                49        57          65     66           68
//     +-------+----------------+-----------------+---------+-----------+------+------------+------...------+-----------+
//     | ver=1 | room (16)      | author (32)     | seq (8) | time (8)  | kind | bodyLen(2) | body          | sig (64)  |
//     +-------+----------------+-----------------+---------+-----------+------+------------+------...------+-----------+
//     |<------------------------------- signed (after the context) --------------------------------------->|
//
//     time = milliseconds since the Unix epoch on the author's clock.
//     sig  = Ed25519 by `author` over  "lvbnode room event v1" ‖ 0x00 ‖ ver … end of body.
//
// The room id is inside the signed bytes, so an event cannot be replayed into
// another room. The encoding is canonical (each kind's body too): a
// parsed event keeps its bytes, and `make` on the same fields yields them again.

private typealias F = RoomEventFormat

/// A chat line, like, presence change or moderation action, signed by its
/// author so relays can forward it but cannot forge or alter it.
public struct RoomEvent: Equatable, Sendable {
    public let room: RoomID
    public let author: NodeID
    /// The author's own counter; with `author` it identifies the event.
    public let seq: UInt64
    /// Milliseconds since the Unix epoch, on the author's clock.
    public let timestamp: UInt64
    public let body: EventBody
    /// 64-byte Ed25519 signature (see the diagram above).
    public let signature: [UInt8]
    private let wire: [UInt8]

    public var id: EventID { EventID(author: author, seq: seq) }

    /// The event's bytes on the wire, exactly as created or received.
    public var encoded: [UInt8] { wire }

    /// Header, the largest body any kind allows (a 500-byte chat), signature: 632.
    public static let maxEncodedSize = F.headerLength + F.maxBodyLength + F.signatureLength

    private init(room: RoomID, author: NodeID, seq: UInt64, timestamp: UInt64,
                 body: EventBody, signature: [UInt8], wire: [UInt8]) {
        self.room = room
        self.author = author
        self.seq = seq
        self.timestamp = timestamp
        self.body = body
        self.signature = signature
        self.wire = wire
    }

    /// Creates and signs an event, after checking `body` against every limit.
    public static func make(room: RoomID, author: Identity, seq: UInt64, timestamp: UInt64,
                            body: EventBody) throws(EventError) -> RoomEvent {
        try body.validate()
        var encodedBody = ByteWriter(capacity: F.maxBodyLength)
        body.encode(into: &encodedBody)

        var w = ByteWriter(capacity: maxEncodedSize)
        w.write(F.version)
        w.write(bytes: room.bytes)
        w.write(bytes: author.nodeID.publicKey)
        w.write(seq)
        w.write(timestamp)
        w.write(body.kind.rawValue)
        w.write(UInt16(encodedBody.count))  // invariant: a validated body is ≤ maxBodyLength (500), EventKindTable checks
        w.write(bytes: encodedBody.bytes)
        let signature = author.sign(signedMessage(w.bytes[...]))
        w.write(bytes: signature)
        return RoomEvent(room: room, author: author.nodeID, seq: seq, timestamp: timestamp,
                         body: body, signature: signature, wire: w.bytes)
    }

    /// Parses an event from the network: checks the framing, every length and
    /// limit of a body of a kind in `kinds`, then the signature. Rejects
    /// anything else with an error; never traps.
    public static func parse(_ bytes: ArraySlice<UInt8>, kinds: EventKindTable) throws(EventError) -> RoomEvent {
        var r = RoomEventReader(bytes)
        let version = try r.uint8()
        guard version == F.version else { throw .badVersion(version) }
        let room = RoomID(checked: Array(try r.bytes(F.roomIDLength)))
        let authorKey = try r.bytes(F.authorLength)
        let seq = try r.uint64()
        let timestamp = try r.uint64()
        let kind = try r.uint8()
        guard kinds.kind(kind) != nil else { throw .unknownKind(kind) }
        let bodyBytes = try r.bytes(Int(try r.uint16()))
        let signature = Array(try r.bytes(F.signatureLength))
        try r.expectEnd()

        guard let author = try? NodeID(publicKey: Array(authorKey)) else { throw .badAuthor }
        let body = try kinds.decode(kind: kind, bodyBytes)
        // Checked last: it is the expensive step, and the cheap ones reject most garbage.
        // After `expectEnd` the signature is exactly the last 64 bytes; it signs the rest.
        let signed = bytes.dropLast(F.signatureLength)
        guard Identity.verify(signature: signature, message: signedMessage(signed), by: author) else {
            throw .badSignature
        }
        return RoomEvent(room: room, author: author, seq: seq, timestamp: timestamp,
                         body: body, signature: signature, wire: Array(bytes))
    }

    /// The context string, a zero byte, then the signed part of the event.
    private static func signedMessage(_ signed: ArraySlice<UInt8>) -> [UInt8] {
        var message = [UInt8]()
        message.reserveCapacity(F.signingContext.count + 1 + signed.count)
        message.append(contentsOf: F.signingContext)
        message.append(0)
        message.append(contentsOf: signed)
        return message
    }
}
