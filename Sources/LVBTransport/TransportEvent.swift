import LVBCore
import LVBCrypto

/// What the transport tells its owner.
public enum TransportEvent: Sendable {
    /// Both directions of a session with `peer` are proven (first time, or after it was gone).
    case established(PeerInfo)
    /// The peer introduced itself on the control channel.
    case hello(NodeID, Hello)
    /// A payload arrived on a data channel (gossip, room; rtp and rtcp later).
    case message(NodeID, DataChannel, ArraySlice<UInt8>)
    /// A new round-trip time measurement for `peer`.
    case rtt(NodeID, Duration)
    /// New session keys replaced the old ones.
    case rekeyed(NodeID)
    /// The session ended.
    case gone(NodeID, GoneReason)
    /// A dialled peer could not be reached within `rekeyAttemptTime`.
    case connectFailed(PeerAddress, NodeID?)
    /// This node's outside address changed (a coordinator sees it elsewhere
    /// now): its sessions are being punched again (`AddressChange`).
    case moved(from: PeerAddress, to: PeerAddress)
    /// A peer's address changed and the pair is being punched again (a
    /// coordinator said so): its silence meanwhile was not its death.
    case peerMoved(NodeID)
    /// Birthday punching with `peer` ended (`Birthday`): met (the session
    /// runs direct now) or not, this long after it began on this side.
    case birthday(NodeID, met: Bool, after: Duration)
}

/// Why a session ended.
public enum GoneReason: String, Sendable {
    /// Nothing authenticated arrived for `peerGoneTimeout`.
    case silence
    /// The peer said bye.
    case bye
    /// This node disconnected it.
    case local
    /// Its keys expired and no new handshake succeeded.
    case expired
    /// The peer took a new session from another address with our identity:
    /// another process signed in with this node's identity.
    case replaced
    /// The peer said it holds no session under our keys (an unknown-session
    /// packet): it restarted, or forgot us.
    case reset
    /// Neither side needed the session any more (`TransportCore.collectSessions`):
    /// the peer is still there, and may be dialled again.
    case idle
}

/// A snapshot of one peer for UIs and tests.
public struct PeerInfo: Sendable {
    public var id: NodeID
    public var endpoint: PeerAddress
    public var established: Bool
    public var rtt: Duration?
    public var keyAge: Duration?
    /// True when this node sent the first message of the current keys' handshake.
    public var initiatedCurrentKeys: Bool
    /// The session runs over a relay path (not straight to the peer), and
    /// the node it runs through, when known.
    public var relayed: Bool
    public var relayVia: NodeID?

    public init(id: NodeID, endpoint: PeerAddress, established: Bool, rtt: Duration?, keyAge: Duration?,
                initiatedCurrentKeys: Bool, relayVia: NodeID? = nil) {
        self.id = id
        self.endpoint = endpoint
        self.established = established
        self.rtt = rtt
        self.keyAge = keyAge
        self.initiatedCurrentKeys = initiatedCurrentKeys
        self.relayed = RelayPath.isRelay(endpoint)
        self.relayVia = relayVia
    }
}

