import LVBCore
import LVBCrypto
import LVBMedia
import LVBTransport

/// A node's media, routed by stream rather than by role: the stream this node
/// publishes (its `MediaOrigin`, if any) and the streams it receives, one
/// `StreamReceiver` per origin node it subscribed to. A co-host publishes
/// while it receives; a host receives its guests while it publishes. RTP is
/// taken only from nodes whose stream we asked for; RTCP goes to the
/// publisher (subscribers' feedback) and to the receiver of that node's
/// stream (its sender reports). A stream may come from a relay rather than
/// its origin (the media tree): `feed(_:from:)` names the node it comes from,
/// which then gets this node's feedback; a viewer relaying the host's stream
/// (`relay`) forwards each packet to its children before its own receiver
/// sees it, and its children's feedback goes to the relay. The node
/// driver passes on the media channels of admitted members only
/// (`RoomNode.admitsMedia`).
public final class NodeMedia: LiveRole {
    public private(set) var publisher: MediaOrigin<NodeID>?
    private var publisherAudience: NodeID?
    public private(set) var receivers: [NodeID: StreamReceiver] = [:]
    /// Host with co-hosts on stage: the stream returned to each guest (the
    /// mix without that guest); the guest's feedback goes to it, not to `publisher`.
    public private(set) var returns: [NodeID: MediaOrigin<NodeID>] = [:]
    /// RTP from a node whose stream this node did not ask for.
    public private(set) var unrequestedRTP = 0
    /// A viewer's relay stage of the stream it receives (the media tree), and whose stream that is.
    public private(set) var relay: MediaRelay<NodeID>?
    public private(set) var relayedOrigin: NodeID?
    /// Streams that come from another node than their origin: origin → that node (the parent in the tree).
    public private(set) var feeders: [NodeID: NodeID] = [:]
    /// Taps on the streams this node has, by origin: its own as published,
    /// another's as its seals let it through (`--rtp-out`, `--egress`, a UI).
    public let taps = StreamTaps<NodeID>()
    /// Taps on every RTP packet of a stream this node asked for, as it
    /// arrives (before the relay and the receiver), with that stream's origin:
    /// for a test that counts what a node that decodes nothing gets.
    private var arrivalTaps: [(NodeID, ArraySlice<UInt8>) -> Void] = []
    /// The room this node's streams belong to, the seals' scope (`MediaSeal`);
    /// nil while not known (a viewer that joined by address, before its pass).
    public var roomScope: () -> [UInt8]? = { nil }
    /// Media of a stream this node takes failed its origin's seals: the
    /// origin, the node that sent it (the feeder: a parent, or the origin), why.
    public var onRefused: ((NodeID, NodeID, SealFailure) -> Void)?
    /// The seals of the stream this node relays without decoding it (a
    /// receiver checks its own): a relay that passes on a lie must know.
    private(set) var relayChecker: (any MediaAdmission)?
    /// What the relayed stream's packets are handed to: the relay, or a lie in front of it.
    private var relayInput: (any RelayInput)?
    /// False for measurement only (`--unsealed`): what this node publishes
    /// carries no seals, and what it receives is taken unchecked (`AdmitAll`).
    public var sealed = true
    /// A test aid: this node's relay lies to its children (`lvbnode --lie`); its own receiver still gets the truth.
    public var lie: RelayLie? {
        didSet { if let relay { relayInput = input(of: relay) } }
    }

    let core: TransportCore
    let clock: Clock
    private let random: RandomSource
    private var lastProbe: [NodeID: Instant] = [:]
    private var lastRTP: [NodeID: Instant] = [:]
    /// The relay's own subscription (a relay that decodes nothing has no receiver to keep it).
    private let relaySSRC: UInt32
    private var lastRelayFeedback: Instant?
    /// What each node that fed us a stream cost while it did (`cost(of:)`).
    var ledger = FeederLedger()

    public init(core: TransportCore, clock: Clock, random: RandomSource) {
        self.core = core
        self.clock = clock
        self.random = random
        relaySSRC = random.uint32()
        taps.onChange = { [unowned self] origin in
            if origin == core.nodeID { publisher?.onPacket = taps.handler(for: origin) } else { receivers[origin]?.onPacket = taps.handler(for: origin) }
        }
    }

    /// Hands `body` every packet of every stream this node asked for as it arrives.
    public func tapArrivals(_ body: @escaping (NodeID, ArraySlice<UInt8>) -> Void) { arrivalTaps.append(body) }

