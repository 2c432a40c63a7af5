/// What this node's NAT does to its outgoing UDP flows (issue 48), as far
/// as it knows: learnt from a rendezvous's two ports (`NATWatch`), said in
/// its relay position so the tree places it where its parent link can be
/// direct.
public enum NATKind: UInt8, Sendable, CaseIterable {
    /// Not measured (no rendezvous, or no answer yet).
    case unknown = 0
    /// No NAT: the rendezvous sees the node at its own address and port.
    case open = 1
    /// One outside port for every destination (endpoint-independent
    /// mapping): a punch meets an introduced peer.
    case easy = 2
    /// A new outside port for every destination (endpoint-dependent
    /// mapping, Linux's `random,fully-random`): no punch meets another NAT.
    case hard = 3

    public var name: String {
        switch self {
        case .unknown: "unknown"
        case .open: "none"
        case .easy: "endpoint-independent"
        case .hard: "hard"
        }
    }

    /// Whether a node behind `self` and one behind `other` can meet
    /// directly over IPv4: by an ordinary punch unless a side's NAT maps
    /// each destination apart; a hard side meets an endpoint-independent
    /// one by birthday punching (`Birthday`, a second or so later) and an
    /// open one by its own flow; two hard NATs never meet. Unknown counts
    /// as easy: most NATs are.
    public func meets(_ other: NATKind) -> Bool {
        !(self == .hard && other == .hard)
    }

    /// Whether they meet at once, by the ordinary punch or the hard side's
    /// own flow to an open one, not by birthday punching (whose first
    /// second or so runs over a relay).
    public func meetsAtOnce(_ other: NATKind) -> Bool {
        self == .open || other == .open || (self != .hard && other != .hard)
    }
}
