import ArgumentParser
import LVBCore
import LVBCrypto
import LVBReplay

/// `lvbnode replays`: the replays this node holds: list, export, delete.
struct ReplaysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replays",
        abstract: "List, export, delete or serve (--serve) the replays this node holds.",
        discussion: "A host keeps a replay of each live (see `lvbnode host --replay`), and a viewer that plays one with --keep-replays keeps it too. Every replay's manifest is signed by its host and every segment is checked against it before it is exported or served. `lvbnode replays --serve --rendezvous IP:PORT` serves them to players and has the rendezvous list them.",
        subcommands: [List.self, Export.self, Delete.self],
        defaultSubcommand: List.self)

    /// Where the replays are: --replay-dir, else the node's home.
    struct Place: ParsableArguments {
        @Option(name: .long, help: ArgumentHelp("Directory of replays. Default: replays/ in the node's home directory.", valueName: "dir"))
        var replayDir: String?

        @Option(name: .long, help: ArgumentHelp("Node home directory. Default: $LVBNODE_HOME, else ~/.lvbnode.", valueName: "dir"))
        var home: String?

        var library: ReplayLibrary {
            ReplayLibrary(root: ReplayOptions.directory(replayDir, home: home))
        }
    }

    static func replayID(_ text: String) throws -> ReplayID {
        do { return try ReplayID(text: text) } catch { throw ValidationError("\(error)") }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List the replays held here, newest first; with --serve, serve them.")
        @OptionGroup var place: Place
        @Flag(name: .long, help: "One JSON object per line.")
        var json = false

        @Flag(name: .long, help: "Serve the replays held here to the players that ask, and tell the rendezvous (--rendezvous) so it lists them, until /quit, a signal or --duration.")
        var serve = false

        @Option(name: .long, help: ArgumentHelp("With --serve: announce the replays to this rendezvous, IP:PORT (repeatable).", valueName: "ip:port"))
        var rendezvous: [String] = []

        @Option(name: .long, help: ArgumentHelp("With --serve: local UDP address to bind. Default: [::] with an ephemeral port.", valueName: "ip:port"))
        var listen: String?

        @Option(name: .long, help: ArgumentHelp("With --serve: stop after this many seconds.", valueName: "seconds"))
        var duration: Double?

        @Option(name: .long, help: ArgumentHelp("With --serve: hand out this address (IP:PORT, repeatable) to the rendezvous instead of this machine's own (a forwarded port, a relay in front).", valueName: "ip:port"))
        var advertise: [String] = []

        func validate() throws {
            for r in rendezvous { _ = try parseAddress(r, what: "--rendezvous") }
            if let listen { _ = try parseAddress(listen, what: "--listen") }
            for a in advertise { _ = try parseAddress(a, what: "--advertise") }
            if !serve, !rendezvous.isEmpty || listen != nil || duration != nil || !advertise.isEmpty {
                throw ValidationError("--rendezvous, --listen, --advertise and --duration go with --serve")
            }
        }

        func run() async throws {
            let library = place.library
            if serve {
                var arguments = json ? ["--json"] : []
                if let home = place.home { arguments += ["--home", home] }
                if let listen { arguments += ["--listen", listen] }
                if let duration { arguments += ["--duration", String(duration)] }
                for a in advertise { arguments += ["--advertise", a] }
                let options = try NodeOptions.parse(arguments)
                let runner = ReplayRunner(options: options, library: library, rendezvous: try rendezvous.map { try parseAddress($0, what: "--rendezvous") })
                let status = await runner.run()
                if status != 0 { throw ExitCode(status) }
                return
            }
            let out = Output(json: json)
            let held = library.list()
            for h in held {
                let m = h.manifest
                var l = JSONLine(event: "replay")
                l.add("id", m.id.text)
                l.add("title", m.title)
                l.add("room", m.room.text)
                l.add("host", m.host.text)
                l.add("started_ms", Int(m.startedMs))
                l.add("duration_ms", Int(m.durationMs))
                l.add("segments", m.segments.count)
                l.add("held", h.heldSegments)
                l.add("bytes", Int(h.bytes))
                l.add("ended", m.ended)
                let started = LocalTime(WallTime(seconds: m.startedMs / 1000, nanoseconds: 0)).compactText
                out.emit(l, human: "\(m.id.text)  \(Self.duration(m.durationMs))  \(started)  \"\(m.title)\"  "
                             + "\(h.heldSegments)/\(m.segments.count) segments, \(h.bytes >> 20) MB\(m.ended ? "" : ", not ended")",
                         kind: "replay")
            }
            for bad in library.unreadable { Output.warn("\(bad) (left alone)") }
            if held.isEmpty, !json { out.emit(JSONLine(event: "none"), human: "no replays in \(library.root)", kind: "replay") }
        }

        static func duration(_ ms: UInt32) -> String {
            let s = Int((ms + 500) / 1000)
            return s >= 3600 ? "\(s / 3600):\(String(format2: s / 60 % 60)):\(String(format2: s % 60))" : "\(s / 60):\(String(format2: s % 60))"
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "export", abstract: "Write a replay as a WebM file (VP8 + Opus, no re-encoding) that players can seek in.")
        @OptionGroup var place: Place
        @Argument(help: ArgumentHelp("The replay's id (from `lvbnode replays`).", valueName: "replay-id"))
        var id: String
        @Argument(help: ArgumentHelp("The WebM file to write (an existing file is replaced).", valueName: "file"))
        var file: String

        func validate() throws { _ = try ReplaysCommand.replayID(id) }

        func run() async throws {
            do {
                let (ms, frames) = try place.library.export(try ReplaysCommand.replayID(id), to: file)
                print("wrote \(file): \(List.duration(ms)), \(frames) frames")
            } catch {
                Output.fail("\(error)")
                throw ExitCode(1)
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete a replay held here.")
        @OptionGroup var place: Place
        @Argument(help: ArgumentHelp("The replay's id (from `lvbnode replays`).", valueName: "replay-id"))
        var id: String

        func validate() throws { _ = try ReplaysCommand.replayID(id) }

        func run() async throws {
            do {
                try place.library.delete(try ReplaysCommand.replayID(id))
                print("deleted replay \(id)")
            } catch {
                Output.fail("\(error)")
                throw ExitCode(1)
            }
        }
    }
}

extension String {
    /// Two digits, zero-padded.
    init(format2 n: Int) { self = n < 10 ? "0\(n)" : "\(n)" }
}
