import LVBCore
import LVBCrypto
import LVBGossip
import LVBTransport

/// Quick switch (viewers): rooms kept ready next to this one, and the move
/// from one room to another, which replaces the driver's room and tree.
extension LiveNode {
    /// Rooms next to this one kept ready for a quick switch, by room id.
    public var preloads: [RoomID: RoomPreload] { elsewhere.ready }

    /// Keeps `target`, hosted by `host`, ready for a quick switch: admitted and
    /// (when this node shows pictures) subscribed to its keyframes. The caller
    /// dials the host (directly or through an introduction).
    public func preload(_ target: RoomID, host: NodeID) {
        guard plan.role != .host, target != room.room, elsewhere.ready[target] == nil else { return }
        elsewhere.ready[target] = RoomPreload(room: target, host: host, trickle: viewing.sinks != nil, core: core, clock: clock, random: random)
    }

    /// No longer keeps `target` ready; its session ends unless something else needs it.
    public func dropPreload(_ target: RoomID) {
        guard let preload = elsewhere.ready.removeValue(forKey: target) else { return }
        if !isNeeded(preload.host) { core.disconnect(preload.host) }
    }

    /// Switches this viewer to room `target` hosted by `host`: leaves the room
    /// it is in (off stage first; the leave goes out as usual) and enters
    /// `target` — at once with the preloaded pass and picture if it was kept
    /// ready, else by asking its host (whose session the caller dials).
    /// Returns whether it was preloaded.
    @discardableResult
    public func switchRoom(to target: RoomID, host: NodeID) throws(RoomActionError) -> Bool {
        guard plan.role != .host else { throw .refused("a host stays in its own room (/close ends it)") }
        guard target != room.room else { throw .refused("already in that room") }
        let now = clock.now()
        let old = room
        try? old.hangUpLinkMic(nil)
        if old.isAdmitted { old.leave() } else { old.shutdown() }
        old.onOutput = nil
        old.onStage = nil
        old.onSignal = nil  // it pointed at the tree of the room we leave
        old.lastMedia = nil
        elsewhere.departing.removeAll { $0.room.room == target }
        elsewhere.departing.append((old, now + RoomConstants.leaveWait))

        let preload = elsewhere.ready.removeValue(forKey: target).flatMap { $0.host == host ? $0 : nil }
        let next = RoomNode(joining: target, host: host, proof: .none, core: core, clock: clock, random: random, instance: instance)
        next.profile = old.profile
        room = next
        for role in roles { role.handle(.switchedRoom(from: old)) }
        wireRoom()
        let keyframe = preload?.keyframe
        let sinks = viewing.sinks
        let preloaded = preload?.pass != nil && (keyframe != nil || sinks == nil)
        sinks?.restart(at: now, preloaded: preloaded)
        report(.switched(from: old.room, to: target, preloaded: preloaded))
        if let pass = preload?.pass, next.enter(with: pass) {
            // The receiver for the host's stream now exists: show the held picture at once.
            if let keyframe, let receiver = media.receivers[host] {
                for packet in keyframe { receiver.receiveRTP(packet[...]) }
            }
        } else {
            next.start()
        }
        return preloaded
    }

    /// Whether a session with `peer` serves the room we are in, a preload, or a room we are leaving.
    public func isNeeded(_ peer: NodeID) -> Bool {
        room.hears(peer) || room.state?.isPresent(peer) == true || elsewhere.needs(peer)
    }
}
