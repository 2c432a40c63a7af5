import LVBCore
import LVBCrypto

/// What a parent in the media tree tells a would-be or current child.
///
///     8 relay full        (empty)
///     9 relay move down   (empty)
///    11 relay redirect    count(1: 1...4) ‖ node(32) × count
public enum RelaySignal: RoomMessageContent, Equatable {
    /// Every slot is taken: the subscription was refused.
    case full
    /// The same, naming children of the sender to try instead (a full node
    /// sends the joiner down its own branch at once, before any gossiped
    /// position says where a slot is free).
    case redirect([NodeID])
    /// The child does clearly worse than its siblings: it is let go, to
    /// attach deeper as a leaf instead of holding up a branch.
    case moveDown
    /// What this node's own parent sent failed the host's seals: the child
    /// that sees the same is not to blame this node for it (it moves away).
    case upstreamRefused

    static let types: [RoomMessage.Kind] = [.relayFull, .relayMoveDown, .relayRedirect, .relayUpstreamRefused]

    public var encoded: [UInt8] {
        switch self {
        case .full: return [RoomMessage.Kind.relayFull.rawValue]
        case .moveDown: return [RoomMessage.Kind.relayMoveDown.rawValue]
        case .upstreamRefused: return [RoomMessage.Kind.relayUpstreamRefused.rawValue]
        case .redirect(let nodes):
            var w = ByteWriter(capacity: 2 + 32 * nodes.count)
            w.write(RoomMessage.Kind.relayRedirect.rawValue)
            w.write(UInt8(nodes.count))
            for node in nodes { w.write(bytes: node.publicKey) }
            return w.bytes
        }
    }

    static func parse(_ bytes: ArraySlice<UInt8>) throws(RoomError) -> RelaySignal {
        guard let type = bytes.first else { throw .truncated }
        guard type == RoomMessage.Kind.relayRedirect.rawValue else {
            guard bytes.count == 1 else { throw .trailingBytes }
            switch type {
            case RoomMessage.Kind.relayFull.rawValue: return .full
            case RoomMessage.Kind.relayMoveDown.rawValue: return .moveDown
            default: return .upstreamRefused
            }
        }
        var r = ByteReader(bytes.dropFirst())
        guard let count = try? r.readUInt8() else { throw .truncated }
        guard (1...UInt8(RoomMessage.maxRedirects)).contains(count) else { throw .badRedirectCount(count) }
        var nodes: [NodeID] = []
        for _ in 0..<count {
            guard let key = try? r.readBytes(32) else { throw .truncated }
            guard let node = try? NodeID(publicKey: Array(key)) else { throw .badNodeID }
            nodes.append(node)
        }
        guard r.isAtEnd else { throw .trailingBytes }
        return .redirect(nodes)
    }

    /// The media tree's: the node driver hands it to the tree (`NodeEvent.relaySignal`).
    func received(from peer: NodeID, by node: RoomNode) { node.onSignal?(.relay(peer, self)) }
}

extension RoomMessage {
    /// Most children a redirect names.
    public static let maxRedirects = 4
}

extension RoomMessage.Kind {
    public static let relayFull = Self(rawValue: 8)
    public static let relayMoveDown = Self(rawValue: 9)
    public static let relayRedirect = Self(rawValue: 11)
    public static let relayUpstreamRefused = Self(rawValue: 20)
}
