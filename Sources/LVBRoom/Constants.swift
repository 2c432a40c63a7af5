import LVBCore

/// Room-level values. "Specification" values are part of the protocol
/// (man/lvbnode-protocol.7): every node must agree on them or rooms diverge.
/// "Tuning" values are local choices a second implementation may differ on.
public enum RoomConstants {
    // MARK: Specification

    /// Chat and bullet-comment events kept for the log and for late joiners.
    public static let chatHistory = 200
    /// A member the node watches (the host; on the host, the members its
    /// census lists) heard from neither by an event nor by any traffic for
    /// this long is shown as left with reason 1 (timeout).
    public static let presenceTimeout: Duration = .seconds(30)
    /// A joiner repeats its admission request this often until answered.
    public static let admissionRetry: Duration = .milliseconds(500)
    /// Chat and danmaku events per author per second (one shared token bucket).
    public static let chatRate = 5
    /// Chat and danmaku events an author may send at once.
    public static let chatBurst = 10
    /// Chat lines and bullet comments the whole room carries per second
    /// unless the host says otherwise (`--chat-rate`, `/chatrate`): about
    /// 5 KB/s of chat at the longest lines, which any member carries. An
    /// author holds back its own line while the room's last
    /// `roomChatWindow` already carried the rate (refused with a clear
    /// line, never dropped on the way); receivers do not enforce it, so a
    /// line some author sent reaches everyone.
    public static let defaultRoomChatRate: UInt16 = 20
    public static let roomChatWindow: Duration = .seconds(2)
    /// Profile events per author per second, and at once.
    public static let profileRate = 1
    public static let profileBurst = 3
    /// Like events (not likes: each carries a cumulative total) per author per second, and at once.
    public static let likeEventRate = 5
    public static let likeEventBurst = 10
    /// Gift events per author per second, and at once (each carries up to `Gift.maxCount` gifts).
    public static let giftEventRate = 4
    public static let giftEventBurst = 8
    /// The same gift again within this long continues the giver's combo;
    /// a combo this long without a continuation has ended.
    public static let giftComboWindow: Duration = .seconds(3)
    /// The media tree: children a node takes by default (`--relay-slots`;
    /// at most `RelayPosition.maxSlots`).
    public static let defaultRelaySlots = 4
    /// What a host relays, by default, for members it introduced that
    /// cannot reach each other directly (`--relay-kbps`): about one stream
    /// at the default bitrate, or the room's events of many pairs.
    public static let defaultHostRelayKbps = 2500
    /// A parent that sent nothing this long after our subscription is passed
    /// over; a parent we already held a session with answers from its GOP
    /// cache within a round trip, so it gets less.
    public static let attachTimeout: Duration = .seconds(1)
    /// An orphan asking a node it holds no session with moves on if the
    /// session is not up this soon (it goes on dialling in the background).
    public static let orphanSessionWait: Duration = .milliseconds(400)
    /// Candidates a node whose stream stopped for half a silence dials.
    public static let orphanDials = 6
    public static let attachTimeoutLive: Duration = .milliseconds(300)
    /// Until the parent's stream arrives the subscription goes again this
    /// often over the session: at 10 % loss one in ten is lost, and a lost
    /// one cost a 300 ms wait and that parent for `refusedFor`.
    public static let attachResubscribe: Duration = .milliseconds(100)
    /// The backup parent is pinged this often, so a dead one is known before it is needed.
    public static let backupProbeInterval: Duration = .milliseconds(400)
    /// A child whose parent has been silent this long moves to its backup.
    public static let parentSilence: Duration = .seconds(1)
    /// A parent that refused us or went silent is left out of placement this long.
    public static let refusedFor: Duration = .seconds(10)
    /// A parent link through a relay moves to a parent reachable without
    /// one (`TreeAttachment.tickRelink`) after this long on the relay (at
    /// once when the NATs cannot meet), at most every `relinkInterval`.
    public static let relinkAfter: Duration = .seconds(5)
    public static let relinkInterval: Duration = .seconds(10)
    /// A parent that sent media its host did not seal is blamed this long
    /// after, unless it said its own parent lied to it (`MediaTrust`).
    static let blameGrace: Duration = .milliseconds(300)
    /// A parent's notice that its parent lied excuses refusals this long after it...
    static let excuseWindow: Duration = .seconds(1)
    /// ...for this long in a row at most (an honest relay has moved by then).
    static let maxExcuse: Duration = .seconds(3)
    /// A relay tells its children at most this often that its parent lied.
    static let upstreamNoticeInterval: Duration = .milliseconds(250)
    /// A parent blamed for a lie is never chosen again while the node is in the room.
    static let liarExcludedFor: Duration = .seconds(100 * 365 * 24 * 3600)
    /// A node that refused us naming none of its children has no stream to
    /// give now (it takes no children while its own stream has stopped):
    /// left out this long only, since orphans have a stream again within a
    /// second or two.
    public static let noStreamRefusedFor: Duration = .milliseconds(300)
    /// The children a full node named when it refused us are tried this long,
    /// when the room's positions offer no candidate (`RelaySignal.redirect`).
    public static let redirectFor: Duration = .seconds(5)
    /// A member with no candidate left asks the host (which sends its
    /// directory when it is full) at most this often.
    public static let hostAskedEvery: Duration = .milliseconds(500)
    /// A full node answers one asker's subscriptions at most this often
    /// (each answer carries positions: the host's, its directory). Under
    /// `attachTimeoutLive` less `attachResubscribe`, so that a subscription
    /// sent again finds an answer when the first one was lost (at 10 %
    /// loss a lost refusal cost the asker that node for `refusedFor`).
    public static let refusalInterval: Duration = .milliseconds(150)
    /// With no candidate left, a node that did not answer our subscription
    /// in time is asked again after this long (rather than after `refusedFor`).
    public static let askAgainAfter: Duration = .seconds(1)
    /// A child that reports at least `slowChildLoss` for `slowChildFor`
    /// while a sibling reports under `fineChildLoss` cannot keep up: its
    /// parent moves it down, and it takes no children for `demotedFor`.
    public static let slowChildLoss = 0.10
    public static let fineChildLoss = 0.02
    public static let slowChildFor: Duration = .seconds(3)
    public static let demotedFor: Duration = .seconds(60)
    /// A node looks at its place in the tree this often (placement, silence,
    /// slow children); far finer than the silences it acts on.
    public static let treeTickInterval: Duration = .milliseconds(100)
    /// A node signs its relay position at most this often (changes coalesce).
    public static let relayPublishInterval: Duration = .milliseconds(600)
    /// A relay position stands this long after it (or anything from its
    /// author) was last heard; its author publishes it again, unchanged,
    /// every `positionRefresh`.
    public static let positionLifetime: Duration = presenceTimeout
    public static let positionRefresh: Duration = presenceTimeout / 3
    /// Relay position events per author per second, and at once (a node
    /// coalesces its own changes to fewer; a relay's children come and go).
    public static let relayRate = 2
    public static let relayBurst = 6

