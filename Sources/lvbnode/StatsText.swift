import LVBCore
import LVBMedia
import LVBRoom
import LVBTransport

/// `/stats` for a person: a few readable lines (the JSON is for `--json`).
enum StatsText {
    static func describe(transport t: TransportStats, room: RoomNode, node: LiveNode) -> String {
        let g = room.gossip.stats
        var lines = [
            "sessions \(node.core.peers.filter(\.established).count) · in \(t.datagramsIn) datagrams (\(bytes(t.bytesIn)))"
                + " · out \(t.datagramsOut) (\(bytes(t.bytesOut))) · handshakes \(t.handshakesCompleted)"
                + " · cookie replies \(t.cookieRepliesSent)",
            "dropped \(t.droppedTotal) (malformed \(t.droppedMalformed), bad mac1 \(t.droppedMAC1),"
                + " failed decryption \(t.droppedDecrypt), replayed \(t.droppedReplay), unknown index \(t.droppedUnknownIndex))",
            "room: \(room.state?.count ?? 0) members · \(room.state?.likeTotal ?? 0) likes · events delivered \(g.delivered)"
                + " (copies \(g.eventCopiesReceived), duplicates \(g.duplicates)) · rejected \(room.rejectedEvents)"
                + " · invalid \(g.invalid) · neighbours \(room.gossip.active.count)",
        ]
        if let origin = node.media.publisher {
            let f = origin.fanOut.stats, p = node.publishing.pump?.counters.snapshot ?? PumpCounters.Snapshot()
            lines.append("streaming to \(origin.subscriberCount) viewers · \(p.frames) frames (\(p.keyframes) keyframes)"
                         + " · target \(origin.targetVideoKbps) kbit/s · sent \(bytes(f.bytesSent))"
                         + " · retransmissions \(f.retransmissions) · keyframe requests \(origin.stats.plisReceived)")
        }
        if let receiver = node.media.receivers[room.host] {
            let v = receiver.video.stats, a = receiver.audio.stats
            var line = "watching: \(v.framesDecoded) frames decoded, \(v.skippedFrames) skipped · video lost \(v.lost),"
                + " recovered \(v.recovered) · audio lost \(a.lost), FEC \(a.fecRecovered), concealed \(a.concealed)"
            if let g2g = node.viewing.sinks?.videoLatency.overall {
                line += " · glass-to-glass p50 \(Int(g2g.p50.rounded())) ms, p95 \(Int(g2g.p95.rounded())) ms"
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n    ")
    }

    private static func bytes(_ n: Int) -> String {
        switch n {
        case ..<10_000: "\(n) B"
        case ..<10_000_000: "\(n / 1000) kB"
        default: "\(n / 1_000_000) MB"
        }
    }
}