    /// Starts publishing a stream with fresh SSRCs; returns its origin stage.
    /// `audience`: the only node whose feedback subscribes (a co-host
    /// publishes to its host alone; its children in the media tree, whose
    /// feedback is about the stream it relays, must not get its camera).
    @discardableResult
    public func publish(maxVideoKbps: Int, useGOPCache: Bool, audience: NodeID? = nil) -> MediaOrigin<NodeID> {
        let origin = makeOrigin(maxVideoKbps: maxVideoKbps, useGOPCache: useGOPCache)
        origin.onPacket = taps.handler(for: core.nodeID)
        publisher = origin
        publisherAudience = audience
        return origin
    }

    /// Stops publishing (a co-host leaving the stage); subscribers hear nothing more.
    public func stopPublishing() {
        publisher = nil
        publisherAudience = nil
    }

    /// The publisher that takes `peer`'s feedback, if any.
    private func publisher(for peer: NodeID) -> MediaOrigin<NodeID>? {
        if let returned = returns[peer] { return returned }
        return publisherAudience.map { $0 == peer } ?? true ? publisher : nil
    }

    /// Host: opens the stream returned to co-host `guest` (fresh SSRCs),
    /// moving the guest off the stream everyone else gets.
    public func openReturn(for guest: NodeID, maxVideoKbps: Int) -> MediaOrigin<NodeID> {
        let origin = makeOrigin(maxVideoKbps: maxVideoKbps, useGOPCache: true)
        publisher?.unsubscribe(guest)
        origin.subscribe(guest)
        returns[guest] = origin
        return origin
    }

    /// Host: the guest left the stage; its feedback subscribes it to the main stream again.
    public func closeReturn(for guest: NodeID) { returns[guest] = nil }

    /// Stops receiving `origin`'s stream (a co-host left the stage; a room left).
    public func stopReceiving(from origin: NodeID) {
        sayGoodbye(leaving: origin)
        ledger.settle(origin, totals: totals(of: origin) ?? FeederCost())
        receivers[origin] = nil
        lastRTP[origin] = nil
        feeders[origin] = nil
        if relayedOrigin == origin { stopRelaying() }
    }

    private func makeOrigin(maxVideoKbps: Int, useGOPCache: Bool) -> MediaOrigin<NodeID> {
        let origin = MediaOrigin<NodeID>(clock: clock, videoSSRC: random.uint32(), audioSSRC: random.uint32(),
                                         maxVideoKbps: maxVideoKbps, useGOPCache: useGOPCache)
        // Everything this node publishes carries its signature (a host's
        // stream, a co-host's camera, the mixes returned to guests).
        if sealed { origin.sealer = StreamSealer(scope: roomScope() ?? [], sign: { [identity = core.identity] in identity.sign($0) }) }
        origin.send = { [unowned core] peer, channel, bytes in
            try? core.send(bytes, channel: channel == .rtp ? .rtp : .rtcp, to: peer)
        }
        return origin
    }

    /// Receives `origin`'s stream: a receive pipeline that subscribes at once
    /// (with the node that feeds it) and keeps the subscription up, and takes
    /// only what `origin` sealed for room `scope` (nil: this node's room).
    /// Returns the existing one if there is.
    @discardableResult
    public func receive(from origin: NodeID, scope: [UInt8]? = nil) throws(MediaError) -> StreamReceiver {
        if let existing = receivers[origin] { return existing }
        let checker: any MediaAdmission = sealed ? SealChecker(signer: origin, scope: scope.map { s in { s } } ?? { [unowned self] in roomScope() }) : AdmitAll()
        let receiver = try StreamReceiver(clock: clock, ssrc: random.uint32(), maxDatagram: core.maxPayload, checker: checker)
        receiver.onPacket = taps.handler(for: origin)
        receiver.onRefused = { [unowned self] failure, seqs in refused(origin, failure, seqs) }
        receiver.sendFeedback = { [unowned self] bytes in try? core.send(bytes, channel: .rtcp, to: feeder(of: origin)) }
        // What we forwarded to our children leaves before we decode.
        receiver.beforeDecode = { [unowned self] in core.flushSends() }
        receivers[origin] = receiver
        if relayedOrigin != origin { ledger.fed(origin, by: feeder(of: origin), totals: FeederCost()) }
        receiver.subscribe()
        return receiver
    }

    /// Asks `origin` again for its stream if none of it has come yet: the
    /// first subscription may have overtaken the admission request it
    /// followed, and the host drops feedback from a node it has not admitted.
    public func subscribeAgainIfSilent(to origin: NodeID) {
        guard lastRTP[origin] == nil else { return }
        receivers[origin]?.subscribe()
    }

    // MARK: The media tree

    /// The node `origin`'s stream comes from: its parent in the tree, or the origin itself.
    public func feeder(of origin: NodeID) -> NodeID { feeders[origin] ?? origin }

