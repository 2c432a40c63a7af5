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
/// stream (its sender reports). `RoomNode` passes on the media channels of
/// admitted members only.
public final class NodeMedia {
    public private(set) var publisher: MediaOrigin<NodeID>?
    public private(set) var receivers: [NodeID: StreamReceiver] = [:]
    /// Host with co-hosts on stage: the stream returned to each guest (the
    /// mix without that guest); the guest's feedback goes to it, not to `publisher`.
    public private(set) var returns: [NodeID: MediaOrigin<NodeID>] = [:]
    /// RTP from a node whose stream this node did not ask for.
    public private(set) var unrequestedRTP = 0

    private let core: TransportCore
    private let clock: Clock
    private let random: RandomSource
    private var lastProbe: [NodeID: Instant] = [:]
    private var lastRTP: [NodeID: Instant] = [:]

    public init(core: TransportCore, clock: Clock, random: RandomSource) {
        self.core = core
        self.clock = clock
        self.random = random
    }

    /// Starts publishing a stream with fresh SSRCs; returns its origin stage.
    @discardableResult
    public func publish(maxVideoKbps: Int, useGOPCache: Bool) -> MediaOrigin<NodeID> {
        let origin = makeOrigin(maxVideoKbps: maxVideoKbps, useGOPCache: useGOPCache)
        publisher = origin
        return origin
    }

    /// Stops publishing (a co-host leaving the stage); subscribers hear nothing more.
    public func stopPublishing() { publisher = nil }

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

    /// Stops receiving `origin`'s stream (a co-host left the stage).
    public func stopReceiving(from origin: NodeID) {
        receivers[origin] = nil
        lastRTP[origin] = nil
    }

    private func makeOrigin(maxVideoKbps: Int, useGOPCache: Bool) -> MediaOrigin<NodeID> {
        let origin = MediaOrigin<NodeID>(clock: clock, videoSSRC: random.uint32(), audioSSRC: random.uint32(),
                                         maxVideoKbps: maxVideoKbps, useGOPCache: useGOPCache)
        origin.send = { [unowned core] peer, channel, bytes in
            try? core.send(bytes, channel: channel == .rtp ? .rtp : .rtcp, to: peer)
        }
        return origin
    }

    /// Receives `origin`'s stream: a receive pipeline that subscribes at once
    /// and keeps the subscription up. Returns the existing one if there is.
    @discardableResult
    public func receive(from origin: NodeID) throws(MediaError) -> StreamReceiver {
        if let existing = receivers[origin] { return existing }
        let receiver = try StreamReceiver(clock: clock, ssrc: random.uint32(), maxDatagram: core.maxPayload)
        receiver.sendFeedback = { [unowned core] bytes in try? core.send(bytes, channel: .rtcp, to: origin) }
        receivers[origin] = receiver
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

    /// A payload on `.rtp` or `.rtcp` from an admitted member.
    func route(_ payload: ArraySlice<UInt8>, channel: DataChannel, from peer: NodeID) {
        switch channel {
        case .rtp:
            guard let receiver = receivers[peer] else {
                unrequestedRTP += 1
                return
            }
            lastRTP[peer] = clock.now()
            receiver.receiveRTP(payload)
        case .rtcp:
            let receiver = receivers[peer]
            // A co-host's feedback is about the stream returned to it.
            let origin = returns[peer] ?? publisher
            // Parsed once for both; a malformed one is counted by each as before.
            guard let packets = try? RTCPPacket.parseCompound(payload) else {
                origin?.receiveRTCP(payload, from: peer)
                receiver?.receiveRTCP(payload)
                return
            }
            origin?.receiveRTCP(packets, from: peer)
            receiver?.receiveRTCP(packets)
        default:
            break
        }
    }

    /// When RTP from `origin`'s stream last arrived (a co-host's silence).
    public func lastHeard(from origin: NodeID) -> Instant? { lastRTP[origin] }

    /// The session with `peer` ended.
    func peerGone(_ peer: NodeID) {
        publisher?.unsubscribe(peer)
        returns[peer] = nil
    }

    /// A fresh round-trip time to `peer` (transport pings): NACK retries and
    /// the wait for a repair follow it.
    func roundTrip(_ rtt: Duration, to peer: NodeID) {
        receivers[peer]?.video.rtt = rtt
    }

    /// Timers; called with the room's tick.
    func tick() {
        publisher?.tick()
        for origin in returns.values { origin.tick() }
        let now = clock.now()
        for (origin, receiver) in receivers {
            receiver.tick()
            // A busy session sends no keepalives, so nothing measures its
            // round trip: ping the node we receive from now and then.
            if lastProbe[origin].map({ now - $0 >= MediaConstants.rttProbeInterval }) ?? true {
                lastProbe[origin] = now
                core.probeRoundTrip(to: origin)
            }
        }
    }

    /// Runs every receive pipeline now (decode what is due, send feedback).
    public func poll() {
        for receiver in receivers.values { receiver.poll() }
    }

    /// The earliest time any receive pipeline has work.
    public var nextWakeup: Instant? { receivers.values.compactMap(\.nextWakeup).min() }
}
