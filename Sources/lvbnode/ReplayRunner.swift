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

/// A node of replays alone, with no room: `lvbnode join REPLAY-ID
/// --rendezvous ADDR` plays a replay fetched from the nodes that hold it
/// (found through the rendezvous, reached through its introductions) into
/// the outputs a live stream has, the console seeking, pausing and changing
/// speed, ending at the replay's end, /quit, a signal or --duration; with
/// `--keep-replays` it keeps what it fetched (all of it, within its budget)
/// and serves it. `lvbnode replays --serve` serves and announces what the
/// node holds until /quit or a signal.
struct ReplayRunner {
    let options: NodeOptions
    var play: (id: ReplayID, holders: [ReplayListMessage.Holder], sinks: SinkOptions)?
    /// Where this node keeps and serves replays (nil: it keeps none), and the budget for what it fetches.
    var library: ReplayLibrary?
    var keepBudget: Int64?
    let rendezvous: [PeerAddress]

    func run() async -> Int32 {
        signal(SIGPIPE, SIG_IGN)
        let sinkOptions = play?.sinks ?? SinkOptions()
        let out = Output(json: options.json, toStderr: sinkOptions.videoOut == "-" || sinkOptions.audioOut == "-")
        let identity: Identity
        let listen: PeerAddress
        let outputs: MediaSinks
        do {
            identity = try options.identity.load().0
            listen = try options.listenAddress(defaultPort: 0)
            outputs = try MediaSinks(options: sinkOptions, clock: SystemClock.shared)
            if let library { try ReplayLibrary.prepare(library.root) }
        } catch {
            Output.fail("\(error)")
            return 1
        }
        let termination = Termination(duration: options.duration, parent: options.parentPid)
        let state = PlayState(id: play?.id, out: out, sinks: outputs, termination: termination)
        var config = TransportConfig()
        config.hello = Hello(agent: "lvbnode/\(CoreConstants.version)", role: .viewer)
        let udp: UDPNode
        do {
            udp = try await UDPNode.start(identity: identity, listen: listen, config: config, group: MultiThreadedEventLoopGroup.singleton) { event in
                state.handle(event)
            }
        } catch {
            Output.fail("cannot listen on \(listen): \(describeSocketError(error)); choose another address or port with --listen")
            return 1
        }
        let play = self.play, rendezvous = self.rendezvous, library = self.library, keepBudget = self.keepBudget
        var page: StudioServer?
        if play != nil, let web = options.web, let address = try? WebAddress(parsing: web) {
            page = await StudioBridge.serve(address, loop: udp.eventLoop, out: out) { server in
                server.onCommand = { state.page($0) }
                server.onConnect = { state.greeting() }
            }
            guard page != nil else {
                await udp.close()
                return 1
            }
        }
        let addresses = options.advertised(for: udp.localAddress)
        _ = try? await udp.submit { [page] core in
            if let page { state.show(on: page, node: core.nodeID) }
            if let library { state.serve(library, core: core, addresses: addresses, keepBudget: keepBudget) }
            state.start(core: core)
            for address in rendezvous { core.connect(to: address, expecting: nil) }
            state.reach(play?.holders ?? [], throughRendezvous: !rendezvous.isEmpty)
        }
        if let play {
            var line = JSONLine(event: "replay")
            line.add("id", play.id.text)
            line.add("holders", play.holders.count)
            out.emit(line, human: "fetching replay \(play.id.text) from \(play.holders.count) holder\(play.holders.count == 1 ? "" : "s")", kind: "replay")
        } else if let library {
            var line = JSONLine(event: "ready")
            line.add("id", identity.nodeID.text)
            line.add("listen", udp.localAddress.description)
            line.add("replays", library.list().count)
            line.add("path", library.root)
            out.emit(line, human: "serving \(library.list().count) replays from \(library.root) on \(udp.localAddress)", kind: "ready")
        }
        let ticker = udp.eventLoop.scheduleRepeatedTask(initialDelay: .milliseconds(10), delay: .milliseconds(10)) { _ in state.tick() }
        Console { command in udp.eventLoop.execute { state.command(command) } }.start()
        let reason = await termination.wait()
        ticker.cancel()
        let summary = try? await udp.submit { _ in state.summary() }
        try? await page?.close().get()
        await udp.close()
        outputs.close()
        var bye = JSONLine(event: "exit")
        bye.add("reason", reason.text)
        if let summary { bye.addRaw("replay", summary) }
        out.emit(bye, human: "leaving (\(reason.text))", kind: "exit")
        return reason.status
    }
}
