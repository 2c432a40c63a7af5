import LVBCore
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
    private var tappedOrigin: ObjectIdentifier?

    /// `socket`: opened for `target` (`EgressSocket(for: target.video)`).
    public init(node: LiveNode, target: EgressTarget, socket: EgressSocket) {
        self.node = node
        self.socket = socket
        egress = RTPEgress(target: target, clock: node.clock)
        egress.send = { [socket] address, bytes in socket.send(bytes, to: address) }
        node.viewing.onHostPacket = { [egress] packet in egress.forward(packet) }
        tapOrigin()
    }

    public func handle(_ event: NodeEvent) {}

    /// Every 20 ms: the server's feedback, the sender reports, and a
    /// keyframe request upstream when one is due.
    public func tick() {
        tapOrigin()
        socket.receive { bytes, from in egress.receiveRTCP(bytes, from: from) }
        egress.tick()
        guard egress.takeKeyframeRequest() else { return }
        if node.room.isHost {
            node.publishing.requestKeyframe()
        } else if let receiver = node.media.receivers[node.room.host] {
            receiver.video.requestKeyframe()
            node.onWakeupChanged?()
        }
    }

    /// A host's stream starts publishing after the node is built (and a
    /// co-host promoted to host publishes anew): tap whichever origin is current.
    private func tapOrigin() {
        guard node.room.isHost, let origin = node.media.publisher, ObjectIdentifier(origin) != tappedOrigin else { return }
        tappedOrigin = ObjectIdentifier(origin)
        origin.onPacket = { [egress] packet in egress.forward(packet) }
    }
}
