import LVBCore

/// Session protocol values. "Specification" values are part of the wire
/// protocol (man/lvbnode-protocol.7) and follow WireGuard's where they match;
/// "tuning" values are local choices a second implementation may differ on.
public enum TransportConstants {
    // MARK: Specification

    /// The Noise prologue: binds every handshake to this protocol version.
    public static let prologue = Array("lvbnode/1".utf8)
    /// Start a new handshake once the current keys are this old (initiator side).
    public static let rekeyAfterTime: Duration = .seconds(120)
    /// Never send or accept a packet under keys older than this.
    public static let rejectAfterTime: Duration = .seconds(180)
    /// The responder rekeys if the initiator has not by then.
    public static let rekeyAfterTimeReceiving: Duration = rejectAfterTime - keepaliveTimeout - rekeyTimeout
    /// Start a new handshake after this many messages under one key.
    public static let rekeyAfterMessages: UInt64 = 1 << 60
    /// Never use a counter at or above this (leaves room for the replay window).
    public static let rejectAfterMessages: UInt64 = UInt64.max - (1 << 13)
    /// Retry an unanswered handshake after this long (plus jitter).
    public static let rekeyTimeout: Duration = .seconds(5)
    /// Give up on a handshake that has not completed after this long.
    public static let rekeyAttemptTime: Duration = .seconds(90)
    /// Send a keepalive when nothing has been sent for this long.
    public static let keepaliveTimeout: Duration = .seconds(10)
    /// Our hello is resent this long after the last until the peer's arrives, doubling up to `helloRetryMax`.
    public static let helloRetry: Duration = .milliseconds(300)
    public static let helloRetryMax: Duration = .seconds(4)
    /// A peer with an established session is gone after this much silence.
    public static let peerGoneTimeout: Duration = .seconds(15)
    /// A session this node has sent nothing but control messages on for
    /// this long, and that nothing above needs, is released
    /// (`collectSessions`): it ends once the peer has released it too.
    /// One over a relay path costs the relay: it goes sooner.
    public static let sessionIdleAfter: Duration = .seconds(15)
    public static let relayedSessionIdleAfter: Duration = .seconds(5)
    /// Cookie secrets change this often.
    public static let cookieSecretLifetime: Duration = .seconds(120)

    // MARK: Tuning

