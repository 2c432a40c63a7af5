import LVBCore
import LVBCrypto
import LVBGossip

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
public enum RoomMessage: Equatable, Sendable {
    case admission(AdmissionMessage)
    /// The sender is leaving: its last signed events, its leave event last,
    /// sent straight to every member it holds a session with (its sessions
    /// end right after, so nobody could fetch them from it later).
    case leaving(pass: MembershipPass, events: [[UInt8]])
    /// The receiver's leave event with this sequence number was applied.
    case leaveAck(seq: UInt64)
    /// Link-mic signalling between a viewer and the host.
    case linkMic(LinkMicMessage)
    /// The media tree: the sender refused our subscription (perhaps naming
    /// its children to try), or lets us go as a child that cannot keep up.
    case relay(RelaySignal)
    /// The sender dropped our gossip or media: it holds no pass of ours for
    /// this room (the one shown when the session came up was lost).
    case passWanted(room: RoomID)

    /// The type bytes this version knows.
    public enum Kind: UInt8, Sendable {
        case admissionRequest = 1
        case admissionResponse = 2
        case leaving = 3
        case leaveAck = 4
        case linkMicRequest = 5
        case linkMicAnswer = 6
        case linkMicHangup = 7
        case relayFull = 8
        case relayMoveDown = 9
        case passWanted = 10
        case relayRedirect = 11
    }

    /// Most children a redirect names.
    public static let maxRedirects = 4

    public var encoded: [UInt8] {
        switch self {
        case .admission(let m):
            return m.encoded
        case let .leaving(pass, events):
            var w = ByteWriter(capacity: 2 + MembershipPass.encodedLength + events.reduce(0) { $0 + 2 + $1.count })
            w.write(Kind.leaving.rawValue)
            w.write(bytes: pass.encoded)
            w.write(UInt8(events.count))
            for e in events {
                w.write(UInt16(e.count))
                w.write(bytes: e)
            }
            return w.bytes
        case .leaveAck(let seq):
            var w = ByteWriter(capacity: 9)
            w.write(Kind.leaveAck.rawValue)
            w.write(seq)
            return w.bytes
        case .linkMic(let m):
            return m.encoded
        case .relay(.full):
            return [Kind.relayFull.rawValue]
        case .relay(.moveDown):
            return [Kind.relayMoveDown.rawValue]
        case .relay(.redirect(let nodes)):
            var w = ByteWriter(capacity: 2 + 32 * nodes.count)
            w.write(Kind.relayRedirect.rawValue)
            w.write(UInt8(nodes.count))
            for node in nodes { w.write(bytes: node.publicKey) }
            return w.bytes
        case .passWanted(let room):
            return [Kind.passWanted.rawValue] + room.bytes
        }
    }

    /// Parses a room-channel payload. An unknown type throws
    /// `RoomError.unknownMessage` (not misbehaviour); any deviation from a
    /// known type's layout throws another `RoomError` (misbehaviour).
    public static func parse(_ bytes: ArraySlice<UInt8>) throws(RoomError) -> RoomMessage {
        guard let first = bytes.first else { throw .truncated }
        guard let kind = Kind(rawValue: first) else { throw .unknownMessage(first) }
        switch kind {
        case .admissionRequest, .admissionResponse:
            return .admission(try AdmissionMessage.parse(bytes))
        case .leaving:
            var r = ByteReader(bytes.dropFirst())
            let pass = try MembershipPass.read(from: &r)
            guard let count = try? r.readUInt8(), count > 0 else { throw .truncated }
            var events: [[UInt8]] = []
            for _ in 0..<count {
                guard let length = try? r.readUInt16(), let e = try? r.readBytes(Int(length)) else { throw .truncated }
                events.append(Array(e))
            }
            guard r.isAtEnd else { throw .trailingBytes }
            return .leaving(pass: pass, events: events)
        case .leaveAck:
            var r = ByteReader(bytes.dropFirst())
            guard let seq = try? r.readUInt64() else { throw .truncated }
            guard r.isAtEnd else { throw .trailingBytes }
            return .leaveAck(seq: seq)
        case .linkMicRequest, .linkMicAnswer, .linkMicHangup:
            return .linkMic(try LinkMicMessage.parse(bytes))
        case .relayFull, .relayMoveDown:
            guard bytes.count == 1 else { throw .trailingBytes }
            return .relay(kind == .relayFull ? .full : .moveDown)
        case .relayRedirect:
            var r = ByteReader(bytes.dropFirst())
            guard let count = try? r.readUInt8() else { throw .truncated }
            guard (1...UInt8(maxRedirects)).contains(count) else { throw .badRedirectCount(count) }
            var nodes: [NodeID] = []
            for _ in 0..<count {
                guard let key = try? r.readBytes(32) else { throw .truncated }
                guard let node = try? NodeID(publicKey: Array(key)) else { throw .badNodeID }
                nodes.append(node)
            }
            guard r.isAtEnd else { throw .trailingBytes }
            return .relay(.redirect(nodes))
        case .passWanted:
            var r = ByteReader(bytes.dropFirst())
            let room = try RoomID.read(from: &r)
            guard r.isAtEnd else { throw .trailingBytes }
            return .passWanted(room: room)
        }
    }
}

/// What a parent in the media tree tells a would-be or current child.
public enum RelaySignal: Equatable, Sendable {
    /// Every slot is taken: the subscription was refused.
    case full
    /// The same, naming children of the sender to try instead (a full node
    /// sends the joiner down its own branch at once, before any gossiped
    /// position says where a slot is free).
    case redirect([NodeID])
    /// The child does clearly worse than its siblings: it is let go, to
    /// attach deeper as a leaf instead of holding up a branch.
    case moveDown
}
