import DequeModule
import LVBCore
import LVBCrypto

/// Everything a node knows about one remote node: its identity (once the
/// handshake reveals it), endpoint, keypairs, pending handshake and timers.
final class Peer {
    /// Nil only while an XX handshake to a bare address is still running.
    var id: NodeID?
    var endpoint: PeerAddress
    /// Other addresses to try until the first authenticated answer (from a ticket).
    var candidates: [PeerAddress] = []
    /// Hole punching (an introduction): initiations go out fast at first
    /// (`punchRetry` doubling up to `rekeyTimeout`), so the first one that
    /// crosses a freshly opened NAT mapping is not 5 s behind. Counts the tries.
    var punchAttempts: Int?
    /// Direct addresses to keep trying while the session runs over a relay
    /// path: a fresh handshake goes to them now and then, and the first that
    /// completes moves the session there (its response proves the path both ways).
    var directCandidates: [PeerAddress] = []
    var directProbe: (next: Instant, gap: Duration, until: Instant)?
    /// When this punch's hop-limited opener went out, and when its direct
    /// initiations go on beside a session the relay won (`resumePunch`).
    var openerSentAt: Instant?
    var punchResumeAt: Instant?
    /// When an authenticated datagram last came straight from the peer (not over a relay path).
    var lastDirectIn: Instant?
    /// This node moved (`AddressChange`): nothing of the session goes to the
    /// peer's direct address until the peer is heard from there, or until then.
    var holdDirectUntil: Instant?
    /// The direct path birthday punching found (`Birthday`): a spare
    /// socket's path on the hard side, the outside port it hit on the easy one.
    var birthdayPath: PeerAddress?
    /// A member's relay path the session moved to (`MemberRelay`), and when
    /// a datagram last came along it.
    var memberRelayPath: PeerAddress?
    var lastMemberRelayIn: Instant?
    /// What came from the peer over relay paths, in bytes: birthday
    /// punching takes the busiest relayed session first (a parent's stream).
    var relayedBytesIn = 0
    /// Keep the session up and retry until `rekeyAttemptTime` (we dialled it).
    let persistent: Bool
    /// The address it was dialled at without knowing who answers there (XX,
    /// a rendezvous given by address): a lost session is dialled afresh
    /// there the same way, so a new identity at that address is taken too.
    var dialledBlind: PeerAddress?
    /// When an unknown-session packet named this session while the peer
    /// had spoken lately (a ping went to ask it).
    var unknownSessionSince: Instant?

    /// The keypair in use; `next` is a responder's keypair awaiting the
    /// initiator's first transport packet (key confirmation); `previous` still
    /// decrypts packets in flight after a rekey.
    var current: Keypair?
    var next: Keypair?
    var previous: Keypair?

    var initiation: PendingInitiation?
    /// When this node last withdrew its own initiation for the peer's (both
    /// dialled at once): its handshake counts as under way for a while after.
    var yieldedAt: Instant?
    var cookies: CookieGenerator

    /// When this record was made; bounds the life of a session that never confirms.
    let created: Instant
    var lastSent: Instant?
    /// When we last sent the peer anything but control messages: the
    /// session is in use (`collectSessions`).
    var lastUsed: Instant?
    /// We said we no longer need the session (`idle`), and the peer said so.
    var released = false
    var peerReleased = false
    /// A layer above needed the session at the last `collectSessions`
    /// (true where nothing collects): only such a session is worth birthday punching.
    var needed = true
    var lastReceived: Instant?
    var established = false
    /// The peer's hello has arrived (this session record's first), and the role it said.
    var helloReceived = false
    var role: NodeRole?
    /// Until then ours goes again at `at`, each gap twice the last
    /// (`helloRetry` up to `helloRetryMax`): a hello is one datagram, and the
    /// layers above wait for it (a rendezvous is known by its hello's role).
    var helloResend: (at: Instant, gap: Duration)?
    /// When we last answered a copy of the peer's hello with ours.
    var helloAnswered: Instant?
    /// Data waiting for a session.
    var queue = Deque<(DataChannel, [UInt8])>()

    var rtt: Duration?
    var pingSentAt: Instant?
    var pingNonce: UInt64 = 0

    init(id: NodeID?, endpoint: PeerAddress, persistent: Bool, cookies: CookieGenerator, created: Instant) {
        self.id = id
        self.created = created
        self.endpoint = endpoint
        self.persistent = persistent
        self.cookies = cookies
    }

    var keypairs: [Keypair] { [current, next, previous].compactMap { $0 } }

    /// We answered the peer's initiation and wait for its first packet under
    /// those keys (lately): an initiation of ours now would cross it.
    func awaitsConfirmation(now: Instant) -> Bool {
        next.map { now - $0.created < TransportConstants.rekeyTimeout } ?? false
    }

    /// Installs a keypair from a completed handshake. An initiator's keys are
    /// confirmed already; a responder's wait in `next`. As wireguard-go's
    /// BeginSymmetricSession: when both sides dialled at once, the pending
    /// responder keys become `previous` (the other side is about to use
    /// them), so neither side's packets land on a deleted index.
    func install(_ k: Keypair) -> [Keypair] {
        var retired = [Keypair]()
        if k.isInitiator {
            if let p = previous { retired.append(p) }
            if let n = next {
                if let c = current { retired.append(c) }
                previous = n
                next = nil
            } else {
                previous = current
            }
            current = k
        } else {
            if let n = next { retired.append(n) }
            next = k
        }
        return retired
    }

    /// Promotes `next` after the initiator's first authenticated packet under it.
    func confirmNext() -> [Keypair] {
        guard let n = next else { return [] }
        var retired = [Keypair]()
        if let p = previous { retired.append(p) }
        previous = current
        current = n
        next = nil
        return retired
    }
}

/// An initiation this node sent and awaits the response to.
struct PendingInitiation {
    let handshake: NoiseHandshake
    let pattern: NoisePattern
    let localIndex: UInt32
    /// When the first attempt of this run of retries began (for rekeyAttemptTime).
    let firstAttempt: Instant
    let sentAt: Instant
    /// The retry deadline including jitter.
    let retryAt: Instant
    /// Already resent once in answer to a cookie reply.
    let cookieRetried: Bool
    /// A probe of other paths beside a running session (`only`): unanswered,
    /// it lapses instead of being retried to every address, which would
    /// rekey the session where it runs (over a relay: the relay's bytes).
    var lapses = false
    /// The addresses it went to (nil: the endpoint and every candidate).
    var only: [PeerAddress]?
}