    /// Upper bound of the random jitter added to each handshake retry.
    public static let rekeyTimeoutJitter: Duration = .milliseconds(333)
    /// A handshake to a peer we hold no session with is first retried after
    /// this, then after as long as it has been tried, up to `rekeyTimeout`
    /// (250, 250, 500 ms, 1, 2, 4, 5 s): a join, or a child moving to a new
    /// parent, should not wait 5 s for one lost datagram. Each retry costs the
    /// responder one handshake, as any initiation does (cookies bound that).
    public static let firstRetry: Duration = .milliseconds(250)
    /// Hole punching: the first retry of an initiation to an introduced peer
    /// comes this soon, each next one twice as late, up to `rekeyTimeout`.
    public static let punchRetry: Duration = .milliseconds(100)
    /// Hole punching's first initiation goes out with this hop limit: enough
    /// to pass this node's own NAT, too little to reach the peer's.
    public static let punchOpenerHops = 2
    /// A punch beside a running session (`punch`, introduced again) tries
    /// this many times (paced as any punch, about 3 s), then lapses.
    public static let repunchTries = 6
    /// IPv4's usual TTL, restored after an opener.
    public static let defaultTTL = 64
    /// Peers asked where they see this node, coordinators included, until
    /// this many have answered (three that each see another port tell an
    /// address-dependent NAT apart).
    public static let mappingWitnesses = 4
    /// A session that started over a relay path tries the direct addresses
    /// again after this, then twice as late each time up to `directProbeLast`,
    /// for `directProbeWindow`.
    public static let directProbeFirst: Duration = .seconds(1)
    public static let directProbeLast: Duration = .seconds(8)
    public static let directProbeWindow: Duration = .seconds(120)
    /// A datagram over a relay path takes a session off its direct path
    /// only once nothing has come straight from the peer for this long (a
    /// relayed datagram still in flight after the move must not undo it).
    public static let directPathQuiet: Duration = .seconds(2)
    /// A node asks its coordinators where they see it at most this often
    /// (`AddressChange`), and moves at most this often.
    public static let addressCheckInterval: Duration = .seconds(1)
    /// A session whose ping has gone unanswered this long (nothing at all
    /// from the peer since) makes the node ask where it is seen.
    public static let quietBeforeCheck: Duration = .milliseconds(600)
    /// After a move, a session's datagrams wait for the peer to be heard
    /// from again (its punch) at most this long before going to its
    /// direct address regardless.
    public static let holdAfterMove: Duration = .seconds(10)
    /// Unknown-session packets one source host gets at most (per second,
    /// burst): a restarted node answers each session's next packet, not
    /// every packet of a stream of them.
    public static let unknownSessionRate = 4
    public static let unknownSessionBurst = 8
    /// An unknown-session packet is believed only once nothing has come
    /// from the peer for this long: a live session's packet under keys
    /// just replaced (both sides dialled at once) is answered so too.
    public static let unknownSessionQuiet: Duration = .seconds(1)
    /// How often the owner must call `TransportCore.tick()`.
    public static let tickInterval: Duration = .milliseconds(100)
    /// Initiations with a valid mac1 per second above which mac2 (a cookie)
    /// is demanded. An IK responder costs about 0.4 ms of one core here
    /// (Scripts/bench handshakes: 1,196 initiator+responder pairs/s), so 200/s
    /// holds a flood to under a tenth of a core; 500 allowed a fifth. An
    /// honest joiner above it pays one round trip (it resends at once with
    /// mac2), and the protocol page has said 200 all along.
    public static let underLoadHandshakesPerSecond = 200
    /// The span over which initiations are counted against `underLoadHandshakesPerSecond`.
    public static let loadWindow: Duration = .seconds(1)
    /// Addresses one peer is dialled at, at most (introductions' and hints' together).
    public static let maxCandidates = 16
    /// Messages queued per peer while its session is being set up.
    public static let maxQueuedPerPeer = 128
    /// Responder-side XX handshakes awaiting message 3.
    public static let maxPendingResponses = 1024
    /// Peers (sessions) one node keeps at once: the host of a room of ten
    /// thousand holds one with every member.
    public static let maxPeers = 16384
    /// Initiator timestamps remembered for replay rejection.
    public static let maxRememberedTimestamps = 65536
    /// Socket addresses the UDP driver keeps made (one per address it sends
    /// to); past this many it starts afresh.
    public static let socketAddressCacheSize = 1024
}

/// Introductions between peers (introduce channel, `Introductions.swift`).
/// All tuning: a second implementation may choose others.
public enum IntroductionConstants {
    /// A reach without a session asks its coordinators again this often, this many times at most.
    public static let askRetry: Duration = .milliseconds(500)
    public static let askAttempts = 10
    /// A reach that no coordinator introduced in this long also dials its hints directly.
    public static let fallbackAfter: Duration = .milliseconds(1500)
    /// A member's relay (a host's) is the last resort: a reach dials it once
    /// its punch (and any rendezvous relay) has had this long.
    public static let memberRelayAfter: Duration = .milliseconds(2000)
    /// A coordinator tells a target about the same requester again at most this often.
    public static let retellAfter: Duration = .milliseconds(400)
    /// Requests a coordinator takes per requester per second (burst), and
    /// introductions a target dials on per second (burst).
    public static let requestRate = 20
    public static let requestBurst = 40
    public static let dialRate = 20
    public static let dialBurst = 40
    /// What one relayed pair may use of a coordinator's relay budget, and how
    /// long after its introduction or last relayed datagram a pair may use it.
    public static let relayPairKbps = 2500
    public static let relayPairLifetime: Duration = .seconds(600)
    /// A session on a rendezvous's relay this long (its punch, which the
    /// relay raced, had its chance) asks the room's host to relay it
    /// instead, again at most every `memberRelayRetry` (`MemberRelay`);
    /// birthday punching goes on from the host's relay.
    public static let memberRelayFirstAfter: Duration = .seconds(2)
    public static let memberRelayRetry: Duration = .seconds(60)
}
