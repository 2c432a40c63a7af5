import LVBCore
import LVBCrypto
import LVBGossip

/// The host's statement that a node was admitted to a private room. Members
/// check it (signed by the room's host, for the session's authenticated peer)
/// before exchanging anything of the room with a newcomer.
///
///     room (16) ‖ member (32) ‖ issuedAt (8, ms since the Unix epoch) ‖ signature (64)
///     signature = Ed25519 by the host over "lvbnode pass v1" ‖ 0x00 ‖ room ‖ member ‖ issuedAt
public struct MembershipPass: Equatable, Sendable {
    public static let encodedLength = HostGrant.encodedLength

    private let grant: HostGrant
    public var room: RoomID { grant.room }
    public var member: NodeID { grant.node }
    /// Milliseconds since the Unix epoch, on the host's clock.
    public var issuedAt: UInt64 { grant.time }
    public var signature: [UInt8] { grant.signature }

    /// A pass signed by `host`.
    public init(host: Identity, room: RoomID, member: NodeID, issuedAt: UInt64) {
        grant = HostGrant(signedBy: host, context: RoomConstants.passContext, room: room, node: member, time: issuedAt)
    }

    /// A pass from stored fields, signature unchecked (see `isValid`); a
    /// signature that is not 64 bytes never verifies.
    public init(room: RoomID, member: NodeID, issuedAt: UInt64, signature: [UInt8]) {
        grant = HostGrant(room: room, node: member, time: issuedAt, signature: signature)
    }

    private init(grant: HostGrant) { self.grant = grant }

    /// Whether this is `host`'s pass for `member` in `room`.
    public func isValid(room: RoomID, host: NodeID, member: NodeID) -> Bool {
        grant.room == room && grant.node == member && grant.verify(context: RoomConstants.passContext, host: host)
    }

    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: Self.encodedLength)
        grant.write(into: &w)
        return w.bytes
    }

    /// Parses the 120-byte binary form; the signature is not checked here.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws(RoomError) -> MembershipPass {
        var r = ByteReader(bytes)
        let pass = try read(from: &r)
        guard r.isAtEnd else { throw .trailingBytes }
        return pass
    }

    static func read(from r: inout ByteReader) throws(RoomError) -> MembershipPass {
        MembershipPass(grant: try HostGrant.read(from: &r))
    }
}
