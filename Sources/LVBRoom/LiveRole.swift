import LVBCore
import LVBCrypto
import LVBGossip
import LVBMedia
import LVBTransport

/// Everything that happens to a node, typed, as its driver (`LiveNode`)
/// hands it to each role in turn.
public enum NodeEvent {
    /// A transport event: sessions, and datagrams on every channel (media
    /// only from members of the room: the driver asks the room first).
    case transport(TransportEvent)
    /// The room reported something: admitted, a change, removed, link-mic signalling.
    case room(RoomOutput)
    /// This node asks the host to admit it (a node that shows pictures
    /// subscribes to the host's stream at the same time: its GOP follows the pass).
    case admissionRequested
    /// Link-mic's media side, as the room's signalling decided it.
    case stage(LinkMicAction)
    /// A member's signal about the media tree: it is full, or we must move down.
    case relaySignal(NodeID, RelaySignal)
    /// Relay positions a member sent us, checked and applied (`TreeView`).
    case positions(NodeID, [RoomEvent])
    /// This viewer left room `from` for another (roles bound to a room let the old one go).
    case switchedRoom(from: RoomNode)
    /// Media of `origin`'s stream that `origin` did not seal, sent by `from`
    /// (this node's parent in the tree, or the origin itself): refused, not shown.
    case mediaRefused(origin: NodeID, from: NodeID, SealFailure)
}

/// A part of a node — the media tree, the stream it publishes, the stream
/// it watches, rooms kept ready for a switch, a rendezvous's announcer —
/// registered with its driver with one line (`LiveNode.register`), like a
/// handler added to a pipeline. It sees every `NodeEvent` and tick on the
/// node's loop, acts on its own state and the node's services (the room,
/// the media router, the transport) and reports through the driver; it
/// never calls into another role. Every requirement but `handle` has a
/// default that does nothing.
public protocol LiveRole: AnyObject {
    /// Whether a transport message belongs to this role alone (a preloaded
    /// room's admission answer): the room does not see it; later roles still do.
    func claims(_ event: TransportEvent) -> Bool
    /// Every event, in the order roles were registered.
    func handle(_ event: NodeEvent)
    /// Every `GossipConstants.tickInterval`.
    func tick()
    /// When the driver polls (receive pipelines due), and when this role next wants it.
    func poll()
    var nextWakeup: Instant? { get }
    /// Whether this role needs the node's session with `peer` now: one that
    /// nothing needs and nothing is sent on ends (`TransportCore.collectSessions`).
    func needsSession(with peer: NodeID) -> Bool
    /// The node leaves its room (before its sessions end).
    func leave()
    /// The node stops.
    func stop()
}

extension LiveRole {
    public func claims(_ event: TransportEvent) -> Bool { false }
    public func tick() {}
    public func poll() {}
    public var nextWakeup: Instant? { nil }
    public func needsSession(with peer: NodeID) -> Bool { false }
    public func leave() {}
    public func stop() {}
}
