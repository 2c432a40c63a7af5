#if canImport(Glibc)
import Glibc
#endif
import Logging
import LVBCore
import LVBCrypto
import LVBGossip
import LVBCrypto
import LVBMedia
import LVBRendezvous
import LVBReplay
import LVBRoom
import LVBTransport
import NIOCore

/// Runs one node (host or joiner) for the command line: maps the options onto
/// a `NodePlan`, starts it over UDP, prints what it reports, serves console
/// commands, and leaves cleanly (a leave event every member acknowledges,
/// then bye to every peer).
struct NodeRunner {
    let options: NodeOptions
    let setup: RoomSetup
    var profile = Profile()
    /// The host's sources (nil: no media).
    var publish: PublisherSetup?
    var maxGuests = RoomConstants.defaultMaxGuests
    /// Where a viewer's stream goes (nil: `--no-media`).
    var receive: SinkOptions?
    /// Standard input feeds a media source, so the console must not read it.
    var stdinIsMedia = false
    /// Rendezvous servers a host announces its room to, or a joiner found its room through.
    var rendezvous: [PeerAddress] = []
    /// A joiner's addresses of the host to dial if no introduction comes.
    var introductionFallback: [PeerAddress] = []
    /// STUN servers to learn this node's reflexive address from.
    var stun: [PeerAddress] = []
    /// A browsing viewer: rooms kept ready on each side of the current one.
    var preload = 1
    /// A host keeping a replay: where, and the disk its replays may take.
    var replay: (directory: String, budget: Int64)?
    /// `--replay` given: after /close the host goes on serving its replay until /quit or a signal.
    var replayStays = false
    /// `--egress`: the media server the room's stream goes to.
    var egress: EgressTarget?

    var role: NodeRole { if case .host = setup { .host } else { .viewer } }
    var defaultPort: UInt16 { if case .host = setup { 7400 } else { 0 } }

    func run() async -> Int32 {
        // A closed stdout pipe (`--video-out -` into a player that quit) is a
        // write error reported once, not a silent death by SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        bootstrapLogging()
        let out = Output(json: options.json, toStderr: receive?.videoOut == "-" || receive?.audioOut == "-")
        let identity: Identity
        do {
            let (loaded, note) = try options.identity.load()
            identity = loaded
            if let note { out.emit(JSONLine(event: "identity", ("message", note)), human: note, kind: "identity") }
        } catch {
            Output.fail("\(error)")
            return 1
        }
        let listen: PeerAddress
        do { listen = try options.listenAddress(defaultPort: defaultPort) } catch {
            Output.fail("\(error)")
            return 64
        }
        let recorder: ReplayRecorder?
        do { recorder = try replayRecorder(identity: identity) } catch {
            Output.fail("\(error)")
            return 1
        }
        var egressSocket: EgressSocket?
        if let egress {
            do { egressSocket = try EgressSocket(for: egress.video) } catch {
                Output.fail("\(error)")
                return 1
            }
        }
        let termination = Termination(duration: options.duration, parent: options.parentPid)
        let reporters = Reporters(out: out, termination: termination, setup: setup)
        var config = TransportConfig()
        config.hello = Hello(agent: "lvbnode/\(CoreConstants.version)", role: role)
        config.inboundLoss = options.inboundLoss
        config.relayKbps = options.relayKbps ?? (role == .host ? RoomConstants.defaultHostRelayKbps : 0)
        let live: UDPLiveNode
        do {
            live = try await UDPLiveNode.start(plan: { plan(identity: identity, local: $0) }, identity: identity, listen: listen, config: config,
                                               prepare: { node, local in
                                                   node.core.config.ownAddresses = options.advertised(for: local)
                                                   reporters.attach(node)
                                                   attachRoles(to: node, local: local, out: out)
                                                   if let egress, let egressSocket {
                                                       node.register(StreamEgress(node: node, target: egress, socket: egressSocket))
                                                   }
                                                   if let recorder { keep(node, in: recorder, out: out) }
                                               }, onOutput: { reporters.report($0) })
        } catch {
            switch error {
            case .bind(let e): Output.fail("cannot listen on \(listen): \(describeSocketError(e)); choose another address or port with --listen")
            case .media(let e): Output.fail("\(e)")
            }
            return 1
        }
        announce(live: live, identity: identity, out: out)
        let commands = ConsoleCommands(out: out, live: live, termination: termination, reporters: reporters)
        var studio: StudioBridge?
        if let web = options.web {
            // invariant: validate() parsed it
            guard let address = try? WebAddress(parsing: web),
                  let bridge = await StudioBridge.start(address, live: live, out: out, commands: commands, reporters: reporters) else {
                await live.close(abandon: true)
                return 1
            }
            studio = bridge
        }
        reporters.startStats(on: live)
        if !stdinIsMedia { Console { line in commands.handle(line) }.start() }

        var reason = await termination.wait()
        if let recorder {
            try? await live.submit { node in
                recorder.finish()
                node.role(ReplayHolder.self)?.holding.announcer.refresh()
            }
            if case .roomClosed = reason, replayStays, let id = recorder.id, recorder.manifest?.info.isPrivate != true {
                var l = JSONLine(event: "serving")
                l.add("id", id.text)
                out.emit(l, human: "the live ended; serving its replay \(id.text) until /quit or a signal", kind: "replay")
                // Off the live list at once (the rendezvous lists the replay instead).
                try? await live.submit { node in node.role(RoomAnnouncer.self)?.leave() }
                termination.rearm()
                reason = await termination.wait()
            }
        }
        let status = await finish(live, reason: reason, reporters: reporters, out: out)
        await studio?.stop()
        return status
    }

