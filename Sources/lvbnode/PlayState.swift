#if canImport(Glibc)
import Glibc
#endif
import LVBCore
import LVBCrypto
import LVBMedia
import LVBReplay
import LVBTransport
import LVBWeb
import NIOCore
import NIOPosix

/// The player's state, on the node's loop only (its studio page's part:
/// ReplayRunner+Page.swift): a replay node's, or a live viewer's whose
/// page plays a replay from its room list (no termination: the live node
/// ends as it does).
final class PlayState: @unchecked Sendable {
    let id: ReplayID?
    let out: Output
    let sinks: MediaSinks
    let termination: Termination?
    var fetcher: ReplayFetcher?
    var player: ReplayPlayer?
    var publisher: EncodedFramePublisher?
    var shown = 0
    /// Serving what this node holds, and keeping what it fetches.
    var holding: ReplayHolding?
    var keepBudget: Int64?
    var keptSegments: Set<Int> = []
    /// The studio page (`--web`): the pictures and sound, the position, the controls.
    var page: StudioServer?
    var nodeID: NodeID?
    var pageStatus = "entering"
    var lastPageState: Instant?
    /// The replay's title before its manifest is here (from the list it was picked in).
    var title: String?
    /// The live room this node is still in (a live viewer's page playing a replay), which the page can go back to.
    var liveRoom: String?
    /// The `replay_info` line, for a page that connects later.
    var infoLine: String?
    /// Holders waiting for this node's session with a rendezvous, which
    /// introduces us to each (both sides dial at once, so the punch crosses
    /// both NATs; a holder behind a NAT drops a dial it was not told of),
    /// and since when: after `holderDialFallback` they are dialled without.
    var unreached: [ReplayListMessage.Holder] = []
    var unreachedSince: Instant?
    var core: TransportCore?
    static let holderDialFallback: Duration = .seconds(3)
    /// Controls given before the manifest came (a /seek typed at once):
    /// kept, and applied when it comes.
    var early = EarlyControls()

    struct EarlyControls {
        var seek: UInt32?
        var paused = false
        var speed: Double?
    }

    init(id: ReplayID?, out: Output, sinks: MediaSinks, termination: Termination?) {
        self.id = id
        self.out = out
        self.sinks = sinks
        self.termination = termination
        sinks.onEvent = { [out] event in
            switch event {
            case let .firstFrame(ms, width, height, _, _):
                out.emit(Reporters.firstFrameLine(ms: ms, width: width, height: height), human: "first picture \(Duration.milliseconds(ms).millisecondsText) ms after starting (\(width)x\(height))", kind: "media")
            case let .recording(path):
                out.emit(JSONLine(event: "recording", ("path", path)), human: "recording to \(path)", kind: "media")
            case let .failed(why):
                Output.fail(why)
            }
        }
    }

    func serve(_ library: ReplayLibrary, core: TransportCore, addresses: [PeerAddress], keepBudget: Int64?) {
        holding = ReplayHolding(library: library, core: core, clock: SystemClock.shared, addresses: addresses)
        holding?.sendsThumbnails(maxPayload: core.maxPayload)
        self.keepBudget = keepBudget
    }

    func start(core: TransportCore) {
        self.core = core
        guard let id else { return }
        let fetcher = ReplayFetcher(id: id, clock: SystemClock.shared) { peer, bytes in try? core.send(bytes, channel: .replay, to: peer) }
        fetcher.onEvent = { [unowned self] event in
            switch event {
            case let .manifest(m): begin(m, core: core)
            case let .segment(i, bytes):
                player?.add(i, bytes)
                keep(i, bytes)
            case let .dropped(peer, why):
                var l = JSONLine(event: "warning")
                l.add("message", "left holder \(peer.short) out: \(why)")
                out.emit(l, human: "left holder \(peer.short) out: \(why)", kind: "warning")
            }
        }
        self.fetcher = fetcher
    }