    /// A member reports its part in the room's count to each gossip
    /// neighbour this often (`CountReport`); a neighbour silent for three
    /// intervals counts for nothing.
    public static let countReportInterval: Duration = .milliseconds(1500)
    /// A member whose count changed tells its upstream at once, but at most this often.
    public static let countReportSoonest: Duration = .milliseconds(250)
    /// Joiners a census lists that the one before did not, at most: the
    /// host passes on each newly listed joiner's join and profile, so a
    /// room joined by many at once costs everyone a bounded rate.
    public static let censusNewJoiners = 3
    /// The latest joiners' and co-hosts' events, likers' and moderation a joiner's snapshot carries at most.
    public static let snapshotLikers = 10
    public static let snapshotModeration = 64
    /// Bytes of chat and bullet comments a joiner's snapshot carries at most (the newest).
    public static let snapshotChatBytes = 32 * 1024
    /// The host sends a census when the count, the likes or the latest
    /// joiners changed, at most this often, and at least every `censusRefresh`.
    public static let censusInterval: Duration = .seconds(2)
    /// The host's gift rank goes out at most this often (when it changed).
    public static let giftRankInterval: Duration = .seconds(1)
    /// A PK's score goes to the room at most this often, when it changed
    /// (the other side's arrives with its host's keepalive, once a second).
    public static let pkScoreInterval: Duration = .seconds(1)
    public static let censusRefresh: Duration = .seconds(10)
    /// A count that moved by this share of the room (and by two members at
    /// least) goes out sooner, as soon as `censusSoonest` after the last
    /// census: a tenth of the room gone is news, one member is not.
    public static let censusMove = 0.01
    public static let censusSoonest: Duration = .milliseconds(500)

