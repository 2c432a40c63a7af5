/// A node's part in a room, as it tells its peers (hello) and the room (join
/// events): one byte on the wire.
public enum NodeRole: UInt8, Sendable, CaseIterable {
    case viewer = 0
    case host = 1
    /// Lists rooms and introduces peers; never a member of a room.
    case rendezvous = 2

    /// As the node's output names it ("viewer", "host", "rendezvous").
    public var name: String {
        switch self {
        case .viewer: "viewer"
        case .host: "host"
        case .rendezvous: "rendezvous"
        }
    }
}
