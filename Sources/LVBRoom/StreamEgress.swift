import LVBCore
import LVBCrypto
import LVBMedia

/// `--egress`, as a role of its node: the room's stream — what the host
/// publishes (the mix while guests are on stage, the PK picture in a PK), as
/// this node gets it — handed to a media server's plain-RTP input (see
/// `RTPEgress`), and the server's keyframe requests turned into the request
/// a child in the tree makes: a viewer sends its parent a PLI, a host asks
/// its own encoder. The node stays an ordinary member of the room (counted,
/// placed in the tree, relaying).
public final class StreamEgress: LiveRole {
    public let egress: RTPEgress
    private let socket: EgressSocket
    private unowned let node: LiveNode
    /// The tap on the room's stream (its origin is the room's host: this
    /// node itself on the host); taken anew when the room's host changes.
    private var tap: StreamTaps<NodeID>.Tap?

    /// `socket`: opened for `target` (`EgressSocket(for: target.video)`).
    public init(node: LiveNode, target: EgressTarget, socket: EgressSocket) {
        self.node = node
        self.socket = socket
        egress = RTPEgress(target: target, clock: node.clock)
        egress.send = { [socket] address, bytes in socket.send(bytes, to: address) }
        tapRoomStream()
    }

    public func handle(_ event: NodeEvent) {}

    /// Every 20 ms: the server's feedback, the sender reports, and a
    /// keyframe request for the room's stream when one is due (its origin
    /// decides where it goes: the host's encoder, or the parent).
    public func tick() {
        tapRoomStream()
        socket.receive { bytes, from in egress.receiveRTCP(bytes, from: from) }
        egress.tick()
        guard egress.takeKeyframeRequest() else { return }
        if node.media.requestKeyframe(of: node.room.host) { node.onWakeupChanged?() }
    }

    public func stop() {
        if let tap { node.media.taps.remove(tap) }
        tap = nil
    }

    /// (Every tick: a switch changes the room's host.)
    private func tapRoomStream() {
        tap = node.media.taps.retarget(tap, to: node.room.host) { [egress] packet in egress.forward(packet) }
    }
}
