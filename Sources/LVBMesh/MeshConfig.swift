/// What `lvbnode mesh` runs.
public struct MeshConfig: Sendable {
    public var viewers = 8
    public var guests = 1
    public var rooms = 1
    /// Loss on every link (each direction): each node but the rendezvous drops this share of what it receives.
    public var loss = 0.0
    /// Seconds; nil: until SIGINT or SIGTERM.
    public var duration: Double?
    /// The studio page of the first viewer, served here (`--web`).
    public var web: String?
    /// The program to run as every node (this binary).
    public var executable: String
    /// Children each host and viewer feeds in the media tree: 2 grows a tree a few levels deep.
    public var slots = 2
    /// Every node behind its own real NAT (`--nat`; root only), nil: all on 127.0.0.1.
    public var nat: NAT?
    /// `--replay`: the first room's host keeps a replay; `replayPhase` seconds
    /// before the end it closes the room, serves the replay, and a player
    /// plays it from the start and after a seek. Needs `duration`.
    public var replay = false
    public static let replayPhase = 12.0

    /// `--nat`: each host, viewer and guest in its own home behind a NAT
    /// (nftables masquerade), the rendezvous on the "internet" between them,
    /// relaying for pairs that cannot punch.
    public struct NAT: Sendable {
        /// Homes whose NAT picks a random port for every destination (`masquerade random,fully-random`).
        public var hard: Int
        public var internet: NATLab.Internet
        /// The rendezvous relays each pair of members up to this (kbit/s), in all up to 50 times it.
        public var relayKbps = 4000
        /// `--ipv6`: every home dual-stack (`NATLab.ipv6`), every node on a dual-stack socket.
        public var ipv6 = false

        public init(hard: Int, internet: NATLab.Internet) {
            self.hard = hard
            self.internet = internet
        }
    }

    public init(executable: String) { self.executable = executable }
}

/// What changed, for the dashboard or the JSON stream.
public enum MeshUpdate: Sendable {
    case started(String)
    case exited(String)
    case happening
    case said
}
