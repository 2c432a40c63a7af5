// Live media with the host's seals on and off (issue 50), as processes on
// loopback: a host (--relay-slots 1), a viewer below it (a direct child,
// depth 1, which takes the host's stream over its session with the host)
// and a viewer below that one (depth 2: relayed, so every seal is checked),
// both decoding. Glass-to-glass of video and audio of each, the median over
// the window's 2 s stats of their p50 and p95, with seals (the default) and
// without (--unsealed on every node: the switch), alternating, clean and
// with 5 % of the datagrams into every node dropped (--inbound-loss 0.05).
// Goals: audio p95 ≤ 25 ms clean at both depths, audio no more than 20 ms
// behind video.

extension MediaBench {
    static let goalSealedAudioP95 = 25.0, goalAudioBehindVideo = 20.0

    static func printSealLatency(_ binary: String, _ dir: String, _ video: [String], seconds: Double) {
        let window = max(6, min(20, seconds + 5))
        say("seals on and off: host → viewer (depth 1, the host's own session) → viewer (depth 2, relayed); "
            + "\(fixed(window, 0)) s windows, alternating")
        let stream = video + ["--size", "\(width)x\(height)", "--fps", "\(fps)", "--gop", fixed(gopSeconds, 0),
                              "--bitrate", "\(bitrateKbps)"]
        for loss in [nil, loss] as [Double?] {
            for sealed in [true, false] {
                let options = (sealed ? [] : ["--unsealed"]) + (loss.map { ["--inbound-loss", fixed($0, 2)] } ?? [])
                let label = (sealed ? "sealed" : "--unsealed") + (loss.map { ", \(fixed($0 * 100, 0)) % loss" } ?? ", clean")
                let tag = "seal-\(sealed ? "on" : "off")-\(loss == nil ? "clean" : "loss")"
                switch Result(catching: {
                    try TreeBench.chainRun(binary, dir, tag, stream + options, hostSlots: 1, TreeBench.chain(decoding: [1, 2], length: 2),
                                           window: window, viewerOptions: options)
                }) {
                case .failure(let error):
                    say("  \(label): FAILED: \(error)")
                case .success(let byDepth):
                    for depth in byDepth.keys.sorted() {
                        guard let l = byDepth[depth] else { continue }
                        let audio = "\(l.audioP50.map { fixed($0, 1) } ?? "?") / \(l.audioP95.map { fixed($0, 1) } ?? "?")"
                        let behind = l.audioP95.map { $0 - l.p95 }
                        let value = "video \(fixed(l.p50, 1)) / \(fixed(l.p95, 1)), audio \(audio) ms"
                        let name = label + ", depth \(depth)"
                        if sealed && loss == nil {
                            let ok = (l.audioP95.map { $0 <= goalSealedAudioP95 } ?? false) && (behind.map { $0 <= goalAudioBehindVideo } ?? false)
                            row(name, value, goal: "audio p95 ≤ \(fixed(goalSealedAudioP95, 0)), ≤ \(fixed(goalAudioBehindVideo, 0)) behind", ok: ok,
                                note: behind.map { "audio − video p95 \(fixed($0, 1)) ms" })
                        } else {
                            row(name, value, note: behind.map { "audio − video p95 \(fixed($0, 1)) ms" })
                        }
                    }
                }
            }
        }
    }
}
