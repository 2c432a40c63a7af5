import LVBCore
import LVBCrypto
import LVBMedia
import LVBTransport

/// The host's media endpoint: a `MediaBroadcaster` whose viewers are the
/// room's admitted members that asked for media (by sending RTCP).
public final class HostMedia: RoomMediaEndpoint {
    public let broadcaster: MediaBroadcaster<NodeID>

    public init(core: TransportCore, clock: Clock, videoSSRC: UInt32, audioSSRC: UInt32,
                maxVideoKbps: Int, useGOPCache: Bool) {
        broadcaster = MediaBroadcaster(clock: clock, videoSSRC: videoSSRC, audioSSRC: audioSSRC,
                                       maxVideoKbps: maxVideoKbps, useGOPCache: useGOPCache)
        broadcaster.send = { [unowned core] viewer, channel, bytes in
            try? core.send(bytes, channel: channel == .rtp ? .rtp : .rtcp, to: viewer)
        }
    }

    public func receive(_ payload: ArraySlice<UInt8>, channel: DataChannel, from peer: NodeID) {
        guard channel == .rtcp else { return }
        broadcaster.receiveRTCP(Array(payload), from: peer)
    }

    public func admitted(host: NodeID) {}
    public func peerGone(_ peer: NodeID) { broadcaster.unsubscribe(peer) }
    public func roundTrip(_ rtt: Duration, to peer: NodeID) {}
    public func tick() { broadcaster.tick() }
}
