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
    /// An event was accepted whose kind needs no change of its own to show
    /// (bullet comments, room info, and new kinds): its kind's notice reads it.
    case posted(RoomEvent)
    /// `authorTotal` is the author's new cumulative count, `roomTotal` the room's new sum.
    case like(author: NodeID, authorTotal: UInt64, roomTotal: UInt64)
    case profile(NodeID, Profile)
    case kicked(NodeID)
    case muted(NodeID, Bool)
    case roomClosed
    /// Link-mic: the host put a member on stage as co-host, or took it off
    /// (`reason`: a `StageReason`; nil when it went on stage).
    case stage(NodeID, onStage: Bool, reason: StageReason?)
    /// The same identity joined from another process; a node that sees its own
    /// id with its own `oldInstance` here has been replaced and should exit.
    case signedInElsewhere(NodeID, oldInstance: UInt64, newInstance: UInt64)
    /// The host says the room holds this many now (the host included): its
    /// census, or its count report to this node (`RoomState.roomCount`).
    case counted(UInt32)
    /// A giver's combo rested (`RoomConstants.giftComboWindow` without a
    /// continuation) after it grew past its first event: its final count.
    case giftCombo(author: NodeID, gift: UInt8, combo: UInt32, count: UInt32)
}

extension RoomChange {
    /// Whether it changes who is present (a member came, went or was removed).
    var changesPresence: Bool {
        switch self {
        case .joined, .left, .kicked, .signedInElsewhere, .roomClosed: true
        default: false
        }
    }
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
    /// On stage as a link-mic co-host now.
    public var onStage = false

    public init(id: NodeID, profile: Profile?, role: NodeRole, joinedAt: Instant, instance: UInt64) {
        self.id = id
        self.profile = profile
        self.role = role
        self.joinedAt = joinedAt
        self.instance = instance
    }
}

/// Why a co-host left the stage (the `reason` byte of a stage event).
public enum StageReason: UInt8, Sendable, CustomStringConvertible {
    /// The host hung up.
    case hostHungUp = 1
    /// The guest hung up.
    case guestHungUp = 2
    /// No media from the guest for `RoomConstants.guestSilence`.
    case silent = 3
    /// The guest left the room or its session ended.
    case left = 4

    public var description: String {
        switch self {
        case .hostHungUp: "host_hung_up"
        case .guestHungUp: "guest_hung_up"
        case .silent: "silent"
        case .left: "left"
        }
    }
}
