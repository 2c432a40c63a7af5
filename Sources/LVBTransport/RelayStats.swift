/// Counters of an `ImpairmentRelay`.
public struct RelayStats: Sendable, Equatable {
    /// Counters for one direction of the relay.
    public struct Direction: Sendable, Equatable {
        /// Datagrams that arrived to be relayed.
        public var received = 0
        /// Datagrams passed on (once each, however many copies).
        public var forwarded = 0
        /// Datagrams dropped by the impairment's loss.
        public var dropped = 0
        /// Extra copies sent by the impairment's duplication.
        public var duplicated = 0
        /// Datagrams that could not be relayed: over the client cap, from an
        /// unexpected sender, or beyond the relay's queue limits.
        public var rejected = 0
        public init() {}
    }
    /// Client to target.
    public var upstream = Direction()
    /// Target to client.
    public var downstream = Direction()
    /// Client mappings open now.
    public var clients = 0
    /// Client mappings ever opened.
    public var clientsOpened = 0
    /// Client mappings closed for being idle.
    public var clientsExpired = 0
    public init() {}
}
