import LVBCore

/// A room's identity: 16 random bytes chosen by the host, carried in the join ticket.
public struct RoomID: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    /// `bytes` must be exactly 16 long (`RoomEventFormat.roomIDLength`).
    public init(bytes: [UInt8]) throws(EventError) {
        guard bytes.count == RoomEventFormat.roomIDLength else { throw .badRoomID }
        self.bytes = bytes
    }

    /// A fresh room id; hosts pass the node's CSPRNG, tests a seeded generator.
    public static func random(_ r: RandomSource) -> RoomID {
        RoomID(checked: r.bytes(RoomEventFormat.roomIDLength))
    }

    /// Built from bytes already known to be 16 long.
    init(checked bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// A room id as printed (`text`: 26 lower-case base32 characters), or nil.
    public init?(text: String) {
        guard text.utf8.count == 26, !text.utf8.contains(where: { $0 >= 65 && $0 <= 90 }),
              let bytes = try? Base32.decode(text), bytes.count == RoomEventFormat.roomIDLength else { return nil }
        self.init(checked: bytes)
    }

    /// Base32 (lower case, unpadded): 26 characters.
    public var text: String { Base32.encode(bytes) }
    public var description: String { text }
}