    private func begin(_ m: ReplayManifest, core: TransportCore) {
        let p = ReplayPlayer(manifest: m, clock: SystemClock.shared)
        p.onVideo = { [unowned self] frame, _ in
            shown += 1
            sinks.video(frame)
            if let page, page.clientCount > 0 { page.broadcast(StudioMediaFrame(frame)) }
            if let publisher, let rtp = try? publisher.video(frame.encoded, keyframe: frame.isKeyframe, captureMicros: NTPTime.unixMicros(frame.captureTime)) {
                for packet in rtp.packets { sinks.packet(packet) }
            }
        }
        p.onCatchUp = { [unowned self] payload, keyframe, ms in
            guard let page, page.clientCount > 0 else { return }
            var f = StudioMediaFrame(kind: .video, isKeyframe: keyframe, captureMicros: 0, rtpTimestamp: ms &* 90, payload: payload)
            f.catchUp = true
            page.broadcast(f)
        }
        p.onAudio = { [unowned self] frame, _ in
            sinks.audio(frame)
            if let page, page.clientCount > 0, let f = StudioMediaFrame(frame) { page.broadcast(f) }
            if let publisher, let encoded = frame.encoded, let packet = try? publisher.audio(encoded, captureMicros: NTPTime.unixMicros(frame.captureTime)) {
                sinks.packet(packet)
            }
        }
        p.onEvent = { [unowned self] event in
            switch event {
            case let .firstFrame(after, at):
                var l = JSONLine(event: "replay_frame")
                l.add("at_ms", Int(at))
                l.add("after_ms", after)
                out.emit(l, human: "playing from \(ReplaysCommand.List.duration(at)) (\(Duration.milliseconds(after).millisecondsText) ms)", kind: "replay")
                setPageStatus("replay")
            case let .waiting(segment):
                var l = JSONLine(event: "replay_waiting")
                l.add("segment", segment)
                out.emit(l, human: "waiting for segment \(segment)", kind: "replay")
                setPageStatus("loading")
            case let .resumed(after):
                var l = JSONLine(event: "replay_resumed")
                l.add("stalled_ms", after)
                out.emit(l, human: "playing again after waiting \(Duration.milliseconds(after).millisecondsText) ms", kind: "replay")
                setPageStatus("replay")
            case .ended:
                out.emit(JSONLine(event: "replay_ended"), human: "the replay ended", kind: "replay")
                setPageStatus("replay_ended")
                // A page can seek back: with one, the node stays until /quit or a signal.
                if page == nil { termination?.finish(.replayEnded) }
            }
        }
        player = p
        publisher = try? EncodedFramePublisher(videoSSRC: 0x5245_5056, audioSSRC: 0x5245_5041, maxPacketSize: core.maxPayload,
                                                clock: SystemClock.shared, random: SodiumRandom.shared)
        var l = JSONLine(event: "replay_info")
        l.add("id", m.id.text)
        l.add("title", m.title)
        l.add("host", m.host.text)
        l.add("duration_ms", Int(m.durationMs))
        l.add("segments", m.segments.count)
        l.add("ended", m.ended)
        infoLine = l.text
        out.emit(l, human: "\"\(m.title)\" by \(m.host.short): \(ReplaysCommand.List.duration(m.durationMs)), \(m.segments.count) segments", kind: "replay")
        if let x = early.speed { p.setSpeed(x) }
        if let target = early.seek {
            p.seek(to: target)
            say("seeking to \(ReplaysCommand.List.duration(min(target, m.durationMs))) (asked before the replay was here)", seek: true)
        }
        if early.paused { say("paused at \(position) (asked before the replay was here)") } else { p.play() }
        early = EarlyControls()
    }

    /// With --keep-replays: the segment goes into the library (and so is served).
    private func keep(_ index: Int, _ bytes: [UInt8]) {
        guard let library = holding?.server.library, let keepBudget, let fetcher, let m = fetcher.manifest, let raw = fetcher.manifestBytes else { return }
        do {
            for old in try library.keep(raw, manifest: m, segment: index, bytes, budget: keepBudget) {
                out.emit(JSONLine(event: "replay_deleted", ("id", old.text)), human: "deleted the oldest replay \(old.text) to keep within --replay-budget", kind: "replay")
            }
            keptSegments.insert(index)
            if keptSegments.count == m.segments.count {
                holding?.announcer.refresh()
                var l = JSONLine(event: "replay_kept")
                l.add("id", m.id.text)
                l.add("path", library.directory(of: m.id))
                out.emit(l, human: "kept the whole replay in \(library.directory(of: m.id)); serving it", kind: "replay")
            }
        } catch {
            self.keepBudget = nil
            var l = JSONLine(event: "warning")
            l.add("message", "\(error); the replay plays on without being kept")
            out.emit(l, human: "\(error); the replay plays on without being kept", kind: "warning")
        }
    }

    /// The holders to fetch from: reached through the rendezvous's
    /// introductions once the session with it is up (without a
    /// rendezvous, dialled now).
    func reach(_ holders: [ReplayListMessage.Holder], throughRendezvous: Bool) {
        for h in holders { fetcher?.addHolder(h.id) }
        unreached += holders
        unreachedSince = SystemClock.shared.now()
        if !throughRendezvous || core?.hasRendezvousSession == true { reachUnreached() }
    }

    private func reachUnreached() {
        guard let core else { return }
        for h in unreached { core.reach(h.id, at: h.addresses) }
        unreached = []
        unreachedSince = nil
    }

    func handle(_ event: TransportEvent) {
        // Requests (and a rendezvous coming up) are the holding's; chunks and missing the fetcher's.
        holding?.handle(event)
        switch event {
        case let .hello(_, hello) where hello.role == .rendezvous:
            reachUnreached()
        case let .message(peer, .replay, payload) where !ReplayListMessage.isListMessage(payload) && !ReplayMessage.isRequest(payload):
            fetcher?.receive(payload, from: peer)
        case let .gone(peer, _):
            fetcher?.removeHolder(peer)
        default:
            break
        }
    }

