import LVBCore
import LVBCrypto
import LVBGossip
import LVBMedia
import LVBTransport

/// What one node runs: its part in a room and its media roles. The CLI maps
/// options onto it; tests build it directly.
public struct NodePlan {
    /// Host a room, or join one.
    public enum Part {
        case host(AdmissionPolicy, info: RoomInfo)
        /// `host` nil: joined by bare address (Noise XX), the node that answers hosts the room.
        case join(room: RoomID, host: NodeID?, proof: JoinProof, addresses: [PeerAddress])
    }

    public var part: Part
    public var profile = Profile()
    /// Publish a stream from these sources: a host from the start, a viewer
    /// while the host has it on stage (link-mic co-host).
    public var publish: PublisherSetup?
    /// A co-host's stage may be fed from outside (`LiveNode.startOutsideStage`:
    /// the studio page's camera): on stage it then publishes even without
    /// sources of its own in `publish`, whose bitrate and GOP still apply.
    public var stageFromOutside = false
    /// Host: co-hosts on stage at once (`--max-guests`).
    public var maxGuests = RoomConstants.defaultMaxGuests
    /// Receive the host's stream into these sinks once admitted (nil: no media).
    public var receive: SinkOptions?
    /// The media tree: children this node serves (host) or relays to
    /// (viewer); nil: no tree, the host sends every viewer its own copy.
    public var relaySlots: Int?
    /// Where other members reach this node (its relay position lists them).
    public var addresses: [PeerAddress] = []
    /// A test aid: this node's relay lies to its children in this way (`--lie`).
    public var lie: RelayLieMode?
    /// False for measurement only (`--unsealed`): no seals made, none checked.
    public var sealed = true
    /// With `lie`: false "my parent lied" notices to its children every 250 ms.
    public var lieExcuses = false
    /// With `lie`: the truth this long first.
    public var lieAfter: Duration = .zero

    public init(part: Part) { self.part = part }

    public var role: NodeRole {
        if case .host = part { .host } else { .viewer }
    }
}

/// Everything a running node reports to its user interfaces, in order.
public enum NodeOutput {
    /// A session event (established, hello, rtt, gone, unreachable).
    case transport(TransportEvent)
    /// A room event (admitted, denied, a change, removed).
    case room(RoomOutput)
    /// The received stream's outputs (first frame, recording, failures).
    case sink(SinkEvent)
    /// The published stream's input ended or failed.
    case mediaEnded(String)
    /// A viewer moved to another room (`preloaded`: it was kept ready, so the
    /// host's pass and latest picture were already here).
    case switched(from: RoomID, to: RoomID, preloaded: Bool)
    /// A neighbouring room is ready for a quick switch (admitted, with a picture to show).
    case preloaded(RoomID)
    /// This viewer's parent in the media tree changed (nil: it has none for
    /// now); `failovers`: moves after a silent parent so far.
    case treeParent(NodeID?, depth: Int?, failovers: Int)
    /// This viewer's parent sent media the host did not seal (`why`): it was
    /// refused, never shown, and the parent left for good; what it cost this node.
    case liar(NodeID, SealFailure, FeederCost)
}
