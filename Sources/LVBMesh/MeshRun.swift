import LVBCore
import LVBTransport
import LVBWeb
import NIOCore
import NIOPosix
#if canImport(Glibc)
import Glibc
#endif


/// Runs a whole live room on this machine as processes of one binary: a
/// rendezvous, hosts announcing to it, viewers joining by room id and
/// relaying to each other, link-mic guests, scripted chat, bullet comments
/// and likes, and midway the kill of a relay with children. Everything
/// happens on one event loop; `report` hears of each update.
public final class MeshRun: @unchecked Sendable {
    /// Set before `start` (the mesh's own --web picks the viewer's page address).
    public var config: MeshConfig
    public let model = MeshModel()
    let loop: EventLoop
    private let started: NIODeadline
    var children: [String: MeshChild] = [:]
    var rendezvous: String?
    /// `--nat`: the namespaces, and the home of each node.
    var lab: NATLab?
    var homes: [String: Int] = [:]
    var hostNames: [String] = []
    private var tasks: [RepeatedTask] = []
    var turn = 0
    var ending = false
    /// `--replay`: where the host keeps it, and whether the player was started or asked to seek.
    var replayDir: String?
    var playerStarted = false
    var seekAsked = false
    /// After each model update worth showing (a line, a happening).
    public var onUpdate: ((MeshUpdate) -> Void)?

    /// A few seconds before the end, no more scripted lines: the last ones must have time to arrive.
    public static let quietBeforeEnd = 3.0
    /// Scripted chat, bullet comment or like this often.
    public static let scriptInterval: TimeAmount = .milliseconds(700)
    /// Children get this long to leave after SIGTERM before SIGKILL.
    public static let leaveGrace = 1.6

    public init(config: MeshConfig, loop: EventLoop) {
        self.config = config
        self.loop = loop
        started = .now()
    }

    /// Seconds since the mesh started.
    public var now: Double { Double((NIODeadline.now() - started).nanoseconds) / 1e9 }

    /// Process ids of every child started so far.
    public var pids: [String: Int32] { children.mapValues(\.pid) }

    // MARK: Starting

