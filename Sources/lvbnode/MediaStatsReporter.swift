import LVBCore
import LVBMedia
import LVBRoom

/// Builds the media part of `stats` lines (every 2 s with --json) and of the
/// exit line from the node's counters: the publisher's and the received
/// stream's. Rates are over the last interval, the exit line's over the run.
final class MediaStatsReporter {
    /// Set on the loop before the node starts.
    var node: LiveNode?
    private let startedAt = SystemClock.shared.now()
    private var last: (at: Instant, frames: Int, videoBytes: Int, audioBytes: Int, sentBytes: Int)?
    private var lastViewer: (frames: Int, videoBytes: Int, audioBytes: Int) = (0, 0, 0)

    /// One JSON object: the host's or the viewer's figures; nil without media.
    func json(final: Bool) -> String? {
        guard let node else { return nil }
        let now = SystemClock.shared.now()
        let since = final ? (at: startedAt, frames: 0, videoBytes: 0, audioBytes: 0, sentBytes: 0)
                          : last ?? (startedAt, 0, 0, 0, 0)
        let seconds = max(0.001, (now - since.at).seconds)
        var o = JSONLine()
        if node.room.isHost, let origin = node.media.publisher {
            let f = origin.fanOut.stats, s = origin.stats
            let p = node.publishing.pump?.counters.snapshot ?? PumpCounters.Snapshot()
            o.add("role", "host")
            o.add("viewers", origin.subscriberCount)
            o.add("fps", rounded(Double(p.frames - since.frames) / seconds))
            o.add("video_kbps", rounded(Double(p.videoBytes - since.videoBytes) * 8 / 1000 / seconds))
            o.add("audio_kbps", rounded(Double(p.audioBytes - since.audioBytes) * 8 / 1000 / seconds))
            o.add("send_kbps", rounded(Double(f.bytesSent - since.sentBytes) * 8 / 1000 / seconds))
            o.add("target_kbps", origin.targetVideoKbps)
            o.add("frames", p.frames)
            o.add("keyframes", p.keyframes)
            o.add("encode_ms", rounded(p.frames > 0 ? Double(p.encodeNanos) / 1e6 / Double(p.frames) : 0))
            o.add("retransmissions", f.retransmissions)
            o.add("nacks", f.nacksReceived)
            o.add("plis", s.plisReceived)
            o.add("viewer_loss", rounded(origin.subscriberLoss))
            if let rtt = origin.subscriberRTT { o.add("rtt_ms", rtt.milliseconds) }
            o.add("gop_bursts", f.gopBursts)
            // The seals over what it publishes (lvbnode-protocol(7), Seals).
            if let sealer = origin.sealer?.stats {
                o.add("seals", sealer.videoSeals + sealer.audioSeals)
                o.add("seal_bytes", sealer.bytesAdded)
            }
            if let mixer = node.publishing.mixer {
                // Link-mic: co-hosts mixed in, and what mixing them cost per picture (decoding them is the receivers').
                o.add("guests", mixer.guestCount)
                o.add("layout", mixer.layout.rawValue)
                o.add("mix_ms", rounded(p.mixedFrames > 0 ? Double(p.mixNanos) / 1e6 / Double(p.mixedFrames) : 0))
                // What arrived from co-hosts now on stage (a host receives only their streams).
                let guests = node.media.receivers.values
                o.add("guest_video_frames", guests.reduce(0) { $0 + $1.video.stats.framesDecoded })
                o.add("guest_audio_packets", guests.reduce(0) { $0 + $1.audio.stats.packets })
                // A PK: the other host's stream, as it arrives to be mixed into the right half.
                if let other = node.publishing.pkPartner, let r = node.media.receivers[other] {
                    o.add("pk_video_frames", r.video.stats.framesDecoded)
                    o.add("pk_audio_packets", r.audio.stats.packets)
                }
            }
            if !final { last = (now, p.frames, p.videoBytes, p.audioBytes, f.bytesSent) }
        } else if let sinks = node.viewing.sinks {
            viewer(&o, sinks: sinks, receiver: node.media.receivers[node.room.host], final: final, seconds: seconds)
            // A co-host on stage also sends the host its stream.
            o.add("on_stage", node.media.publisher != nil)
            if let p = node.publishing.pump?.counters.snapshot { o.add("stage_frames", p.frames) }
            // The studio page's camera on stage in its place (--web): frames and Opus packets taken from the page.
            if let page = node.publishing.outsideStage?.stats {
                o.add("page_frames", page.videoFrames)
                o.add("page_audio_packets", page.audioPackets)
            }
            if !final { last = (now, 0, 0, 0, 0) }
        } else {
            return nil
        }
        if let egress = node.role(StreamEgress.self)?.egress { Self.add(egress.stats, to: &o) }
        return o.text
    }

