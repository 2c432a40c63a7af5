import LVBCore
import LVBCrypto

// Unknown-session packets (type 8, man/lvbnode-protocol.7 §PACKETS): a node
// that gets a transport packet under an index it does not hold says so, and
// the sender, if that index is its current session's with the node at that
// address, takes the session as lost at once instead of after
// `peerGoneTimeout` of silence. A rendezvous restarted under a running
// room is heard again at the host's next announcement, not 15 s later.
//
//  0               1               2               3
//  +---------------+---------------+---------------+---------------+
//  |     0x08      |            reserved (zero)                    |
//  +---------------+---------------+---------------+---------------+
//  |           receiver index of the packet answered, LE           |
//  +---------------+---------------+---------------+---------------+
//
// 8 bytes in answer to at least 32: never an amplifier; at most
// `unknownSessionRate` a second to one source host. Only someone who saw
// the index on the path can forge one, and it costs the session one fresh
// handshake, no more than dropping its packets would.
extension TransportCore {
    /// A transport packet under `index`, which this node does not hold, came from `source`.
    func answerUnknownIndex(_ index: UInt32, to source: PeerAddress) {
        guard unknownSessionAnswers.allow(source.host, now: clock.now()) else { return }
        stats.unknownSessionsSent += 1
        transmit(Packet.unknownSession(index: index), to: source, unauthenticatedReply: true)
    }

    /// The node at `source` holds no session under `index`. Believed only
    /// for the current keys of the session with the node there, and only
    /// after `unknownSessionQuiet` without a word from it (a packet under
    /// keys the peer has just replaced, as when both sides dialled at once,
    /// is answered so too, while the session itself is alive).
    func consumeUnknownSession(_ index: UInt32, from source: PeerAddress) {
        let now = clock.now()
        guard unknownSessionsTaken.allow(0, now: now) else {
            drop(\.droppedUnknownSession, from: source, "unknown-session packet over the rate")
            return
        }
        guard let peer = peersByID.values.first(where: { $0.endpoint == source && $0.current?.remoteIndex == index }),
              peer.established, now - (peer.lastReceived ?? peer.created) >= TransportConstants.unknownSessionQuiet else {
            drop(\.droppedUnknownSession, from: source, "unknown-session packet for index \(index) names no quiet session here")
            return
        }
        stats.sessionsReset += 1
        lost(peer, reason: .reset, now: now)
    }
}
