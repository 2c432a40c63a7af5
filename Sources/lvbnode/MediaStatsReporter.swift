import LVBCore
import LVBMedia
import LVBRoom

/// Builds `stats` lines (every 2 s with --json) and the exit line's media
/// summary from the pipelines' counters: rates are over the last interval.
final class MediaStatsReporter {
    private unowned let runtime: MediaRuntime
    private let sinks: ViewerSinks?
    private let pump: MediaPump?
    private var last: (at: Instant, frames: Int, videoBytes: Int, audioBytes: Int, sentBytes: Int)
    private var lastViewer: (frames: Int, videoBytes: Int, audioBytes: Int) = (0, 0, 0)

    init(runtime: MediaRuntime, sinks: ViewerSinks?, pump: MediaPump?) {
        self.runtime = runtime
        self.sinks = sinks
        self.pump = pump
        last = (SystemClock.shared.now(), 0, 0, 0, 0)
    }

    func line(final: Bool) -> JSONLine {
        var line = JSONLine(event: "stats")
        line.addRaw("media", json(final: final))
        return line
    }

    /// One JSON object: the host's or the viewer's figures.
    func json(final: Bool) -> String {
        var o = JSONLine()
        let now = SystemClock.shared.now()
        // Rates over the last interval; the exit line's over the whole run.
        let last = final ? (at: runtime.startedAt, frames: 0, videoBytes: 0, audioBytes: 0, sentBytes: 0) : self.last
        let lastViewer = final ? (frames: 0, videoBytes: 0, audioBytes: 0) : self.lastViewer
        let seconds = max(0.001, (now - last.at).seconds)
        if let host = runtime.host {
            let b = host.broadcaster.stats
            let p = pump?.counters.snapshot ?? (frames: 0, keyframes: 0, videoBytes: 0, audioBytes: 0, encodeNanos: UInt64(0), targetKbps: 0)
            o.add("role", "host")
            o.add("viewers", host.broadcaster.subscriberCount)
            o.add("fps", rounded(Double(p.frames - last.frames) / seconds))
            o.add("video_kbps", rounded(Double(p.videoBytes - last.videoBytes) * 8 / 1000 / seconds))
            o.add("audio_kbps", rounded(Double(p.audioBytes - last.audioBytes) * 8 / 1000 / seconds))
            o.add("send_kbps", rounded(Double(b.bytesSent - last.sentBytes) * 8 / 1000 / seconds))
            o.add("target_kbps", host.broadcaster.targetVideoKbps)
            o.add("frames", p.frames)
            o.add("keyframes", p.keyframes)
            o.add("encode_ms", rounded(p.frames > 0 ? Double(p.encodeNanos) / 1e6 / Double(p.frames) : 0))
            o.add("retransmissions", b.retransmissions)
            o.add("nacks", b.nacksReceived)
            o.add("plis", b.plisReceived)
            o.add("viewer_loss", rounded(host.broadcaster.viewerLoss))
            if let rtt = host.broadcaster.viewerRTT { o.add("rtt_ms", rtt.milliseconds) }
            o.add("gop_bursts", b.gopBursts)
            if !final { self.last = (now, p.frames, p.videoBytes, p.audioBytes, b.bytesSent) }
        } else if let viewer = runtime.viewer, let sinks {
            let v = viewer.video.stats, a = viewer.audio.stats
            o.add("role", "viewer")
            o.add("fps", rounded(Double(v.framesDecoded - lastViewer.frames) / seconds))
            o.add("video_kbps", rounded(Double(viewer.videoBytes - lastViewer.videoBytes) * 8 / 1000 / seconds))
            o.add("audio_kbps", rounded(Double(viewer.audioBytes - lastViewer.audioBytes) * 8 / 1000 / seconds))
            o.add("frames", v.framesDecoded)
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
            var video = sinks.videoLatency, audio = sinks.audioLatency
            let vl = final ? video.overall : video.takeInterval()
            let al = final ? audio.overall : audio.takeInterval()
            sinks.videoLatency = video
            sinks.audioLatency = audio
            if let vl {
                o.add("video_latency_p50_ms", rounded(vl.p50))
                o.add("video_latency_p95_ms", rounded(vl.p95))
            }
            if let al {
                o.add("audio_latency_p50_ms", rounded(al.p50))
                o.add("audio_latency_p95_ms", rounded(al.p95))
            }
            if let path = sinks.recordingPath { o.add("recording", path) }
            if let r = sinks.rtpForwarded { o.add("rtp_forwarded", r.sent) }
            if !final {
                self.last.at = now
                self.lastViewer = (v.framesDecoded, viewer.videoBytes, viewer.audioBytes)
            }
        }
        return o.text
    }
}

/// Two decimals are plenty for a stats line.
func rounded(_ x: Double) -> Double { (x * 100).rounded() / 100 }
