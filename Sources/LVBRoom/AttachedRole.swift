import LVBTransport

/// A role a layer above the room adds to a running node (a host's announcer
/// to a rendezvous): it sees the node's transport events and ticks, on the
/// node's loop, and acts through the transport itself. Registered with one
/// line, `LiveNode.attach`, like a handler added to a pipeline.
public protocol AttachedRole: AnyObject {
    /// Every transport event, after the room saw it.
    func handle(_ event: TransportEvent)
    /// Every `GossipConstants.tickInterval`.
    func tick()
    /// The node leaves its room (before its sessions end).
    func leave()
    /// The node stops.
    func stop()
}
