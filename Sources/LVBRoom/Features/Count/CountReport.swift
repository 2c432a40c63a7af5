import LVBCore
import LVBCrypto
import LVBGossip

/// A member's part in counting the room (`PresenceCount`), sent to each
/// gossip neighbour every `countReportInterval` and, when what it speaks for
/// changes, to its upstream at once. It is also how neighbours know each
/// other are alive.
///
///    12 count report   hops(1: 0...64) ‖ upstream(1: 0 or 1) ‖ subtree(4)
///                      hops from the host (64: no route); whether the
///                      receiver is the sender's upstream; the members the
///                      sender speaks for (0 unless upstream is 1); from
///                      the host (hops 0), the room's count
struct CountReport: RoomMessageContent, Equatable {
    var report: PresenceCount.Report

    static let types: [RoomMessage.Kind] = [.countReport]

    var encoded: [UInt8] {
        var w = ByteWriter(capacity: 7)
        w.write(RoomMessage.Kind.countReport.rawValue)
        w.write(report.hops)
        w.write(UInt8(report.upstream ? 1 : 0))
        w.write(report.subtree)
        return w.bytes
    }

    static func parse(_ bytes: ArraySlice<UInt8>) throws(RoomError) -> CountReport {
        var r = ByteReader(bytes.dropFirst())
        guard let hops = try? r.readUInt8(), let flag = try? r.readUInt8(), let subtree = try? r.readUInt32() else { throw .truncated }
        guard r.isAtEnd else { throw .trailingBytes }
        guard hops <= PresenceCount.unreachable, flag <= 1, flag == 1 || subtree == 0 || hops == 0 else { throw .badCountReport }
        return CountReport(report: .init(hops: hops, upstream: flag == 1, subtree: subtree))
    }

    func received(from peer: NodeID, by node: RoomNode) { node.feature(RoomCount.self)?.reported(report, from: peer) }
}

extension RoomMessage.Kind {
    static let countReport = Self(rawValue: 12)
}
