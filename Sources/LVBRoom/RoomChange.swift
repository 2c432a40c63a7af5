import LVBCore
import LVBCrypto
import LVBGossip

/// What an accepted event (or a presence timeout) changed in a room, for the
/// UIs (console, NDJSON) to show; they listen to changes, never read state.
public enum RoomChange: Equatable, Sendable {
    /// A member is present now, as viewer or host.
    case joined(NodeID, role: NodeRole)
    /// A member is gone: 0 left, 1 timeout, 2 signed in elsewhere, 3 kicked.
    case left(NodeID, reason: UInt8)
    case chat(RoomEvent)
    case danmaku(RoomEvent)
    /// `authorTotal` is the author's new cumulative count, `roomTotal` the room's new sum.
    case like(author: NodeID, authorTotal: UInt64, roomTotal: UInt64)
    case profile(NodeID, Profile)
    case roomInfo(RoomInfo)
    case kicked(NodeID)
    case muted(NodeID, Bool)
    case roomClosed
    /// The same identity joined from another process; a node that sees its own
    /// id with its own `oldInstance` here has been replaced and should exit.
    case signedInElsewhere(NodeID, oldInstance: UInt64, newInstance: UInt64)
}

/// A member present in the room as this node sees it.
public struct Member: Equatable, Sendable {
    public let id: NodeID
    /// The member's latest profile, if it has sent one.
    public let profile: Profile?
    /// 0 viewer, 1 host.
    public let role: NodeRole
    /// When this node first saw the member present (this node's monotonic clock).
    public let joinedAt: Instant
    /// The process instance of the member's latest join.
    public let instance: UInt64

    public init(id: NodeID, profile: Profile?, role: NodeRole, joinedAt: Instant, instance: UInt64) {
        self.id = id
        self.profile = profile
        self.role = role
        self.joinedAt = joinedAt
        self.instance = instance
    }
}