    /// Roles of layers above the room: a host announces its room to its
    /// rendezvous servers; a joiner that found the room through one asks it
    /// for an introduction to the host (both then dial at once).
    private func attachRoles(to node: LiveNode, local: PeerAddress, out: Output) {
        var announcer: RoomAnnouncer?
        defer {
            if !stun.isEmpty {
                let client = STUNClient(core: node.core, clock: SystemClock.shared, random: SodiumRandom.shared, servers: stun)
                client.onReflexive = { address, server in
                    var l = JSONLine(event: "reflexive")
                    l.add("address", address.description)
                    l.add("via", server.description)
                    out.emit(l, human: "\(server) sees this node at \(address)", kind: "session")
                    announcer?.noteReflexive(address, from: server)
                }
                node.register(client)
            }
        }
        guard !rendezvous.isEmpty else { return }
        // What this node's NAT does, from a rendezvous's two ports (placement uses it).
        let watch = NATWatch(core: node.core, clock: SystemClock.shared, random: SodiumRandom.shared,
                             server: rendezvous.first(where: \.isIPv4) ?? rendezvous[0])
        watch.onResult = { kind, report in
            var l = JSONLine(event: "nat")
            l.add("nat", kind.name)
            l.add("mapping", report.mapping.rawValue)
            l.addRaw("reflexive", "[" + report.reflexive.map { JSONLine.quote($0.description) }.joined(separator: ",") + "]")
            let seen = report.reflexive.map(\.description).joined(separator: ", ")
            out.emit(l, human: "this node's NAT: \(kind == .hard ? "hard (a new port for every destination)" : kind.name) (seen at \(seen))", kind: "session")
        }
        node.register(watch)
        // The console's /rooms, over the sessions with the rendezvous servers.
        let browser = RoomBrowser(core: node.core, clock: SystemClock.shared, random: SodiumRandom.shared)
        node.register(browser)
        // Relay paths through a rendezvous that offers its relay, raced against direct ones.
        let relay = RelayClient(core: node.core)
        node.register(relay)
        if case let .join(room, host, _, _, _) = setup {
            if let host {
                node.register(RoomIntroducer(core: node.core, clock: SystemClock.shared, random: SodiumRandom.shared, rendezvous: rendezvous,
                                           room: room, host: host, addresses: options.advertised(for: local), relay: relay,
                                           fallback: introductionFallback))
            } else {
                for address in rendezvous { node.core.connect(to: address, expecting: nil) }
            }
            // /switch, /next, /prev: the rooms next to this one in the list kept ready.
            // The studio page shows the listed rooms' thumbnails.
            browser.fetchesThumbnails = options.web != nil
            let switcher = RoomSwitcher(node: node, browser: browser, clock: SystemClock.shared, random: SodiumRandom.shared,
                                        addresses: options.advertised(for: local), relay: relay)
            switcher.neighbours = preload
            node.register(switcher)
        }
        if case .host = setup {
            let made = RoomAnnouncer(room: node.room, clock: SystemClock.shared, rendezvous: rendezvous,
                                     addresses: options.advertised(for: local), relay: relay)
            announcer = made
            node.register(made)
            // /pk: the other room found through the rendezvous, its host reached through an introduction.
            let dialler = PKDialler(node: node, browser: browser, relay: relay, addresses: options.advertised(for: local),
                                    clock: SystemClock.shared, random: SodiumRandom.shared)
            dialler.onRefused = { out.error($0) }
            node.register(dialler)
            // The room list's thumbnail of this room, from a keyframe once per announcement.
            node.publishing.makeThumbnails(every: RendezvousConstants.announceInterval) { made.setThumbnail($0) }
        }
    }

