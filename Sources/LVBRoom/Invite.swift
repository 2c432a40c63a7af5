import LVBCore
import LVBCrypto
import LVBGossip

/// The host's invitation of one node into an invite-only (or password) room,
/// valid until `expiresAt`; useless to anyone but the invitee, since the
/// admitting node checks it against the session's authenticated peer.
///
///     room (16) ‖ invitee (32) ‖ expiresAt (8, ms since the Unix epoch) ‖ signature (64)
///     signature = Ed25519 by the host over "lvbnode invite v1" ‖ 0x00 ‖ room ‖ invitee ‖ expiresAt
///
/// Text form, for the console and the command line:
/// "lvbi" ‖ base32(invite (120) ‖ BLAKE2b-256(invite)[0..<4]) — the check
/// catches copy mistakes before the signature is ever looked at.
public struct Invite: Equatable, Sendable {
    public static let encodedLength = HostGrant.encodedLength
    public static let textPrefix = "lvbi"
    static let checkLength = 4

    private let grant: HostGrant
    public var room: RoomID { grant.room }
    public var invitee: NodeID { grant.node }
    /// Milliseconds since the Unix epoch after which the invite is refused.
    public var expiresAt: UInt64 { grant.time }
    public var signature: [UInt8] { grant.signature }

    /// An invite signed by `host`.
    public init(host: Identity, room: RoomID, invitee: NodeID, expiresAt: UInt64) {
        grant = HostGrant(signedBy: host, context: RoomConstants.inviteContext, room: room, node: invitee, time: expiresAt)
    }

    /// An invite from stored fields, signature unchecked (see `isValid`); a
    /// signature that is not 64 bytes never verifies.
    public init(room: RoomID, invitee: NodeID, expiresAt: UInt64, signature: [UInt8]) {
        grant = HostGrant(room: room, node: invitee, time: expiresAt, signature: signature)
    }

    private init(grant: HostGrant) { self.grant = grant }

    /// Whether the invite is `host`'s signature for `invitee` in `room`, and
    /// not expired at `now` (ms since the Unix epoch).
    public func isValid(room: RoomID, host: NodeID, invitee: NodeID, now: UInt64) -> Bool {
        grant.room == room && grant.node == invitee && now < grant.time
            && grant.verify(context: RoomConstants.inviteContext, host: host)
    }

    public var encoded: [UInt8] {
        var w = ByteWriter(capacity: Self.encodedLength)
        grant.write(into: &w)
        return w.bytes
    }

    /// Parses the 120-byte binary form; the signature is not checked here.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws(RoomError) -> Invite {
        var r = ByteReader(bytes)
        let invite = try read(from: &r)
        guard r.isAtEnd else { throw .trailingBytes }
        return invite
    }

    static func read(from r: inout ByteReader) throws(RoomError) -> Invite {
        Invite(grant: try HostGrant.read(from: &r))
    }

    /// "lvbi" and 199 base32 characters.
    public var text: String {
        let bytes = encoded
        return Self.textPrefix + Base32.encode(bytes + Blake2b.hash(bytes, length: 32).prefix(Self.checkLength))
    }

    /// Parses the text form; surrounding spaces and newlines are ignored.
    /// Errors say what is wrong in words a user can act on.
    public init(text raw: String) throws(RoomError) {
        let text = raw.trimmingWhitespace()
        guard text.lowercased().hasPrefix(Self.textPrefix) else { throw .notAnInvite }
        guard let bytes = try? Base32.decode(String(text.dropFirst(Self.textPrefix.count))),
              bytes.count == Self.encodedLength + Self.checkLength
        else { throw .damagedInvite }
        let body = Array(bytes.prefix(Self.encodedLength))
        guard constantTimeEqual(Blake2b.hash(body, length: 32).prefix(Self.checkLength), bytes.suffix(Self.checkLength)) else {
            throw .damagedInvite
        }
        do {
            self = try Self.parse(body[...])
        } catch {
            throw .damagedInvite
        }
    }
}

extension String {
    /// The string without leading and trailing spaces and newlines (pasted text).
    func trimmingWhitespace() -> String {
        var s = Substring(self)
        while let f = s.first, f.isWhitespace { s = s.dropFirst() }
        while let l = s.last, l.isWhitespace { s = s.dropLast() }
        return String(s)
    }
}