    /// The stream `origin`'s stream this node takes from `feeder` from now on
    /// (nil: from the origin itself), and subscribes there at once. RTP of it
    /// from any other node is dropped as unrequested; the node it came from
    /// before gets our goodbye and lets us go. The same feeder again is asked
    /// again: a subscription queued while the session came up can reach it
    /// ahead of our pass and be dropped (`RelayTree` asks again once the
    /// session is up and the pass has gone out).
    public func feed(_ origin: NodeID, from feeder: NodeID?) {
        let feeder = feeder == origin ? nil : feeder
        if feeders[origin] != feeder {
            sayGoodbye(leaving: origin)
            ledger.fed(origin, by: feeder ?? origin, totals: totals(of: origin) ?? FeederCost())
            feeders[origin] = feeder
            receivers[origin]?.feederChanged()
            if origin == relayedOrigin { relayChecker?.feederChanged() }
        }
        subscribe(to: origin)
    }

    /// Tells the node that feeds us `origin`'s stream, if we take it, that we
    /// no longer take it from there (an RTCP goodbye), so it frees our slot now
    /// rather than after its subscriber timeout. A feeder that is gone simply
    /// never hears it.
    private func sayGoodbye(leaving origin: NodeID) {
        guard receivers[origin] != nil || relayedOrigin == origin else { return }
        let peer = feeder(of: origin), ssrc = receivers[origin]?.ssrc ?? relaySSRC
        guard core.isEstablished(with: peer), let rr = try? RTCPReceiverReport(ssrc: ssrc), let bye = try? RTCPBye(ssrcs: [ssrc]) else { return }
        try? core.send(RTCPPacket.serializeCompound([.receiverReport(rr), .bye(bye)]), channel: .rtcp, to: peer)
    }

    /// Relays `origin`'s stream to up to `slots` children (the viewer's relay
    /// slots), from its send history and GOP cache; `repairKbps` bounds what
    /// retransmissions to one child may use.
    public func startRelaying(_ origin: NodeID, slots: Int, repairKbps: Int) {
        guard relay == nil || relayedOrigin != origin else { return }
        let relay = MediaRelay<NodeID>(clock: clock, repairBudgetKbps: repairKbps, maxChildren: slots)
        relay.send = { [unowned core] peer, channel, bytes in
            try? core.send(bytes, channel: channel == .rtp ? .rtp : .rtcp, to: peer)
        }
        self.relay = relay
        relayInput = input(of: relay)
        relayChecker = sealed ? SealChecker(signer: origin, scope: { [unowned self] in roomScope() }) : AdmitAll()
        if receivers[origin] == nil { ledger.fed(origin, by: feeder(of: origin), totals: FeederCost()) }
        relayedOrigin = origin
        subscribe(to: origin)
    }

    /// What `relay` is handed each packet through: itself, or the `lie` in front of it.
    private func input(of relay: MediaRelay<NodeID>) -> any RelayInput {
        lie.map { LyingRelay($0, in: relay, clock: clock) } ?? relay
    }

    /// Stops relaying (children hear nothing more and move on).
    public func stopRelaying() {
        relay = nil
        relayInput = nil
        relayedOrigin = nil
        relayChecker = nil
    }

    /// What `origin`'s seals refused: the relay forgets it (children asking
    /// again get the true copy), and the node that sent it is reported.
    private func refused(_ origin: NodeID, _ failure: SealFailure?, _ seqs: [UInt16]) {
        if origin == relayedOrigin { relay?.forget(seqs) }
        if let failure { onRefused?(origin, feeder(of: origin), failure) }
    }

    /// Checks the seals of what this node relays but does not decode.
    private func checkRelayed(_ packet: RTPPacket, of origin: NodeID, fromOrigin: Bool) {
        guard let checker = relayChecker else { return }
        let now = clock.now()
        for output in checker.retry(now: now) + checker.receive(packet, now: now, fromOrigin: fromOrigin) {
            switch output {
            case let .forged(failure, seqs): refused(origin, failure, seqs)
            case .dropped(let seqs): refused(origin, nil, seqs)
            default: break
            }
        }
    }

    /// Sends `origin`'s feeder our subscription now: the receiver's report,
    /// or the relay's own when this node decodes nothing.
    private func subscribe(to origin: NodeID) {
        if let receiver = receivers[origin] {
            receiver.subscribe()
        } else if relayedOrigin == origin {
            sendRelayFeedback(origin, [])
        }
    }

    /// What the relay owes upstream (children's NACKs it cannot answer, a
    /// keyframe request), merged into one datagram to the feeder; with no
    /// receiver of our own, an empty report keeps the subscription.
    private func flushRelayFeedback(now: Instant) {
        guard let relay, let origin = relayedOrigin else { return }
        let owed = relay.takeUpstreamFeedback(senderSSRC: receivers[origin]?.ssrc ?? relaySSRC)
        let keepalive = receivers[origin] == nil
            && lastRelayFeedback.map { now - $0 >= MediaConstants.resubscribeInterval } ?? true
        guard !owed.isEmpty || keepalive else { return }
        sendRelayFeedback(origin, owed)
    }

