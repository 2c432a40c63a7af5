/// The first plaintext byte of every transport packet: which layer gets the
/// payload. An empty plaintext (no channel byte) is a keepalive.
public enum DataChannel: UInt8, Sendable, CaseIterable {
    /// Session control: hello, ping/pong, bye (`ControlMessage`).
    case control = 0
    /// Room events and membership (LVBGossip).
    case gossip = 1
    /// Media RTP (reserved for LVBMedia).
    case rtp = 2
    /// Media RTCP (reserved for LVBMedia).
    case rtcp = 3
    /// Room admission: join requests, password proofs, invites (LVBRoom).
    case room = 4
    /// Room announcements and the room list between nodes and a rendezvous (LVBRendezvous).
    case rendezvous = 5
    /// Introductions and relaying between any two peers of a node (`IntroductionMessage`).
    case introduce = 6
    /// Replays: manifests and segments between a player and the holders (LVBReplay).
    case replay = 7
}
