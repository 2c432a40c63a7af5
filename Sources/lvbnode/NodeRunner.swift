#if canImport(Glibc)
import Glibc
#endif
import Logging
import LVBCore
import LVBMedia
import LVBCrypto
import LVBGossip
import LVBRoom
import LVBTransport
import NIOCore
import NIOPosix

/// Runs one node (host or joiner) until it is told to stop: binds the socket,
/// prints `ready` with the join ticket, hosts or joins the room, reports
/// every event, serves console commands, and leaves cleanly (a leave event,
/// then bye to every peer).
struct NodeRunner {
    let options: NodeOptions
    let setup: RoomSetup
    var profile = Profile()
    var media = MediaPlan.none
    /// When the command started (join → first frame is measured from here).
    var startedAt = SystemClock.shared.now()

    var role: Hello.Role { if case .host = setup { .host } else { .viewer } }
    var defaultPort: UInt16 { if case .host = setup { 7400 } else { 0 } }

    func run() async -> Int32 {
        // A closed stdout pipe (`--video-out -` into a player that quit) is a
        // write error reported once, not a silent death by SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        let level = Logger.Level(rawValue: LogLevelName.parse(options.logLevel) ?? "warning") ?? .warning
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var mediaOnStdout = false
        if case .viewer(let o) = media { mediaOnStdout = o.videoOut == "-" || o.audioOut == "-" }
        let out = Output(json: options.json, toStderr: mediaOnStdout)
        let mediaRuntime: MediaRuntime
        do { mediaRuntime = try MediaRuntime(plan: media, out: out, startedAt: startedAt) } catch {
            Output.fail("\(error)")
            return 1
        }
        let identity: Identity
        do {
            let (loaded, note) = try options.identity.load()
            identity = loaded
            if let note { out.emit(info("identity", note), human: note, kind: "identity") }
        } catch {
            Output.fail("\(error)")
            return 1
        }
        let listen: PeerAddress
        do { listen = try options.listenAddress(defaultPort: defaultPort) } catch {
            Output.fail("\(error)")
            return 64
        }

        let termination = Termination(duration: options.duration)
        var config = TransportConfig()
        config.hello = Hello(agent: "lvbnode/\(CoreConstants.version)", role: role)
        var dialled: (addresses: [PeerAddress], id: NodeID?)?
        if case let .join(_, host, _, addresses, _) = setup { dialled = (addresses, host) }
        let sessions = EventReporter(out: out, termination: termination, dialled: dialled)
        let reporter = RoomReporter(out: out, termination: termination)
        let box = RoomBox()

        let node: UDPNode
        do {
            node = try await UDPNode.start(identity: identity, listen: listen, config: config, group: MultiThreadedEventLoopGroup.singleton) { event in
                sessions.report(event)
                box.room?.handle(event)
            }
        } catch {
            Output.fail("cannot listen on \(listen): \(describeSocketError(error)); choose another address or port with --listen")
            return 1
        }
        let ticket = setup.ticket(host: identity.nodeID, addresses: LocalAddresses.advertised(for: node.localAddress))
        let setup = self.setup, profile = self.profile
        let attached: Result<Void, MediaError>? = try? await node.submit { core -> Result<Void, MediaError> in
            let clock = SystemClock.shared, random = SodiumRandom.shared
            let room: RoomNode
            switch setup {
            case let .host(roomID, mode, _, info):
                let policy = AdmissionPolicy(room: roomID, host: core.identity, mode: mode, clock: clock)
                room = RoomNode(hosting: policy, core: core, clock: clock, random: random, info: info)
            case let .join(roomID, host, proof, addresses, _):
                room = RoomNode(joining: roomID, host: host, proof: proof, core: core, clock: clock, random: random)
                core.connect(to: addresses, expecting: host)
            }
            if profile != Profile() { try? room.setProfile(profile) }
            room.onOutput = { reporter.report($0) }
            reporter.room = room
            box.room = room
            do throws(MediaError) { try mediaRuntime.attach(to: room, core: core) } catch { return .failure(error) }
            box.mediaSummary = { mediaRuntime.summary() }
            room.start()
            return .success(())
        }
        var mediaError: MediaError?
        if case .failure(let e) = attached { mediaError = e }
        if mediaError == nil {
            do { try mediaRuntime.start(node: node) } catch { mediaError = error }
        }
        if let mediaError {
            Output.fail("\(mediaError)")
            await node.close()
            return 1
        }
        let tick = TimeAmount.nanoseconds(GossipConstants.tickInterval.nanosecondsClamped)
        let ticker = node.eventLoop.scheduleRepeatedTask(initialDelay: tick, delay: tick) { _ in box.room?.tick() }

        var ready = JSONLine(event: "ready")
        ready.add("id", identity.nodeID.text)
        ready.add("listen", node.localAddress.description)
        ready.add("ticket", ticket.text)
        ready.add("role", role == .host ? "host" : "viewer")
        if case let .host(roomID, _, _, _) = setup { ready.add("room", roomID.text) }
        out.emit(ready, human: "node \(identity.nodeID.text) listening on \(node.localAddress)\n    ticket: \(ticket.text)", kind: "ready")
        if case let .join(roomID, host, _, addresses, _) = setup {
            var line = JSONLine(event: "connecting")
            line.add("to", addresses.map(\.description).joined(separator: ","))
            line.add("pattern", host == nil ? "XX" : "IK")
            if roomID != RoomNode.anyRoom { line.add("room", roomID.text) }
            out.emit(line, human: "connecting to \(addresses.map(\.description).joined(separator: ", "))"
                         + (host == nil ? " (no ticket: the host's id will be shown for you to check)" : ""), kind: "connect")
        }

        let commands = ConsoleCommands(out: out, node: node, termination: termination, reporter: reporter, roomBox: box)
        // Standard input is either the console or a media source (`--video -`).
        if case .host(let setup) = media, setup.readsStdin {} else {
            Console { line in commands.handle(line) }.start()
        }

        let reason = await termination.wait()
        // Leave cleanly: announce it, give it a moment to spread, then say bye.
        switch reason {
        case .removed: break
        case .roomClosed:
            // Keep gossiping a moment so the close reaches everyone through us.
            try? await Task.sleep(for: .milliseconds(300))
        default:
            try? await node.submit { _ in box.room?.leave() }
            try? await Task.sleep(for: .milliseconds(300))
        }
        ticker.cancel()
        await mediaRuntime.stop(node: node)
        try? await node.submit { _ in box.room?.shutdown() }
        let (stats, roomStats, mediaStats) = (try? await node.submit { core in
            (core.stats, box.room.map { StatsJSON.encode(room: $0) }, mediaRuntime.summary())
        }) ?? (node.core.stats, nil, nil)
        mediaRuntime.closeFiles()
        if case .removed = reason {
            // Replaced or kicked: no bye, so the session now held by our
            // successor (same identity) is not torn down.
            await node.abandon()
        } else {
            await node.close()
        }
        var bye = JSONLine(event: "exit")
        bye.add("reason", reason.text)
        bye.addRaw("stats", StatsJSON.encode(stats))
        if let roomStats { bye.addRaw("room", roomStats) }
        if let mediaStats { bye.addRaw("media", mediaStats) }
        out.emit(bye, human: "leaving (\(reason.text))", kind: "exit")
        if case .failed(let why) = reason { Output.fail(why) }
        if case .removed(let why) = reason { Output.fail(why) }
        return reason.status
    }

    private func info(_ event: String, _ message: String) -> JSONLine {
        var l = JSONLine(event: event)
        l.add("message", message)
        return l
    }
}

extension ExitReason {
    var text: String {
        switch self {
        case .signal(let s): s == 2 ? "interrupted" : "terminated"
        case .duration: "duration elapsed"
        case .quit: "quit"
        case .roomClosed: "room closed"
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
