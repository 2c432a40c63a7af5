/// Specification values of the signed room event format (diagrams in
/// RoomEvent.swift and EventBodyCodec.swift). Changing any changes the wire format.
enum RoomEventFormat {
    static let version: UInt8 = 1
    static let roomIDLength = 16
    static let authorLength = 32
    static let signatureLength = 64
    /// version ‖ room ‖ author ‖ seq ‖ timestamp ‖ kind ‖ bodyLength
    static let headerLength = 1 + roomIDLength + authorLength + 8 + 8 + 1 + 2
    /// Prefixed (with one 0x00 after it) to the signed bytes, so an event
    /// signature can never be mistaken for a signature of anything else.
    static let signingContext = Array("lvbnode room event v1".utf8)

    // Body limits, in UTF-8 bytes.
    static let chatMax = 500
    static let danmakuMax = 100
    static let danmakuMaxColor: UInt32 = 0xFF_FFFF
    static let danmakuLanes: UInt8 = 16
    static let nicknameMax = 32
    static let avatarMax = 200
    static let locationMax = 64
    static let titleMax = 100
    static let coverMax = 200
    /// Gender: 0 unspecified, 1 female, 2 male, 3 other.
    static let genderMax: UInt8 = 3
    /// Join role: 0 viewer, 1 host.
    static let roleMax: UInt8 = 1
    /// Leave reason: 0 left, 1 timeout (reserved), 2 signed in elsewhere, 3 kicked.
    static let leaveReasonMax: UInt8 = 3
    /// Stage end reasons 1...4 (`StageReason` in LVBRoom).
    static let stageReasonMax: UInt8 = 4

    /// Relay positions: slots at most, depth at most, addresses at most.
    static let relaySlotsMax: UInt8 = 16
    static let relayDepthMax: UInt8 = 64
    static let relayAddressesMax = 4

    // Profile and room-info TLV types.
    static let profileNickname: UInt8 = 1
    static let profileAvatar: UInt8 = 2
    static let profileGender: UInt8 = 3
    static let profileLocation: UInt8 = 4
    static let roomTitle: UInt8 = 1
    static let roomCover: UInt8 = 2
    static let roomLocation: UInt8 = 3
    static let roomStartedAt: UInt8 = 4

    /// The largest body of each kind; the largest of these sizes the event.
    static let maxBodyLength = max(
        chatMax,
        4 + 1 + danmakuMax,
        (2 + nicknameMax) + (2 + avatarMax) + (2 + 1) + (2 + locationMax),
        (2 + titleMax) + (2 + coverMax) + (2 + locationMax) + (2 + 8),
        8 + 1, 32 + 1,
        1 + 32 + 3 + 1 + relayAddressesMax * (1 + 16 + 2))
}
