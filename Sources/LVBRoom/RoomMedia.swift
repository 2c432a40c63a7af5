import LVBCore
import LVBCrypto
import LVBTransport

/// The media side of a room node (host: `HostMedia`; viewer: `ViewerMedia`).
/// `RoomNode` hands it the rtp/rtcp channels of admitted peers only, so
/// nothing reaches the media layer from a node the host has not let in.
public protocol RoomMediaEndpoint: AnyObject {
    /// A payload on `.rtp` or `.rtcp` from an admitted peer (viewer: from the host).
    func receive(_ payload: ArraySlice<UInt8>, channel: DataChannel, from peer: NodeID)
    /// This (viewing) node has just been admitted to the room by `host`.
    func admitted(host: NodeID)
    /// The session with `peer` ended.
    func peerGone(_ peer: NodeID)
    /// A fresh round-trip time to `peer` (transport keepalives).
    func roundTrip(_ rtt: Duration, to peer: NodeID)
    /// Timers; called with the room's tick.
    func tick()
}

extension RoomNode {
    /// Routes the media channels: a host takes RTCP from admitted viewers; a
    /// viewer takes RTP and RTCP from its host. Everything else is dropped.
    func routeMedia(_ payload: ArraySlice<UInt8>, channel: DataChannel, from peer: NodeID) {
        guard let media else { return }
        if isHost {
            guard channel == .rtcp, verified.contains(peer), state?.isKicked(peer) != true else {
                droppedMedia += 1
                return
            }
        } else {
            guard isAdmitted, peer == host else {
                droppedMedia += 1
                return
            }
        }
        media.receive(payload, channel: channel, from: peer)
    }
}
