import LVBCore
import LVBCrypto
import LVBMedia

/// Whom a node serves each stream to, and how a keyframe of one is asked
/// for: decided by the stream's origin (this node's own, one it receives,
/// one it only relays), never by the node's role.
extension NodeMedia {
    /// Asks for a keyframe of `origin`'s stream for someone beside the tree
    /// (`--egress`'s media server), as the stream's place here decides: this
    /// node's own stream asks its encoder (its subscribers' request), one it
    /// receives sends its feeder a PLI, one it only relays merges the PLI
    /// into the relay's feedback upstream. False: aggregated into one asked
    /// just before, or this node has no such stream.
    @discardableResult
    public func requestKeyframe(of origin: NodeID) -> Bool {
        if origin == core.nodeID { return publisher?.downstream.requestKeyframe(now: clock.now()) ?? false }
        if let receiver = receivers[origin] { return receiver.video.requestKeyframe() }
        if origin == relayedOrigin, let relay { return relay.downstream.requestKeyframe(now: clock.now()) }
        return false
    }

    /// Whoever this node serves `origin`'s stream to: its own stream's
    /// subscribers when it is the origin, the children of its relay of that
    /// stream otherwise (nil: it serves that stream to nobody).
    public func downstream(of origin: NodeID) -> Downstream<NodeID>? {
        origin == core.nodeID ? publisher?.downstream : relayedOrigin == origin ? relay?.downstream : nil
    }

    /// Whether a stream needs the session with `peer`: it feeds us one, we
    /// take one straight from its origin, or it takes one of ours.
    public func needsSession(with peer: NodeID) -> Bool {
        feeders.values.contains(peer) || (receivers[peer] != nil && feeders[peer] == nil) || returns[peer] != nil
            || publisher?.downstream.peers.contains(peer) == true || relay?.downstream.peers.contains(peer) == true
    }

    /// When media of `origin`'s stream last came that its seals did not
    /// refuse and that was not a copy of what they let through (a co-host's
    /// silence, a parent's): a node sending only lies or copies is silent.
    public func lastHeard(from origin: NodeID) -> Instant? {
        let relayed = origin == relayedOrigin ? relayChecker?.lastFresh : nil
        let received = receivers[origin].flatMap { $0.checker.lastFresh ?? $0.lastTaken }
        return [received, relayed].compactMap { $0 }.max()
    }

    /// A fresh round-trip time to `peer` (transport pings): NACK retries and
    /// the wait for a repair follow it.
    func roundTrip(_ rtt: Duration, to peer: NodeID) {
        guard let origin = fed(by: peer) else { return }
        receivers[origin]?.video.rtt = rtt
        if origin == relayedOrigin { relay?.upstreamRTT = rtt }
    }
}
