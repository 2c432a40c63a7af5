/// Why a room admission message or an invite could not be parsed. Network
/// cases are counted and dropped; the invite-text cases are shown to the user.
public enum RoomError: Error, Equatable, CustomStringConvertible {
    /// The message ended before a complete field.
    case truncated
    /// Bytes were left over after a complete message.
    case trailingBytes
    /// The first byte names no admission message.
    case unknownMessage(UInt8)
    /// A request's proof type is unknown.
    case unknownProof(UInt8)
    /// A response's result type is unknown.
    case unknownResult(UInt8)
    /// A denial carries a reason this node does not know.
    case unknownDenial(UInt8)
    /// 32 bytes that are not a usable node key.
    case badNodeID
    /// Text given as an invite does not start with "lvbi".
    case notAnInvite
    /// Invite text with characters missing, extra or changed.
    case damagedInvite
    /// A link-mic message's text is too long, not UTF-8, or holds control characters.
    case badText
    /// A relay redirect names no node, or more than `RoomMessage.maxRedirects`.
    case badRedirectCount(UInt8)
    /// A count report with hops above 64, a flag not 0 or 1, or a count without the upstream flag.
    case badCountReport
    /// A roster message carrying no events, or more than `RosterMessage.maxEvents`.
    case badRosterCount(UInt8)
    /// A positions message carrying no events, or more than `PositionsMessage.maxEvents`.
    case badPositionsCount(UInt8)

    public var description: String {
        switch self {
        case .truncated: "admission message is truncated"
        case .trailingBytes: "admission message has unexpected trailing bytes"
        case let .unknownMessage(t): "admission message type \(t) is unknown"
        case let .unknownProof(t): "admission proof type \(t) is unknown"
        case let .unknownResult(t): "admission result type \(t) is unknown"
        case let .unknownDenial(r): "admission denial reason \(r) is unknown"
        case .badNodeID: "a node id in the admission message is not a valid node key"
        case .notAnInvite: "this is not an invite (invites start with 'lvbi'); ask the host for one"
        case .badText: "link-mic text is too long, not UTF-8, or holds control characters"
        case let .badRosterCount(n): "roster message carries \(n) events (1 to \(RosterMessage.maxEvents))"
        case let .badPositionsCount(n): "positions message carries \(n) events (1 to \(PositionsMessage.maxEvents))"
        case .badCountReport: "count report has hops above 64, a bad upstream flag, or a count sent to a non-upstream by a member"
        case let .badRedirectCount(n): "relay redirect names \(n) nodes (1 to \(RoomMessage.maxRedirects))"
        case .damagedInvite: "the invite is damaged (a character is missing or changed); copy it again from the host"
        }
    }
}
