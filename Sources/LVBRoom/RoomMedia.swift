import LVBCore
import LVBCrypto
import LVBTransport

extension RoomNode {
    /// The gate in front of the media layer: only members of the room (the
    /// host, or a peer that showed us a pass) reach it, never a kicked one.
    /// The host's stream is taken while we ask it to admit us (its GOP
    /// follows the pass, and the two may swap places on the way).
    /// Inside, `NodeMedia` routes by stream.
    func routeMedia(_ payload: ArraySlice<UInt8>, channel: DataChannel, from peer: NodeID) {
        guard let media else { return }
        let fromHost = peer == host && !isHost && phase.isActive
        guard fromHost || isAdmitted && verified.contains(peer), state?.isKicked(peer) != true else {
            droppedMedia += 1
            if isAdmitted { askForPass(of: peer) }
            return
        }
        media.route(payload, channel: channel, from: peer)
    }
}
