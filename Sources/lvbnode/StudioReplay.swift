import LVBCore
import LVBCrypto
import LVBGossip
import LVBMedia
import LVBRendezvous
import LVBReplay
import LVBRoom
import LVBTransport
import LVBWeb
import NIOCore

/// A live viewer's page playing a replay from its room list (`{"cmd":
/// "replay"}`): the node finds the replay's holders through its rendezvous
/// and plays it to the page as `join REPLAY-ID --web` does — scrubber,
/// pause, speed — while it stays in its live room: it keeps relaying to the
/// viewers below it, and the room's latest group of pictures is kept so
/// that a click on the room (or any switch) shows the live again at once.
/// Only the page plays the replay; the node's own outputs (`--video-out`,
/// `--record`, …) stay on the live. Everything here runs on the node's loop.
final class StudioReplay: LiveRole {
    private let server: StudioServer
    private let browser: RoomBrowser
    private let core: TransportCore
    private let loop: EventLoop
    private let out: Output
    /// The live room this node stays in meanwhile.
    private let liveRoom: () -> RoomID
    /// The replay playing now, its ticker and the holders reached for it.
    private(set) var state: PlayState?
    private var ticker: RepeatedTask?
    private var holders: [NodeID] = []
    /// Asked of the rendezvous, holders not answered yet.
    private var finding: ReplayID?
    /// The live room's pictures from its latest keyframe on, kept while the replay plays.
    private var liveGOP: [StudioMediaFrame] = []
    private var liveGOPBytes = 0
    /// The page's greeting (the replay's while one plays, else the room's), with the room list.
    var greeting: () -> [String] = { [] }
    /// Sessions the node holds for other reasons (the room, a preload, the rendezvous) stay when the replay ends.
    var isNeeded: (NodeID) -> Bool = { _ in true }

    /// At most this much of the live's group of pictures is kept (a longer group waits for the next keyframe).
    static let maxGOPBytes = 4 << 20

    init(server: StudioServer, browser: RoomBrowser, core: TransportCore, loop: EventLoop, out: Output, liveRoom: @escaping () -> RoomID) {
        self.server = server
        self.browser = browser
        self.core = core
        self.loop = loop
        self.out = out
        self.liveRoom = liveRoom
        browser.onReplayHolders = { [unowned self] id, holders in found(id, holders) }
    }

    /// The page asked for replay `text` (an id from its list).
    func start(_ text: String) {
        guard let id = try? ReplayID(text: text), browser.replay(id) != nil else {
            return fail("replay \(text) is not in this node's list (it may no longer be held); the room list shows the replays there are")
        }
        guard id != state?.id else { return }
        guard browser.findReplay(id) else { return fail("not connected to the rendezvous yet; try again in a moment") }
        finding = id
    }

    /// Back to the live room: the replay stops and the page gets the room's greeting and its latest pictures.
    /// False when no replay was playing.
    @discardableResult
    func stopPlaying() -> Bool {
        finding = nil
        guard let state else { return false }
        endReplay()
        out.emit(JSONLine(event: "replay_stopped", ("id", state.id?.text)), human: "back to the live room", kind: "replay")
        server.broadcast(switchedLine(to: liveRoom().text, replay: false))
        for line in greeting() { server.broadcast(line) }
        // The live from its latest keyframe: decoded, the newest shown.
        for (i, var frame) in liveGOP.enumerated() {
            frame.catchUp = i < liveGOP.count - 1
            server.broadcast(frame)
        }
        liveGOP = []
        liveGOPBytes = 0
        return true
    }

    /// A live picture the page does not show now: kept from its latest keyframe on.
    func keep(_ frame: StudioMediaFrame) {
        if frame.isKeyframe {
            liveGOP = []
            liveGOPBytes = 0
        } else if liveGOP.isEmpty {
            return
        }
        guard liveGOPBytes + frame.payload.count <= Self.maxGOPBytes else {
            liveGOP = []
            liveGOPBytes = 0
            return
        }
        liveGOP.append(frame)
        liveGOPBytes += frame.payload.count
    }

    private func found(_ id: ReplayID, _ found: [ReplayListMessage.Holder]) {
        guard id == finding else { return }
        finding = nil
        guard !found.isEmpty else { return fail("no node holds replay \(id.text) now; the room list shows the replays there are") }
        let sinks: MediaSinks
        do { sinks = try MediaSinks(options: SinkOptions(), clock: SystemClock.shared) } catch { return fail("\(error)") }
        // Another replay was playing: it ends here (its holders' sessions with it, unless they hold this one too).
        endReplay(keeping: Set(found.map(\.id)))
        let play = PlayState(id: id, out: out, sinks: sinks, termination: nil)
        play.liveRoom = liveRoom().text
        play.title = browser.replay(id)?.card.info.title
        play.show(on: server, node: core.nodeID)
        play.start(core: core)
        holders = found.map(\.id)
        for h in found {
            play.fetcher?.addHolder(h.id)
            core.reach(h.id, at: h.addresses)
        }
        state = play
        ticker = loop.scheduleRepeatedTask(initialDelay: .milliseconds(10), delay: .milliseconds(10)) { _ in play.tick() }
        var line = JSONLine(event: "replay")
        line.add("id", id.text)
        line.add("holders", found.count)
        out.emit(line, human: "the page plays replay \(id.text) from \(found.count) holder\(found.count == 1 ? "" : "s")", kind: "replay")
        server.broadcast(switchedLine(to: id.text, replay: true))
        for text in greeting() { server.broadcast(text) }
    }

    /// Stops the replay playing, if one, and closes its holders' sessions
    /// that nothing else (the room, `keeping`) needs.
    private func endReplay(keeping: Set<NodeID> = []) {
        ticker?.cancel()
        ticker = nil
        state?.fetcher = nil
        state?.player = nil
        state = nil
        for peer in holders where !isNeeded(peer) && !keeping.contains(peer) { core.disconnect(peer) }
        holders = []
    }

    /// The page's widgets start over with another stream (its decoders, its clocks).
    private func switchedLine(to: String, replay: Bool) -> String {
        var l = JSONLine(event: "switched")
        l.add("to", to)
        l.add("replay", replay)
        return l.text
    }

    private func fail(_ text: String) { out.error(text) }

    // The replay's fetcher hears the node's sessions.

    func handle(_ event: NodeEvent) {
        if case let .transport(t) = event { state?.handle(t) }
    }

    func stop() {
        ticker?.cancel()
        ticker = nil
    }
}
