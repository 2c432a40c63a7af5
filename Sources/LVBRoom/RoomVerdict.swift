import LVBGossip

extension RoomState {
    /// The outcome of offering an event to the room state.
    public enum Verdict: Equatable, Sendable {
        /// New and valid: applied, with what it changed (possibly nothing visible).
        case accepted([RoomChange])
        /// Already applied, or adds nothing (a like total not above the author's current one).
        case duplicate
        /// Not valid in this room now; the event is not applied or forwarded.
        case rejected(RoomRejection)
    }

    /// Why a validly signed event was refused by the room's rules.
    public enum RoomRejection: Error, Equatable, Sendable, CustomStringConvertible {
        /// The event belongs to another room.
        case wrongRoom
        /// Only the host may send this kind (kick, mute, room info, room closed,
        /// or a join with the host role).
        case notHost(EventKind)
        /// The author was kicked: all its later events are refused.
        case authorKicked
        /// The author is muted: its chat and bullet comments are refused.
        case authorMuted
        /// The author exceeded its token bucket for this kind.
        case rateLimited
        /// The room is closed: every later event is refused.
        case roomClosed
        /// Older than the author's latest event of a latest-wins kind (profile,
        /// room info, join/leave, or the host's mute of the same target).
        case stale
        /// A relay position that cannot be true: a viewer at the root, the
        /// host below it, or a node its own parent.
        case badTreePosition
        /// A kind the wire table reads but no room rule knows.
        case unknownKind(EventKind)

        /// Whether forwarding this event is misbehaviour that costs the
        /// forwarder standing. Kicked, muted, closed and stale events can be
        /// honest races of gossip order, so they cost nothing.
        public var isMisbehaviour: Bool {
            switch self {
            case .wrongRoom, .notHost, .rateLimited, .badTreePosition, .unknownKind: true
            case .authorKicked, .authorMuted, .roomClosed, .stale: false
            }
        }

        public var description: String {
            switch self {
            case .wrongRoom: "event is for another room"
            case let .notHost(kind): "only the host may send a \(kind) event"
            case .authorKicked: "author was kicked from the room"
            case .authorMuted: "author is muted"
            case .rateLimited: "author is sending too fast"
            case .roomClosed: "room is closed"
            case .stale: "older than the author's latest event of this kind"
            case .badTreePosition: "relay position is impossible (only the host is the root; nobody is its own parent)"
            case let .unknownKind(kind): "no room rule for event kind \(kind.rawValue)"
            }
        }
    }
}
