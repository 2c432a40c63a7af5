import LVBCore
import LVBCrypto
import LVBGossip

/// Signed relay positions passed along the media tree rather than gossiped
/// to the whole room (`TreeView`): a member sends its own to the host and
/// to its parent; the host sends its directory (the best free slots and the
/// chains above them) down the tree and to each joiner it turns away; each
/// relay passes on what its parent sent, with its own. As many as one
/// datagram holds.
///
///    15 positions   count(1: 1...8) ‖ (length(2) ‖ event) × count:
///                   signed relay positions (event kind 12)
struct PositionsMessage: RoomMessageContent, Equatable {
    var events: [[UInt8]]

    static let types: [RoomMessage.Kind] = [.positions]
    /// Most positions one message carries.
    static let maxEvents = 8

    var encoded: [UInt8] {
        var w = ByteWriter(capacity: 1 + EventList.size(events))
        w.write(RoomMessage.Kind.positions.rawValue)
        EventList.write(events, into: &w)
        return w.bytes
    }

    static func parse(_ bytes: ArraySlice<UInt8>) throws(RoomError) -> PositionsMessage {
        var r = ByteReader(bytes.dropFirst())
        guard let count = try? r.readUInt8() else { throw .truncated }
        guard count >= 1, Int(count) <= maxEvents else { throw .badPositionsCount(count) }
        let events = try EventList.read(count, from: &r)
        guard r.isAtEnd else { throw .trailingBytes }
        return PositionsMessage(events: events)
    }

    /// `events` cut into messages that each fit `limit` bytes (an event
    /// alone too long for one is left out: positions are far smaller).
    static func bundles(_ events: [[UInt8]], limit: Int) -> [PositionsMessage] {
        var out: [PositionsMessage] = []
        var current: [[UInt8]] = [], size = 2
        for e in events where 2 + 2 + e.count <= limit {
            if current.count == maxEvents || size + 2 + e.count > limit {
                out.append(PositionsMessage(events: current))
                (current, size) = ([], 2)
            }
            current.append(e)
            size += 2 + e.count
        }
        if !current.isEmpty { out.append(PositionsMessage(events: current)) }
        return out
    }

    func received(from peer: NodeID, by node: RoomNode) { node.positionsReceived(events, from: peer) }
}

extension RoomMessage.Kind {
    static let positions = Self(rawValue: 15)
}
