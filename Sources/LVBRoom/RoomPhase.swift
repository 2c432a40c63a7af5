import LVBCore
import LVBCrypto

/// Where a node stands with its room. Every input is judged by the phase it
/// arrives in; nothing is inferred from which optional fields happen to be set.
public enum RoomPhase: Equatable, Sendable {
    /// The host: the room is open from the start.
    case hosting
    /// A joiner dialling the host (no session yet).
    case connecting
    /// A joiner with a session, asking to be let in (asked again every
    /// `admissionRetry` until answered: the request or its answer can be lost).
    case requesting(since: Instant)
    /// The host refused us; we stop asking.
    case denied
    /// Admitted: a member of the room.
    case member
    /// Leaving: our leave event went out and we wait (bounded) for every
    /// member we hold a session with to acknowledge it.
    case departing(Departure)
    /// Out: removed, left, or shut down. Nothing more is sent or taken.
    case gone

    /// True while the node takes part in the room (not departing or gone).
    var isActive: Bool {
        switch self {
        case .departing, .gone: false
        default: true
        }
    }
}

/// A node leaving its room: its last events and leave (encoded), the
/// members yet to acknowledge them, and when it last sent them.
public struct Departure: Equatable, Sendable {
    var events: [[UInt8]]
    var leaveSeq: UInt64
    var awaiting: Set<NodeID>
    var lastSent: Instant
}
