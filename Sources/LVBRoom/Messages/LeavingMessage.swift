import LVBCore
import LVBCrypto
import LVBGossip

/// The sender is leaving: its pass and its last signed events, its leave
/// event last, sent straight to every member it holds a session with (its
/// sessions end right after, so nobody could fetch them from it later).
///
///     3 leaving    pass(120) ‖ count(1: 1...255) ‖ (length(2) ‖ event) × count
public struct LeavingMessage: RoomMessageContent, Equatable {
    public var pass: MembershipPass
    public var events: [[UInt8]]

    static let types: [RoomMessage.Kind] = [.leaving]

    public init(pass: MembershipPass, events: [[UInt8]]) {
        self.pass = pass
        self.events = events
    }

    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: 1 + MembershipPass.encodedLength + EventList.size(events))
        w.write(RoomMessage.Kind.leaving.rawValue)
        w.write(bytes: pass.encoded)
        EventList.write(events, into: &w)
        return w.bytes
    }

    static func parse(_ bytes: ArraySlice<UInt8>) throws(RoomError) -> LeavingMessage {
        var r = ByteReader(bytes.dropFirst())
        let pass = try MembershipPass.read(from: &r)
        guard let count = try? r.readUInt8(), count > 0 else { throw .truncated }
        let events = try EventList.read(count, from: &r)
        guard r.isAtEnd else { throw .trailingBytes }
        return LeavingMessage(pass: pass, events: events)
    }

    func received(from peer: NodeID, by node: RoomNode) { node.memberLeaving(events, pass: pass, from: peer) }
}

/// The receiver's leave event with this sequence number was applied.
///
///     4 leave ack    seq(8)
public struct LeaveAck: RoomMessageContent, Equatable {
    public var seq: UInt64

    static let types: [RoomMessage.Kind] = [.leaveAck]

    public init(seq: UInt64) { self.seq = seq }

    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: 9)
        w.write(RoomMessage.Kind.leaveAck.rawValue)
        w.write(seq)
        return w.bytes
    }

    static func parse(_ bytes: ArraySlice<UInt8>) throws(RoomError) -> LeaveAck {
        var r = ByteReader(bytes.dropFirst())
        guard let seq = try? r.readUInt64() else { throw .truncated }
        guard r.isAtEnd else { throw .trailingBytes }
        return LeaveAck(seq: seq)
    }

    func received(from peer: NodeID, by node: RoomNode) { node.leaveAcknowledged(seq, by: peer) }
}

extension RoomMessage.Kind {
    public static let leaving = Self(rawValue: 3)
    public static let leaveAck = Self(rawValue: 4)
}