    /// `--egress`: what went to the media server and what it said back.
    private static func add(_ e: EgressStats, to o: inout JSONLine) {
        o.add("egress_video_packets", e.videoPackets)
        o.add("egress_audio_packets", e.audioPackets)
        o.add("egress_bytes", e.bytes)
        o.add("egress_send_failures", e.sendFailures)
        o.add("egress_held_for_keyframe", e.heldForKeyframe)
        o.add("egress_source_changes", e.sourceChanges)
        o.add("egress_sender_reports", e.senderReports)
        o.add("egress_plis", e.plis)
        o.add("egress_firs", e.firs)
        o.add("egress_nacks", e.nacks)
        o.add("egress_retransmitted", e.retransmitted)
        o.add("egress_not_retransmitted", e.notRetransmitted)
        o.add("egress_rembs", e.rembs)
        o.add("egress_remb_kbps", Int(min(e.rembBitrate / 1000, UInt64(Int.max))))
        o.add("egress_keyframe_requests", e.keyframeRequests)
        o.add("egress_keyframe_requests_aggregated", e.keyframeRequestsAggregated)
        o.add("egress_malformed_rtcp", e.malformedRTCP)
        o.add("egress_stranger_rtcp", e.strangerRTCP)
    }

    private func viewer(_ o: inout JSONLine, sinks: MediaSinks, receiver: StreamReceiver?, final: Bool, seconds: Double) {
        let v = receiver?.video.stats ?? VideoReceiverStats(), a = receiver?.audio.stats ?? AudioReceiverStats()
        let videoBytes = receiver?.videoBytes ?? 0, audioBytes = receiver?.audioBytes ?? 0
        let since = final ? (frames: 0, videoBytes: 0, audioBytes: 0) : lastViewer
        o.add("role", "viewer")
        o.add("fps", rounded(Double(v.framesDecoded - since.frames) / seconds))
        o.add("video_kbps", rounded(Double(videoBytes - since.videoBytes) * 8 / 1000 / seconds))
        o.add("audio_kbps", rounded(Double(audioBytes - since.audioBytes) * 8 / 1000 / seconds))
        o.add("frames", v.framesDecoded)
        o.add("video_packets", v.packets)
        o.add("skipped_frames", v.skippedFrames)
        o.add("video_lost", v.lost)
        o.add("recovered", v.recovered)
        o.add("nacks", v.nacksSent)
        o.add("keyframe_requests", v.keyframeRequests)
        o.add("video_delay_ms", rounded(v.currentDelay.milliseconds))
        o.add("video_jitter_ms", rounded(v.jitter))
        o.add("audio_lost", a.lost)
        o.add("fec_recovered", a.fecRecovered)
        o.add("concealed", a.concealed)
        o.add("audio_delay_ms", rounded(a.currentDelay.milliseconds))
        o.add("audio_jitter_ms", rounded(a.jitter))
        let vl = final ? sinks.videoLatency.overall : sinks.videoLatency.takeInterval()
        let al = final ? sinks.audioLatency.overall : sinks.audioLatency.takeInterval()
        if let vl {
            o.add("video_latency_p50_ms", rounded(vl.p50))
            o.add("video_latency_p95_ms", rounded(vl.p95))
        }
        if let al {
            o.add("audio_latency_p50_ms", rounded(al.p50))
            o.add("audio_latency_p95_ms", rounded(al.p95))
        }
        // The host's seals: what passed, what was refused, whom that blamed.
        if let c = receiver?.checker.stats {
            o.add("verified_frames", c.verifiedFrames)
            o.add("verified_audio", c.verifiedAudio)
            o.add("refused_media", c.refusedTotal)
            for why in SealFailure.allCases where c.refused[why.rawValue, default: 0] > 0 {
                o.add("refused_\(why.rawValue)", c.refused[why.rawValue, default: 0])
            }
            o.add("unverified_audio", c.unverifiedAudio)
            o.add("signature_checks", c.signatureChecks)
            o.add("checks_deferred", c.deferredChecks)
            o.add("from_origin", c.fromOrigin)
        }
        if let tree = node?.tree {
            o.add("lying_parents", tree.liars.count)
            o.add("refusals_excused", tree.refusalsExcused)
        }
        if let path = sinks.recordingPath { o.add("recording", path) }
        if let r = sinks.rtpForwarded { o.add("rtp_forwarded", r.sent) }
        if !final { lastViewer = (v.framesDecoded, videoBytes, audioBytes) }
    }
}

/// Two decimals are plenty for a stats line.
func rounded(_ x: Double) -> Double { (x * 100).rounded() / 100 }
