import LVBCore
import LVBCrypto
import LVBGossip

/// The sender dropped our gossip or media: it holds no pass of ours for this
/// room (the one shown when the session came up was lost): show it again.
///
///    10 pass wanted    room(16)
public struct PassWanted: RoomMessageContent, Equatable {
    public var room: RoomID

    static let types: [RoomMessage.Kind] = [.passWanted]

    public init(room: RoomID) { self.room = room }

    public var encoded: [UInt8] { [RoomMessage.Kind.passWanted.rawValue] + room.bytes }

    static func parse(_ bytes: ArraySlice<UInt8>) throws(RoomError) -> PassWanted {
        var r = ByteReader(bytes.dropFirst())
        let room = try RoomID.read(from: &r)
        guard r.isAtEnd else { throw .trailingBytes }
        return PassWanted(room: room)
    }

    func received(from peer: NodeID, by node: RoomNode) { node.answerPassWanted(room, from: peer) }
}

extension RoomMessage.Kind {
    public static let passWanted = Self(rawValue: 10)
}