    private func sendRelayFeedback(_ origin: NodeID, _ packets: [RTCPPacket]) {
        var packets = packets
        if receivers[origin] == nil, let rr = try? RTCPReceiverReport(ssrc: relaySSRC) { packets.insert(.receiverReport(rr), at: 0) }
        guard !packets.isEmpty else { return }
        lastRelayFeedback = clock.now()
        let bytes = packets.flatMap { $0.serialized() }
        try? core.send(bytes, channel: .rtcp, to: feeder(of: origin))
    }

    /// The origin whose stream `peer` feeds us, if any (the origin itself when it feeds us directly).
    func fed(by peer: NodeID) -> NodeID? {
        if let origin = feeders.first(where: { $0.value == peer })?.key { return origin }
        return feeders[peer] == nil && (receivers[peer] != nil || relayedOrigin == peer) ? peer : nil
    }

    /// A payload on `.rtp` or `.rtcp` from an admitted member.
    func route(_ payload: ArraySlice<UInt8>, channel: DataChannel, from peer: NodeID) {
        switch channel {
        case .rtp:
            guard let origin = fed(by: peer) else {
                unrequestedRTP += 1
                return
            }
            lastRTP[origin] = clock.now()
            for tap in arrivalTaps { tap(origin, payload) }
            let relaying = origin == relayedOrigin ? relayInput : nil, receiver = receivers[origin]
            guard relaying != nil || receiver != nil else { return }
            // Parsed once; forwarded before anything here looks at it.
            guard let packet = try? RTPPacket.parse(payload) else {
                if relaying != nil { relay?.receiveRTP(payload) }  // counted malformed by each
                receiver?.receiveRTP(payload)
                return
            }
            relaying?.receiveRTP(packet, bytes: payload)
            // The receiver checks the seals of what it takes; a relay that decodes nothing, its own.
            // What the origin sent us itself needs no signature: the session says who sent it.
            let fromOrigin = peer == origin
            if let receiver { receiver.receiveRTP(packet, bytes: payload, fromOrigin: fromOrigin) } else { checkRelayed(packet, of: origin, fromOrigin: fromOrigin) }
        case .rtcp:
            let source = fed(by: peer)
            let receiver = source.flatMap { receivers[$0] }
            // A co-host's feedback is about the stream returned to it.
            let origin = publisher(for: peer)
            // A child's feedback is about the stream we relay.
            let child = source == nil && origin == nil ? relay : nil
            // Parsed once for all; a malformed one is counted by each as before.
            guard let packets = try? RTCPPacket.parseCompound(payload) else {
                origin?.receiveRTCP(payload, from: peer)
                receiver?.receiveRTCP(payload)
                child?.receiveRTCP(payload, from: peer)
                return
            }
            origin?.receiveRTCP(packets, from: peer)
            receiver?.receiveRTCP(packets)
            child?.receiveRTCP(packets, from: peer)
            if let source, source == relayedOrigin { relay?.receiveUpstreamRTCP(packets) }
        default:
            break
        }
    }

    /// The session with `peer` ended.
    func peerGone(_ peer: NodeID) {
        publisher?.unsubscribe(peer)
        relay?.unsubscribe(peer)
        returns[peer] = nil
    }

    /// Sessions and round trips; a room left behind (its host's stream stops).
    public func handle(_ event: NodeEvent) {
        switch event {
        case let .transport(.rtt(peer, rtt)): roundTrip(rtt, to: peer)
        case let .transport(.gone(peer, _)): peerGone(peer)
        case .switchedRoom(let old): stopReceiving(from: old.host)
        default: break
        }
    }

    /// Timers; called with the node's tick.
    public func tick() {
        publisher?.tick()
        for origin in returns.values { origin.tick() }
        relay?.tick()
        let now = clock.now()
        relayChecker?.expire(now: now)
        flushRelayFeedback(now: now)
        for origin in Set(receivers.keys).union(relayedOrigin.map { [$0] } ?? []) {
            receivers[origin]?.tick()
            // A busy session sends no keepalives, so nothing measures its
            // round trip: ping the node we receive from now and then.
            if lastProbe[origin].map({ now - $0 >= MediaConstants.rttProbeInterval }) ?? true {
                lastProbe[origin] = now
                core.probeRoundTrip(to: feeder(of: origin))
            }
        }
    }

    /// Runs every receive pipeline now (decode what is due, send feedback).
    public func poll() {
        for receiver in receivers.values { receiver.poll() }
        if relay != nil { flushRelayFeedback(now: clock.now()) }
    }

    /// The earliest time any receive pipeline has work.
    public var nextWakeup: Instant? { receivers.values.compactMap(\.nextWakeup).min() }
}