    func tick() {
        if let since = unreachedSince, SystemClock.shared.now() - since >= Self.holderDialFallback { reachUnreached() }
        if let player {
            // Keeping: every segment not kept yet, after those the player needs first.
            let wanted = player.wanted
            let rest = keepBudget == nil ? [] : player.manifest.segments.indices.filter { !keptSegments.contains($0) && !wanted.contains($0) }
            fetcher?.want(wanted + rest)
        }
        fetcher?.tick()
        player?.tick()
        holding?.tick()
        // The page's scrubber moves with the position: four times a second.
        let now = SystemClock.shared.now()
        if lastPageState.map({ now - $0 >= .milliseconds(250) }) ?? true, let page, page.clientCount > 0 {
            lastPageState = now
            page.broadcast(stateLine(text: nil, seek: false).text)
        }
    }

    /// /seek, /pause, /play, /speed, /quit.
    func command(_ line: String) {
        let words = line.split(separator: " ").map(String.init)
        guard let verb = words.first else { return }
        switch verb {
        case "/quit": termination?.finish(.quit)
        case "/pause": pause()
        case "/play": play()
        case "/speed":
            guard words.count == 2, let x = Double(words[1]), (0.25...4).contains(x) else { return wrong("/speed X: from 0.25 to 4") }
            setSpeed(x)
        case "/seek":
            guard words.count == 2, let target = Self.seekTarget(words[1], from: player?.positionMs ?? early.seek ?? 0) else {
                return wrong("/seek SECONDS, MM:SS, +SECONDS or -SECONDS")
            }
            seek(to: target)
        case "/position": say("at \(position) of \(player.map { ReplaysCommand.List.duration($0.manifest.durationMs) } ?? "?")")
        case "/help": say("/seek [+-]SECONDS|MM:SS, /pause, /play, /speed X, /position, /quit")
        default: wrong("\(verb) is not a replay command; /help lists them")
        }
    }

    // The controls, the console's and the page's.

    func seek(to target: UInt32) {
        guard let player else {
            early.seek = target
            return say("the replay is not here yet: seeking to \(ReplaysCommand.List.duration(target)) once it is")
        }
        player.seek(to: target)
        say("seeking to \(ReplaysCommand.List.duration(target))", seek: true)
    }

    func pause() {
        guard let player else {
            early.paused = true
            return say("the replay is not here yet: it starts paused")
        }
        player.pause()
        say("paused at \(position)")
    }

    func play() {
        guard let player else {
            early.paused = false
            return say("the replay is not here yet: it plays once it is")
        }
        player.play()
        say("playing from \(position)")
    }

    /// 0.25 to 4 (checked by the caller).
    func setSpeed(_ x: Double) {
        let what = "speed \(x)\(x == 1 ? "" : " (no sound but at 1)")"
        guard let player else {
            early.speed = x
            return say("the replay is not here yet: \(what) once it is")
        }
        player.setSpeed(x)
        say(what)
    }

    var position: String { player.map { ReplaysCommand.List.duration($0.positionMs) } ?? early.seek.map(ReplaysCommand.List.duration) ?? "0:00" }

    /// "90", "1:30", "+10", "-5" from the position `now` (ms).
    static func seekTarget(_ text: String, from now: UInt32) -> UInt32? {
        if let sign = text.first, sign == "+" || sign == "-", let s = Double(text.dropFirst()), s >= 0 {
            let delta = Int64(s * 1000)
            return UInt32(clamping: max(0, Int64(now) + (sign == "+" ? delta : -delta)))
        }
        let parts = text.split(separator: ":")
        if parts.count == 2, let m = Int(parts[0]), let s = Double(parts[1]), m >= 0, s >= 0, s < 60 {
            return UInt32(clamping: Int64((Double(m) * 60 + s) * 1000))
        }
        if parts.count == 1, let s = Double(text), s >= 0 { return UInt32(clamping: Int64(s * 1000)) }
        return nil
    }

    /// `seek`: what follows starts again from a keyframe (a page's decoders start over).
    private func say(_ text: String, seek: Bool = false) {
        out.emit(stateLine(text: text, seek: seek), human: text, kind: "replay")
    }

    func stateLine(text: String?, seek: Bool) -> JSONLine {
        var l = JSONLine(event: "replay_state")
        l.add("text", text)
        l.add("position_ms", Int(player?.positionMs ?? 0))
        if let player { l.add("duration_ms", Int(player.manifest.durationMs)) }
        l.add("playing", player?.isPlaying ?? false)
        l.add("speed", player?.speed ?? 1)
        if seek { l.add("seek", true) }
        return l
    }

    func wrong(_ text: String) { out.error(text) }

    func summary() -> String {
        var o = JSONLine()
        o.add("frames", shown)
        o.add("kept", keptSegments.count)
        if let s = holding?.server.stats {
            o.add("served_chunks", s.chunksSent)
            o.add("served_bytes", s.bytesSent)
        }
        if let s = fetcher?.stats {
            o.add("requests", s.requests)
            o.add("timeouts", s.timeouts)
            o.add("bad_files", s.badFiles)
            var from = JSONLine()
            for (peer, bytes) in s.bytesFrom.sorted(by: { $0.key.text < $1.key.text }) { from.add(peer.text, bytes) }
            o.addRaw("bytes_from", from.text)
        }
        return o.text
    }
}
