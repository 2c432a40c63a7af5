import LVBCore
import LVBCrypto
import LVBTransport

extension RoomNode {
    /// The gate in front of the media router: only members of the room (the
    /// host, or a peer that showed us a pass) reach it, never a kicked one.
    /// The host's stream is taken while we ask it to admit us (its GOP
    /// follows the pass, and the two may swap places on the way). Media
    /// refused is counted, and a member we do not know yet is asked for its pass.
    public func admitsMedia(from peer: NodeID) -> Bool {
        guard phase != .gone else { return false }
        let fromHost = peer == host && !isHost && phase.isActive
        // (A member first: the PK partner is asked of its feature, on every packet otherwise.)
        guard fromHost || isAdmitted && verified.contains(peer) || pkPartner == peer, state?.isKicked(peer) != true else {
            droppedMedia += 1
            if isAdmitted { askForPass(of: peer) }
            return false
        }
        return true
    }
}
