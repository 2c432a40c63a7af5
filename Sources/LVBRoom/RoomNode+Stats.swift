/// What a room node counts, grouped (wireguard-go's `Peer` keeps its
/// counters the same way), and read through the names the node had.
struct RoomStats {
    var rejectedEvents = 0
    var positionBytesIn = 0
    var unknownRoomMessages = 0
    var droppedMedia = 0
    var passesWanted = 0
}

extension RoomNode {
    /// Valid events the room's rules refused (gossip, history, a member's roster).
    public internal(set) var rejectedEvents: Int {
        get { stats.rejectedEvents }
        set { stats.rejectedEvents = newValue }
    }

    /// Bytes of relay positions received in room messages (`TreeView`): what the media tree's placement costs a member.
    public internal(set) var positionBytesIn: Int {
        get { stats.positionBytesIn }
        set { stats.positionBytesIn = newValue }
    }

    /// Room messages of a type this version does not know (from newer nodes).
    public internal(set) var unknownRoomMessages: Int {
        get { stats.unknownRoomMessages }
        set { stats.unknownRoomMessages = newValue }
    }

    /// Media packets from peers that may not send them (not members of the room).
    public internal(set) var droppedMedia: Int {
        get { stats.droppedMedia }
        set { stats.droppedMedia = newValue }
    }

    /// Times this node asked a peer for its pass (`RoomMessage.passWanted`).
    public internal(set) var passesWanted: Int {
        get { stats.passesWanted }
        set { stats.passesWanted = newValue }
    }
}
