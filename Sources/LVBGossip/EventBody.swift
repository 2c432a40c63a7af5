import LVBCore
import LVBCrypto

/// The kind byte of a room event, naming the layout of its body.
public enum EventKind: UInt8, Sendable {
    case chat = 1, danmaku = 2, like = 3, join = 4, leave = 5, profile = 6, roomInfo = 7, kick = 8, mute = 9, roomClosed = 10, stage = 11, relay = 12
}

/// What a member shows about themselves; a field left nil is not set.
public struct Profile: Equatable, Sendable {
    /// 1...32 UTF-8 bytes of text.
    public var nickname: String?
    /// 1...200 bytes of printable ASCII: a URL or a reference to an image.
    public var avatar: String?
    /// 0 unspecified, 1 female, 2 male, 3 other.
    public var gender: UInt8?
    /// 1...64 UTF-8 bytes of text.
    public var location: String?

    public init(nickname: String? = nil, avatar: String? = nil, gender: UInt8? = nil, location: String? = nil) {
        self.nickname = nickname
        self.avatar = avatar
        self.gender = gender
        self.location = location
    }
}

/// What the host shows about the room; a field left nil is not set.
public struct RoomInfo: Equatable, Sendable {
    /// 1...100 UTF-8 bytes of text.
    public var title: String?
    /// 1...200 bytes of printable ASCII: a URL or a reference to an image.
    public var cover: String?
    /// 1...64 UTF-8 bytes of text.
    public var location: String?
    /// When the broadcast started, in milliseconds since the Unix epoch.
    public var startedAt: UInt64?

    public init(title: String? = nil, cover: String? = nil, location: String? = nil, startedAt: UInt64? = nil) {
        self.title = title
        self.cover = cover
        self.location = location
        self.startedAt = startedAt
    }
}

/// Where a member sits in the room's media tree: the node it takes the
/// host's stream from, how far from the host, how many children it takes and
/// has, and where children reach it.
public struct RelayPosition: Equatable, Sendable {
    /// The node it receives the stream from; nil for the host (the root).
    public var parent: NodeID?
    /// Hops from the host: 0 for the host, its parent's depth + 1 otherwise.
    public var depth: UInt8
    /// Children it takes (its relay slots), and children it has.
    public var slots: UInt8
    public var children: UInt8
    /// Where a child dials it (its own view: local, advertised, reflexive).
    public var addresses: [PeerAddress]

    public init(parent: NodeID?, depth: UInt8, slots: UInt8, children: UInt8, addresses: [PeerAddress]) {
        self.parent = parent
        self.depth = depth
        self.slots = slots
        self.children = children
        self.addresses = addresses
    }

    /// Slots not taken.
    public var free: Int { Int(slots) - Int(children) }

    /// What the wire allows at most: slots, depth (hops from the host) and addresses.
    public static let maxSlots = RoomEventFormat.relaySlotsMax
    public static let maxDepth = RoomEventFormat.relayDepthMax
    public static let maxAddresses = RoomEventFormat.relayAddressesMax
}

/// The content of a room event; the limits in the comments are enforced by
/// both `RoomEvent.make` and `RoomEvent.parse`.
public enum EventBody: Equatable, Sendable {
    /// A chat line: 1...500 UTF-8 bytes.
    case chat(text: String)
    /// A bullet comment: text 1...100 bytes; color 0xRRGGBB (≤ 0xFFFFFF); lane 0...15 (0 = any).
    case danmaku(text: String, color: UInt32, lane: UInt8)
    /// The author's cumulative like count (grow-only; the room total is the sum over authors).
    case like(total: UInt64)
    /// Presence. `instance` is random per process, so a second process with the
    /// same identity is seen as "signed in elsewhere"; role viewer or host.
    case join(instance: UInt64, role: NodeRole)
    /// 0 left, 1 timeout (reserved: a leaver never sends it), 2 signed in elsewhere, 3 kicked.
    case leave(reason: UInt8)
    case profile(Profile)
    case roomInfo(RoomInfo)
    case kick(target: NodeID)
    case mute(target: NodeID, muted: Bool)
    case roomClosed
    /// Link-mic: the host put `target` on stage (co-host) or took it off;
    /// `reason` says why it ended (`StageReason`), 0 when it started.
    case stage(target: NodeID, onStage: Bool, reason: UInt8)
    /// The author's place in the media tree (latest wins).
    case relay(RelayPosition)

    public var kind: EventKind {
        switch self {
        case .chat: .chat
        case .danmaku: .danmaku
        case .like: .like
        case .join: .join
        case .leave: .leave
        case .profile: .profile
        case .roomInfo: .roomInfo
        case .kick: .kick
        case .mute: .mute
        case .roomClosed: .roomClosed
        case .stage: .stage
        case .relay: .relay
        }
    }
}
