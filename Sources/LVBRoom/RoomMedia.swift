import LVBCore
import LVBCrypto
import LVBTransport

extension RoomNode {
    /// The gate in front of the media layer: only members of the room (the
    /// host, or a peer that showed us a pass) reach it, never a kicked one.
    /// Inside, `NodeMedia` routes by stream.
    func routeMedia(_ payload: ArraySlice<UInt8>, channel: DataChannel, from peer: NodeID) {
        guard let media else { return }
        guard isAdmitted, peer == host || verified.contains(peer), state?.isKicked(peer) != true else {
            droppedMedia += 1
            return
        }
        media.route(payload, channel: channel, from: peer)
    }
}