    /// Starts everything, in order; throws what kept a piece from starting.
    public func start() async throws {
        await onLoop { self.tasks.append(self.loop.scheduleRepeatedTask(initialDelay: .milliseconds(100), delay: .milliseconds(100)) { _ in self.reap() }) }
        var rendezvousArguments = ["rendezvous", "--listen", "127.0.0.1:0"]
        if let nat = config.nat {
            try buildLab(nat)
            rendezvousArguments = ["rendezvous", "--listen", lab!.rendezvous, "--relay-kbps", String(nat.relayKbps * 50)]
        }
        let rv = try await launch("rendezvous", role: .rendezvous, room: nil, arguments: rendezvousArguments,
                                  until: "ready") { $0["event"]?.string == "ready" }
        guard let listen = model.nodes[rv]?.listen else { throw MeshError.failedToStart(rv, "it printed no address") }
        rendezvous = listen
        if closeAt != nil {
            var template = Array("/tmp/lvbnode-mesh-replay.XXXXXX".utf8CString)
            guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
                throw MeshError.cannotStart("the replay's directory", String(cString: strerror(errno)))
            }
            replayDir = String(cString: made)
        }
        for r in 0..<config.rooms {
            let name = "host-\(r + 1)"
            hostNames.append(name)
            var arguments = ["host", "--nick", name, "--title", "Mesh room \(r + 1)", "--rendezvous", listen,
                             "--relay-slots", String(config.slots), "--max-guests", String(max(1, config.guests))]
            if r == 0, let replayDir { arguments += ["--replay", "--replay-dir", replayDir] }
            // Announced once its session with the rendezvous is up (the announcement follows the hello at once).
            _ = try await launch(name, role: .host, room: r, arguments: arguments,
                                 until: "its session with the rendezvous") { $0["event"]?.string == "hello" && $0["role"]?.string == "rendezvous" }
        }
        try? await Task.sleep(for: .milliseconds(100))
        for i in 0..<config.viewers {
            let room = i % config.rooms, name = "viewer-\(i + 1)"
            // The viewer whose studio page the mesh page links to is a leaf:
            // the midway kill of a relay never stalls the picture shown, and
            // always finds another relay with children.
            // (Behind a NAT its page would be out of reach of this machine's browser.)
            let shown = i == 0 && config.web != nil && config.nat == nil
            var arguments = ["--relay-slots", shown ? "0" : String(config.slots)]
            if shown, let web = config.web { arguments += ["--web", web] }
            try await join(name, role: .viewer, room: room, extra: arguments)
        }
        for g in 0..<config.guests {
            try await join("guest-\(g + 1)", role: .guest, room: g % config.rooms, extra: ["--relay-slots", "0"])
        }
        await onLoop {
            self.tasks.append(self.loop.scheduleRepeatedTask(initialDelay: Self.scriptInterval, delay: Self.scriptInterval) { _ in self.scriptTurn() })
            // With a replay, the kill comes halfway through the live part.
            let killAt = (self.closeAt ?? self.config.duration ?? 40) / 2
            self.loop.scheduleTask(in: .milliseconds(Int64(max(0, killAt - self.now) * 1000))) { self.killARelay() }
            // Two rooms or more: the first two rooms' hosts meet in a PK a quarter of the way in.
            if self.config.rooms >= 2 {
                let pkAt = (self.closeAt ?? self.config.duration ?? 40) / 4
                self.loop.scheduleTask(in: .milliseconds(Int64(max(0, pkAt - self.now) * 1000))) { self.askForAPK() }
            }
            if let closeAt = self.closeAt {
                self.loop.scheduleTask(in: .milliseconds(Int64(max(0, closeAt - self.now) * 1000))) { self.endTheLive() }
            }
        }
    }

    private func join(_ name: String, role: MeshModel.Role, room: Int, extra: [String]) async throws {
        guard let roomID = model.nodes[hostNames[room]]?.roomID, let rendezvous else { return }
        _ = try await launch(name, role: role, room: room, arguments: ["join", roomID, "--rendezvous", rendezvous, "--nick", name] + extra)
        // A joiner a moment after the last: the tree grows as rooms do.
        try? await Task.sleep(for: .milliseconds(120))
    }

    /// Starts one node and, given `done`, waits (20 s at most: generous, as under --loss a handshake, hello or admission may take a few tries) for a line of its output for which it holds.
    func launch(_ name: String, role: MeshModel.Role, room: Int?, arguments: [String],
                        until what: String = "", _ done: ((JSONValue) -> Bool)? = nil) async throws -> String {
        var arguments = arguments + ["--json", "--ephemeral", "--parent-pid", String(getpid())]
        if role != .rendezvous { arguments += ["--listen", lab.map { $0.ipv6 ? "[::]:0" : "0.0.0.0:0" } ?? "127.0.0.1:0"] }
        // Loss on every link, each way: each node drops that share of what it
        // receives. (An impairment relay in front of each node impaired only
        // the flows that entered through it: nodes also learn each other's
        // own addresses from the rendezvous, and most links went around it.)
        if role != .rendezvous, config.loss > 0 { arguments += ["--inbound-loss", String(config.loss)] }
        let ready = done.map { _ in OncePromise(loop.makePromise(of: Void.self)) }
        try await onLoop {
            // Once the mesh is stopping nothing new starts: a launch scheduled
            // before the stop (the replay's player, a second after the replay
            // is listed) would otherwise outlive the mesh.
            guard !self.ending else { throw MeshError.cannotStart(name, "the mesh is stopping") }
            // Behind a NAT: the same program in its home's namespace (`ip netns exec` becomes it).
            var command = (executable: self.config.executable, arguments: arguments)
            if let lab = self.lab {
                // The replay's player sits on the "internet", as the rendezvous does.
                let site = role == .rendezvous || role == .player ? "rv" : String(self.homes[name] ?? 0)
                command = lab.command(in: site, [self.config.executable] + arguments)
            }
            let child = try MeshChild.spawn(name, executable: command.executable, arguments: command.arguments, loop: self.loop,
                                            onLine: { [unowned self] line in
                                                let value = try? JSONValue.parse(line.readableBytesView)
                                                self.model.ingest(name, value, at: self.now)
                                                if let value, done?(value) == true { ready?.succeed() }
                                                if let value { self.react(name, value) }
                                            },
                                            onError: { [unowned self] line in
                                                let text = String(buffer: line)
                                                self.model.note("\(name): \(text)", at: self.now)
                                                self.onUpdate?(.happening)
                                            })
            self.children[name] = child
            self.model.add(name, role: role, room: room, pid: child.pid)
            self.onUpdate?(.started(name))
        }
        guard let ready else { return name }
        let timeout = loop.scheduleTask(in: .seconds(20)) { ready.fail() }
        defer { timeout.cancel() }
        do { try await ready.promise.futureResult.get() } catch {
            throw MeshError.failedToStart(name, "no sign of \(what) within 20 s")
        }
        return name
    }

    /// The namespaces for `--nat`: a home for each host, viewer and guest
    /// (hosts first), the hard NATs spread among the viewers' and guests' homes.
    private func buildLab(_ nat: MeshConfig.NAT) throws {
        let names = (0..<config.rooms).map { "host-\($0 + 1)" } + (0..<config.viewers).map { "viewer-\($0 + 1)" }
            + (0..<config.guests).map { "guest-\($0 + 1)" }
        for (i, name) in names.enumerated() { homes[name] = i + 1 }
        let others = Array((config.rooms + 1)...names.count)
        let hard = min(nat.hard, others.count)
        // Evenly spread: every (others / hard)-th of the others' homes, from the last.
        let picked = hard == 0 ? [] : (0..<hard).map { others[others.count - 1 - $0 * others.count / hard] }
        do {
            lab = try NATLab(tag: "lvbm\(getpid() % 100_000)", sites: names.count, internet: nat.internet, hard: Set(picked), ipv6: nat.ipv6)
        } catch {
            throw MeshError.cannotStart("the NAT lab", "\(error)")
        }
        model.nat = MeshModel.NATPlan(internet: nat.internet.description, homes: homes, hard: Set(picked))
    }

    func onLoop<T: Sendable>(_ body: @escaping () throws -> T) async throws -> T {
        try await loop.submit(body).get()
    }

    func onLoop(_ body: @escaping () -> Void) async {
        try? await loop.submit(body).get()
    }

    /// Reaps children that exited.
    private func reap() {
        for (name, child) in children {
            if let status = child.poll() {
                model.exited(name, status: status, at: now)
                onUpdate?(.exited(name))
            }
        }
    }

    // MARK: Stopping

    /// Reaps what exited (the stop does not wait for the reaping timer) and counts the children still running.
    private func reaped() -> Int {
        reap()
        return children.values.filter(\.isRunning).count
    }

    /// Stops every process it started (SIGTERM, then SIGKILL after `leaveGrace`) and waits for each.
    public func stop() async {
        await onLoop {
            self.ending = true
            self.model.stopping()
            for child in self.children.values { child.terminate() }
        }
        let deadline = now + Self.leaveGrace
        while now < deadline {
            let running = (try? await onLoop { self.reaped() }) ?? 0
            if running == 0 { break }
            try? await Task.sleep(for: .milliseconds(50))
        }
        await onLoop { for child in self.children.values { child.kill() } }
        while (try? await onLoop { self.reaped() }) ?? 0 > 0 {
            try? await Task.sleep(for: .milliseconds(20))
        }
        await onLoop { for task in self.tasks { task.cancel() } }
        // The pipes' last lines (exit lines) are read by now or a moment later.
        try? await Task.sleep(for: .milliseconds(150))
        lab?.remove()
        lab = nil
        if let replayDir {
            Self.removeTree(replayDir)
            self.replayDir = nil
        }
    }

    /// Removes a directory and what is in it, depth first, following no links.
    private static func removeTree(_ path: String) {
        if let dir = opendir(path) {
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name == "." || name == ".." { continue }
                let child = path + "/" + name
                var info = stat()
                if lstat(child, &info) == 0, info.st_mode & S_IFMT == S_IFDIR { removeTree(child) } else { unlink(child) }
            }
            closedir(dir)
        }
        rmdir(path)
    }

    /// The children still running (none after `stop`).
    public var running: [String] {
        get async { (try? await onLoop { self.children.values.filter(\.isRunning).map(\.name) }) ?? [] }
    }
}


/// A promise completed once: the first of its line and its timeout wins (on the loop).
private final class OncePromise: @unchecked Sendable {
    let promise: EventLoopPromise<Void>
    private var done = false

    init(_ promise: EventLoopPromise<Void>) { self.promise = promise }

    func succeed() {
        guard !done else { return }
        done = true
        promise.succeed(())
    }

    func fail() {
        guard !done else { return }
        done = true
        promise.fail(MeshError.cannotStart("", "timed out"))
    }
}
