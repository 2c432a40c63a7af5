import LVBCore
import LVBCrypto
import LVBGossip

/// A member's own join and profile, for the host alone: the room hears of a
/// joiner through the host's census (and the host passes on the events of
/// the joiners it lists), not from every joiner itself. Repeated every
/// `admissionRetry` until the host acknowledges it.
///
///    13 roster       count(1: 1...4) ‖ (length(2) ‖ event) × count:
///                    the sender's own signed events
///    14 roster ack   seq(8): the host holds the sender's events up to this
public enum RosterMessage: RoomMessageContent, Equatable {
    case roster([[UInt8]])
    case ack(seq: UInt64)

    static let types: [RoomMessage.Kind] = [.roster, .rosterAck]
    /// Most events one roster message carries.
    static let maxEvents = 4

    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: 64)
        switch self {
        case .roster(let events):
            w.write(RoomMessage.Kind.roster.rawValue)
            EventList.write(events, into: &w)
        case .ack(let seq):
            w.write(RoomMessage.Kind.rosterAck.rawValue)
            w.write(seq)
        }
        return w.bytes
    }

    static func parse(_ bytes: ArraySlice<UInt8>) throws(RoomError) -> RosterMessage {
        var r = ByteReader(bytes.dropFirst())
        let message: RosterMessage
        if bytes.first == RoomMessage.Kind.rosterAck.rawValue {
            guard let seq = try? r.readUInt64() else { throw .truncated }
            message = .ack(seq: seq)
        } else {
            guard let count = try? r.readUInt8() else { throw .truncated }
            guard count >= 1, Int(count) <= maxEvents else { throw .badRosterCount(count) }
            message = .roster(try EventList.read(count, from: &r))
        }
        guard r.isAtEnd else { throw .trailingBytes }
        return message
    }

    func received(from peer: NodeID, by node: RoomNode) {
        switch self {
        case .roster(let events): node.feature(Roster.self)?.received(events, from: peer)
        case .ack(let seq): node.feature(Roster.self)?.acknowledged(seq, by: peer)
        }
    }
}

extension RoomMessage.Kind {
    public static let roster = Self(rawValue: 13)
    public static let rosterAck = Self(rawValue: 14)
}