    /// Domain separation of the room's signatures and MACs; each is followed by
    /// one 0x00 byte where it prefixes signed bytes.
    public static let inviteContext = Array("lvbnode invite v1".utf8)
    public static let passContext = Array("lvbnode pass v1".utf8)
    public static let joinProofContext = Array("lvbnode join proof v1".utf8)
    public static let linkMicContext = Array("lvbnode linkmic v1".utf8)
    /// Longest link-mic request message or rejection reason, in UTF-8 bytes.
    public static let linkMicTextMax = 200
    /// A link-mic request the host has not answered by then expires (both sides drop it).
    public static let linkMicRequestLifetime: Duration = .seconds(30)
    /// A guest on stage whose media the host has not heard for this long is taken off stage.
    public static let guestSilence: Duration = .seconds(2)
    /// Length of a password join proof (BLAKE2b-MAC-256).
    public static let joinProofLength = 32
    /// Length of the Noise handshake hash a join proof is bound to.
    public static let sessionBindingLength = 64

    // MARK: Tuning

    /// A viewer repeats an unanswered link-mic request this often (the host
    /// answers a repeat with the answer it gave, so a lost answer is recovered).
    public static let linkMicRetry: Duration = .seconds(2)
    /// The host repeats its acceptance this often until the guest's media
    /// arrives (within `guestSilence`: a lost acceptance costs no more than this).
    public static let linkMicAnswerRepeat: Duration = .milliseconds(400)
    /// Co-hosts on stage at once unless `--max-guests` says otherwise.
    public static let defaultMaxGuests = 3
    /// Link-mic request ids the host remembers after answering (repeats get the same answer).
    public static let linkMicAnswersKept = 256

    /// A leaving node repeats its leave to members that have not acknowledged
    /// it this often, and waits at most `leaveWait` for all of them: 20 tries,
    /// so at 20 % loss each way a member is left unanswered with odds of
    /// 0.36^20 (at 100 ms, 0.36^10 = 4e-5 a member).
    public static let leaveRepeat: Duration = .milliseconds(50)
    public static let leaveWait: Duration = .seconds(1)
    /// A leaving node sends its own events of this last span along with its
    /// leave, so they reach every member too.
    public static let leaveReplay: Duration = .seconds(10)
    /// A kicked member's sessions end this long after the kick, so the kick
    /// still reaches it (and its other neighbours) first.
    public static let kickGrace: Duration = .seconds(1)
    /// Presence is swept (members silent for `presenceTimeout` shown as left) this often.
    public static let presenceSweep: Duration = .seconds(1)
    /// How long an invite made with /invite is valid.
    public static let inviteLifetime: Duration = .seconds(86_400)
    /// The receive pipelines are polled at least this often, and at most
    /// this often however soon they say work is due.
    public static let pollCeiling: Duration = .milliseconds(100)
    /// How often a node looks for sessions nothing needs (`TransportCore.collectSessions`).
    public static let collectInterval: Duration = .seconds(1)
    public static let pollFloor: Duration = .milliseconds(1)
    /// A member shows its pass to a peer at most this often (unless forced).
    public static let passRepeat: Duration = .seconds(1)
    /// Gossip that came before its sender's pass waits for it at most this
    /// long: up to 4 messages per peer, from up to 32 peers.
    public static let heldGossip = (wait: Duration.seconds(2), perPeer: 4, peers: 32)
    /// A member that drops a peer's gossip or media for want of its pass
    /// asks for it at most this often, and answers such a request from a
    /// peer at most this often: one lost pass cost a child its new parent
    /// (every subscription dropped) until the session ended.
    public static let passWantedInterval: Duration = .milliseconds(250)
    /// Events timestamped more than this before our admission come as history:
    /// they were rate limited when they were live.
    public static let historySlack: UInt64 = 5_000

    /// Event ids remembered for deduplication; older duplicates are caught by
    /// each author's floor (the highest evicted sequence number).
    public static let rememberedEventIDs = 4096
    /// A peer that forwards this many invalid events within `throttleWindow`
    /// has its gossip ignored for `throttleDuration`.
    public static let throttleAfterInvalid = 5
    public static let throttleWindow: Duration = .seconds(10)
    public static let throttleDuration: Duration = .seconds(30)
    /// A peer that forwards this many invalid events within `disconnectWindow` is disconnected.
    public static let disconnectAfterInvalid = 20
    public static let disconnectWindow: Duration = .seconds(60)
    /// Failed password proofs per peer within `passwordAttemptWindow`; past
    /// that, the peer's proofs are refused unchecked (online guessing).
    public static let passwordAttempts = 3
    public static let passwordAttemptWindow: Duration = .seconds(60)
    /// Per-peer bookkeeping (rate buckets, standing, password attempts) is
    /// swept of idle entries once it holds this many peers.
    public static let sweepThreshold = 1024
}
