import LVBCore
import LVBCrypto
import LVBGossip

/// One family of room messages (one type byte or a few): its wire body, its
/// checks, and what a room node does on receiving one. A family is one file
/// in `LVBRoom/Messages` and one line in `RoomMessage.families`.
protocol RoomMessageContent: Sendable {
    /// The type bytes the family uses.
    static var types: [RoomMessage.Kind] { get }
    /// Parses one message, type byte first; any deviation from the layout throws.
    static func parse(_ bytes: ArraySlice<UInt8>) throws(RoomError) -> Self
    /// The message, type byte first.
    var encoded: [UInt8] { get }
    /// What `node` does with one from `peer` (the family checks the sender's rights).
    func received(from peer: NodeID, by node: RoomNode)
}

/// A message on the room channel (man/lvbnode-protocol.7, ROOM MESSAGES):
/// one type byte, then that type's body. The room layer owns this
/// vocabulary; the transport only carries the channel. A type this node does
/// not know is counted and dropped without penalty, so a newer node can talk
/// to an older one.
///
///     1 admission request    room(16) ‖ proof …        (AdmissionMessage)
///     2 admission response   room(16) ‖ result …       (AdmissionMessage)
///     3 leaving              pass(120) ‖ count(1) ‖ (length(2) ‖ event)…:
///                            the sender's pass and last events, its leave last
///     4 leave ack            seq(8): those events applied
///     5–7 link-mic           request, answer, hangup, signed (LinkMicMessage)
///     8 relay full           (empty): the sender takes no more children, so
///                            the receiver's subscription to it was refused
///     9 relay move down      (empty): the receiver, the sender's child, does
///                            clearly worse than its siblings: it is let go and
///                            should attach deeper, as a leaf
///    10 pass wanted          room(16): the sender holds no pass of the
///                            receiver's (it was lost): show it again
///    11 relay redirect       count(1: 1...4) ‖ node(32) × count: as relay
///                            full, and these children of the sender may have
///                            a slot (those with one first): try them
///    12 count report         hops(1) ‖ upstream(1) ‖ subtree(4): the
///                            sender's part in counting the room (CountReport)
///    13 roster               count(1: 1...4) ‖ (length(2) ‖ event) × count:
///                            the sender's own join and profile, for the host
///    14 roster ack           seq(8): the host holds them (RosterMessage)
///    15 positions            count(1: 1...8) ‖ (length(2) ‖ event) × count:
///                            signed relay positions, passed along the media
///                            tree (PositionsMessage)
///    16–19 PK                request, answer, end, alive between two hosts,
///                            signed (PKMessage)
public struct RoomMessage: Equatable, Sendable {
    let content: any RoomMessageContent

    /// A type byte. Each family names its own (`RoomMessage.Kind.leaveAck`…).
    public struct Kind: RawRepresentable, Hashable, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
    }

    /// The families this version knows, registered in one table: a new
    /// message is a new file in `Messages/` and one line here.
    static let families: [any RoomMessageContent.Type] = [
        AdmissionMessage.self,
        LeavingMessage.self,
        LeaveAck.self,
        RelaySignal.self,
        PassWanted.self,
        PositionsMessage.self,
    ] + RoomFeatures.messages

    private static let byType: [UInt8: any RoomMessageContent.Type] = {
        var table: [UInt8: any RoomMessageContent.Type] = [:]
        for family in families {
            for kind in family.types {
                precondition(table[kind.rawValue] == nil, "room message type \(kind.rawValue) registered twice")
                table[kind.rawValue] = family
            }
        }
        return table
    }()

    /// Whether this version knows the type byte.
    public static func isKnown(_ type: UInt8) -> Bool { byType[type] != nil }

    /// Parses a room-channel payload. An unknown type throws
    /// `RoomError.unknownMessage` (not misbehaviour); any deviation from a
    /// known type's layout throws another `RoomError` (misbehaviour).
    public static func parse(_ bytes: ArraySlice<UInt8>) throws(RoomError) -> RoomMessage {
        guard let first = bytes.first else { throw .truncated }
        guard let family = byType[first] else { throw .unknownMessage(first) }
        return RoomMessage(content: try family.parse(bytes))
    }

    public var encoded: [UInt8] { content.encoded }

    /// The message as its family's type, if it is one.
    public func `as`<T>(_ type: T.Type) -> T? { content as? T }

    func received(from peer: NodeID, by node: RoomNode) { content.received(from: peer, by: node) }

    public static func == (a: RoomMessage, b: RoomMessage) -> Bool { a.encoded == b.encoded }

    public static func admission(_ m: AdmissionMessage) -> RoomMessage { RoomMessage(content: m) }
    public static func leaving(pass: MembershipPass, events: [[UInt8]]) -> RoomMessage {
        RoomMessage(content: LeavingMessage(pass: pass, events: events))
    }
    public static func leaveAck(seq: UInt64) -> RoomMessage { RoomMessage(content: LeaveAck(seq: seq)) }
    public static func linkMic(_ m: LinkMicMessage) -> RoomMessage { RoomMessage(content: m) }
    public static func pk(_ m: PKMessage) -> RoomMessage { RoomMessage(content: m) }
    public static func relay(_ signal: RelaySignal) -> RoomMessage { RoomMessage(content: signal) }
    public static func passWanted(room: RoomID) -> RoomMessage { RoomMessage(content: PassWanted(room: room)) }
    static func roster(_ m: RosterMessage) -> RoomMessage { RoomMessage(content: m) }
    static func countReport(_ report: PresenceCount.Report) -> RoomMessage { RoomMessage(content: CountReport(report: report)) }
}

/// Signed events carried in a room message, as the leaving, roster and
/// positions messages lay them out: count(1) ‖ (length(2) ‖ event) × count.
enum EventList {
    /// Bytes `events` take, the count byte included.
    static func size(_ events: [[UInt8]]) -> Int { 1 + events.reduce(0) { $0 + 2 + $1.count } }

    static func write(_ events: [[UInt8]], into w: inout ByteWriter) {
        w.write(UInt8(events.count))
        for e in events {
            w.write(UInt16(e.count))
            w.write(bytes: e)
        }
    }

    /// `count` events (the count byte already read).
    static func read(_ count: UInt8, from r: inout ByteReader) throws(RoomError) -> [[UInt8]] {
        var events: [[UInt8]] = []
        for _ in 0..<count {
            guard let length = try? r.readUInt16(), let e = try? r.readBytes(Int(length)) else { throw .truncated }
            events.append(Array(e))
        }
        return events
    }
}