    private func bootstrapLogging() {
        let level = Logger.Level(rawValue: LogLevelName.parse(options.logLevel) ?? "warning") ?? .warning
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }

    private func plan(identity: Identity, local: PeerAddress) -> NodePlan {
        var plan: NodePlan
        switch setup {
        case let .host(roomID, mode, _, info):
            plan = NodePlan(part: .host(AdmissionPolicy(room: roomID, host: identity, mode: mode, clock: SystemClock.shared), info: info))
        case let .join(roomID, host, proof, addresses, _):
            plan = NodePlan(part: .join(room: roomID, host: host, proof: proof, addresses: addresses))
        }
        plan.profile = profile
        plan.publish = publish
        // A co-host's studio page may put its own camera on stage.
        plan.stageFromOutside = options.web != nil
        plan.maxGuests = maxGuests
        plan.receive = receive
        plan.relaySlots = options.relaySlots
        plan.lie = options.lie.flatMap(RelayLieMode.init(rawValue:))
        plan.lieExcuses = options.lieExcuses
        plan.lieAfter = .milliseconds(Int64(options.lieAfter * 1000))
        plan.sealed = !options.unsealed
        plan.addresses = options.advertised(for: local)
        return plan
    }

    /// The `ready` line with the ticket, and where a joiner is dialling.
    private func announce(live: UDPLiveNode, identity: Identity, out: Output) {
        let local = live.udp.localAddress
        let ticket = setup.ticket(host: identity.nodeID, addresses: options.advertised(for: local))
        var ready = JSONLine(event: "ready")
        ready.add("id", identity.nodeID.text)
        ready.add("listen", local.description)
        ready.add("ticket", ticket.text)
        ready.add("role", role.name)
        if case let .host(roomID, _, _, _) = setup { ready.add("room", roomID.text) }
        out.emit(ready, human: "node \(identity.nodeID.text) listening on \(local)\n    ticket: \(ticket.text)", kind: "ready")
        if case let .join(roomID, host, _, addresses, _) = setup {
            var line = JSONLine(event: "connecting")
            line.add("to", addresses.map(\.description).joined(separator: ","))
            line.add("pattern", host == nil ? "XX" : "IK")
            if roomID != RoomNode.anyRoom { line.add("room", roomID.text) }
            out.emit(line, human: "connecting to \(addresses.map(\.description).joined(separator: ", "))"
                         + (host == nil ? " (no ticket: the host's id will be shown for you to check)" : ""), kind: "connect")
        }
    }

    /// Leaves as `reason` says, stops the node and prints the exit line.
    private func finish(_ live: UDPLiveNode, reason: ExitReason, reporters: Reporters, out: Output) async -> Int32 {
        switch reason {
        case .removed: break
        case .roomClosed:
            // Keep gossiping a moment so the close reaches everyone through us.
            try? await Task.sleep(for: .milliseconds(300))
        default:
            let confirmed = await live.leave(within: RoomConstants.leaveWait)
            if !confirmed { reporters.leaveUnconfirmed() }
        }
        reporters.stopStats()
        await live.halt()
        let summary = try? await live.submit { node in
            (node.core.stats, StatsJSON.encode(room: node.room), reporters.media.json(final: true), reporters.tree.json(node, final: true))
        }
        await live.close(abandon: { if case .removed = reason { true } else { false } }())
        let outcome = reporters.outcome(of: reason, dialled: setup)
        var bye = JSONLine(event: "exit")
        bye.add("reason", outcome.text)
        if let summary {
            bye.addRaw("stats", StatsJSON.encode(summary.0))
            bye.addRaw("room", summary.1)
            if let media = summary.2 { bye.addRaw("media", media) }
            if let tree = summary.3 { bye.addRaw("tree", tree) }
        }
        out.emit(bye, human: "leaving (\(outcome.text))", kind: "exit")
        if let why = outcome.failure { Output.fail(why) }
        return outcome.status
    }
}

extension ExitReason {
    var text: String {
        switch self {
        case .signal(let s): s == 2 ? "interrupted" : "terminated"
        case .duration: "duration elapsed"
        case .quit: "quit"
        case .replayEnded: "the replay ended"
        case .roomClosed: "room closed"
        case .orphaned: "the mesh that started it is gone"
        case .removed(let why): why
        case .failed(let why): why
        }
    }
}

func describeSocketError(_ error: Error) -> String {
    if let e = error as? IOError {
        switch e.errnoCode {
        case 98: return "address already in use"
        case 99: return "address not available on this machine"
        case 13: return "permission denied"
        default: return "\(e)"
        }
    }
    return "\(error)"
}