/// Counters; every dropped datagram lands in exactly one `dropped…` field.
public struct TransportStats: Sendable, Equatable {
    public var datagramsIn = 0
    public var bytesIn = 0
    /// Of those, bytes that came over a relay path through a rendezvous.
    public var bytesInViaRendezvous = 0
    public var datagramsOut = 0
    public var bytesOut = 0
    public var handshakesCompleted = 0
    /// Handshakes sent to direct addresses while a session ran over a relay path.
    public var directProbes = 0
    /// Punches of a relayed session's direct paths asked of its relay's node (`punch`), and taken (either side).
    public var punchesAsked = 0
    public var repunches = 0
    /// Punches whose direct initiations went on after the relay answered first (`resumePunch`).
    public var punchesResumed = 0
    /// Own initiations dropped for the peer's, both sent at once (`yieldSimultaneousOpen`).
    public var simultaneousOpensYielded = 0
    /// Introductions: reaches this node asked coordinators for; pairs it
    /// introduced as a coordinator (target told); introductions it dialled
    /// on as a target; requests over their rate.
    public var introductionsAsked = 0
    public var introductionsMade = 0
    public var introductionsTaken = 0
    public var introductionsRefused = 0
    /// As a coordinator's relay: datagrams and bytes passed on, and refused
    /// (pair not introduced here, over budget, peer gone).
    public var relayedDatagrams = 0
    public var relayedBytes = 0
    public var relayRefused = 0
    /// Of those, refused for the pair's or the total budget.
    public var relayOverBudget = 0
    /// Datagrams this node sent and got along its own relay paths through coordinators.
    public var relayPathDatagramsOut = 0
    public var relayPathDatagramsIn = 0
    public var cookieRepliesSent = 0
    /// Unknown-session packets sent (answers to transport packets under an
    /// index this node does not hold) and taken (a session found lost on
    /// the peer's side: dialled afresh); those received that named no
    /// current session here, or came too soon, are dropped uncounted here.
    public var unknownSessionsSent = 0
    public var sessionsReset = 0
    /// Sessions this node said it no longer needs, and those that ended so (neither side needed them).
    public var sessionsReleased = 0
    public var sessionsClosedIdle = 0
    /// This node's own address (`AddressChange`): requests asking where it
    /// is seen, changes noticed, sockets moved to, and session datagrams
    /// held back from peers' direct addresses until they were punched again.
    public var addressChecks = 0
    public var addressChanges = 0
    public var socketsRebound = 0
    public var heldAfterMove = 0
    /// Birthday punching (`Birthday`): offers this node made and attempts
    /// an easy peer accepted (hard side), spare sockets it opened,
    /// attempts that found a direct path (either side), accepted attempts
    /// that did not (hard side), offers it declined (also for being busy)
    /// and probes it sent (easy side).
    public var birthdayOffers = 0
    /// Sessions on a rendezvous's relay this node asked a host to relay
    /// instead, and that it moved there (`MemberRelay`).
    public var memberRelayAsks = 0
    public var memberRelayMoves = 0
    public var birthdayRuns = 0
    public var birthdaySpares = 0
    public var birthdayMet = 0
    public var birthdayFailed = 0
    public var birthdayDeclined = 0
    public var birthdayProbes = 0
    public var keepalivesIn = 0
    public var messagesIn = 0
    public var messagesOut = 0
    /// Bytes in datagrams that never authenticated (garbage, bad mac1, failed handshakes).
    public var unauthenticatedBytesIn = 0
    /// Bytes this node sent in answer to datagrams not yet authenticated.
    public var bytesSentToUnauthenticated = 0

    /// Datagrams another protocol on the socket claimed (`sideChannel`).
    public var sideChannelIn = 0
    /// Datagrams dropped on arrival by `TransportConfig.inboundLoss` (not counted in).
    public var droppedInbound = 0

    public var droppedMalformed = 0
    public var droppedMAC1 = 0
    public var droppedNeedsCookie = 0
    public var droppedHandshake = 0
    public var droppedReplayedInitiation = 0
    public var droppedUnknownIndex = 0
    public var droppedDecrypt = 0
    public var droppedReplay = 0
    public var droppedExpired = 0
    public var droppedQueueFull = 0
    /// Unknown-session packets that named no quiet current session here, or over their rate.
    public var droppedUnknownSession = 0

    public var droppedTotal: Int {
        droppedMalformed + droppedMAC1 + droppedNeedsCookie + droppedHandshake + droppedReplayedInitiation
            + droppedUnknownIndex + droppedDecrypt + droppedReplay + droppedExpired + droppedUnknownSession
    }
}

/// What another protocol sharing the socket does with a datagram.
public enum SideChannelVerdict: Sendable {
    /// Not its own: the session layer takes it.
    case notMine
    /// Its own, and dropped (malformed, or nothing to answer).
    case consumed
    /// Its own: send this answer to the source.
    case reply([UInt8])
}
