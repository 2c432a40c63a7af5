import LVBCore
import LVBCrypto
import LVBMedia

/// Which of the host's pictures reached which node in time, for scenarios
/// of many viewers: the host's frames are noted as they leave it, each
/// node's RTP as it arrives (before its relay and receiver); a picture
/// counts for a node when every packet of it arrived within `deadline` of
/// the host sending it.
public final class PictureLedger {
    public let deadline: Duration
    private let clock: Clock
    /// The host's pictures: RTP timestamp → when sent and how many packets.
    public private(set) var sent: [UInt32: (at: Instant, packets: Int)] = [:]
    /// Per node: packets of each picture so far, and when each picture was complete.
    private var arriving: [NodeID: [UInt32: Set<UInt16>]] = [:]
    private var complete: [NodeID: [UInt32: Instant]] = [:]

    public init(clock: Clock, deadline: Duration = .milliseconds(500)) {
        self.clock = clock
        self.deadline = deadline
    }

    /// The host sent `frame` now (tap `PublishedStream.tap(video:)`).
    public func sent(_ frame: EncodedMediaFrame) {
        guard let first = frame.packets.first else { return }
        sent[first.timestamp] = (clock.now(), frame.packets.count)
    }

    /// An RTP packet reached `id` now (`NodeMedia.tapArrivals`).
    public func arrived(_ packet: ArraySlice<UInt8>, at id: NodeID) {
        let b = packet.startIndex
        guard packet.count >= 12, packet[b + 1] & 0x7F == MediaConstants.videoPayloadType else { return }
        let seq = UInt16(packet[b + 2]) << 8 | UInt16(packet[b + 3])
        let ts = packet[(b + 4)..<(b + 8)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard let frame = sent[ts], complete[id]?[ts] == nil else { return }
        var got = arriving[id]?[ts] ?? []
        got.insert(seq)
        if got.count >= frame.packets {
            complete[id, default: [:]][ts] = clock.now()
            arriving[id]?[ts] = nil
        } else {
            arriving[id, default: [:]][ts] = got
        }
    }

    /// Pictures the host sent from `start` whose deadline passed by `end`
    /// that reached `id` in time, and how many it sent.
    public func delivered(_ id: NodeID, from start: Instant, to end: Instant) -> (got: Int, of: Int) {
        var got = 0, of = 0
        let arrivals = complete[id] ?? [:]
        for (ts, frame) in sent where frame.at >= start && frame.at + deadline <= end {
            of += 1
            if let at = arrivals[ts], at - frame.at <= deadline { got += 1 }
        }
        return (got, of)
    }

    /// When `id` first and last completed a picture.
    public func firstPicture(_ id: NodeID) -> Instant? { complete[id]?.values.min() }
    public func lastPicture(_ id: NodeID) -> Instant? { complete[id]?.values.max() }
}

extension PictureLedger {
    /// The pictures `id` missed, for a failure message: when each was sent
    /// (ms after `start`) and how late it completed (nil: never).
    public func misses(_ id: NodeID, from start: Instant, to end: Instant) -> [(sent: Double, late: Double?)] {
        sent.filter { $0.value.at >= start && $0.value.at + deadline <= end }.compactMap { ts, frame in
            let at = complete[id]?[ts]
            if let at, at - frame.at <= deadline { return nil }
            return ((frame.at - start).milliseconds, at.map { ($0 - frame.at).milliseconds })
        }.sorted { $0.sent < $1.sent }
    }
}
