#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Logging
import LVBCore
import LVBReplay
import LVBCrypto
import LVBGossip
import LVBRendezvous
import LVBTransport

/// `lvbnode rendezvous`: the tiny service that replaces a live app's central
/// server: lists live rooms and answers STUN. No media, no chat.
struct RendezvousCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rendezvous",
        abstract: "List live rooms for viewers and answer STUN, on one UDP port (default 7600).",
        discussion: """
            Hosts started with --rendezvous ADDR announce their rooms to it every 10 s; a room leaves \
            the list 30 s after its last announcement, or at once when its host leaves. Soft state only: \
            a restart loses nothing for long. `lvbnode rooms --rendezvous ADDR` lists the rooms; \
            `lvbnode join ROOM-ID --rendezvous ADDR` joins one. Stock STUN clients get their reflexive \
            address from the same port. It introduces nodes that ask to be introduced (a joiner and the \
            host, a viewer and its relay parent, gossip neighbours) so that both dial at once through their \
            NATs. With --relay-kbps it also relays the sealed datagrams of pairs it introduced that cannot \
            reach each other directly (both behind NATs whose mappings depend on the destination). \
            An alternate UDP port on the same IP (default: the port + 1) answers STUN Binding only, so \
            `lvbnode netcheck` can tell a node its NAT's mapping and filtering (RFC 5780: OTHER-ADDRESS in \
            every answer, CHANGE-REQUEST's change-port honoured; change-IP is refused with error 420).
            """)

    /// (`--relay-kbps` is among them: a rendezvous relays nothing unless given it.)
    @OptionGroup var node: NodeOptions

    @Option(name: .long, help: ArgumentHelp("A second UDP port on the same IP that answers STUN Binding only, for NAT behaviour discovery (`lvbnode netcheck`); 0: none. Default: the listen port + 1 (none when that is 0; when that port is taken, a warning and none).", valueName: "port"))
    var alternatePort: Int?

    func validate() throws {
        if let alternatePort, !(0...65535).contains(alternatePort) {
            throw ValidationError("--alternate-port must be from 0 to 65535 (0: none)")
        }
    }

    func run() async throws {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = Logger.Level(rawValue: LogLevelName.parse(node.logLevel) ?? "warning") ?? .warning
            return handler
        }
        let out = Output(json: node.json)
        let identity: Identity
        do { identity = try node.identity.load().0 } catch {
            Output.fail("\(error)")
            throw ExitCode(1)
        }
        let listen = try node.listenAddress(defaultPort: RendezvousConstants.defaultPort)
        let termination = Termination(duration: node.duration, parent: node.parentPid)
        let alternate = UInt16(alternatePort ?? (listen.port == 0 || listen.port == UInt16.max ? 0 : Int(listen.port) + 1))
        if alternate != 0, alternate == listen.port {
            Output.fail("--alternate-port \(alternate) is the listen port; choose another port, or 0 for none")
            throw ExitCode(1)
        }
        let agent = "lvbnode/\(CoreConstants.version)", relayKbps = node.relayKbps ?? 0
        let server: UDPRendezvous
        do {
            do {
                server = try await UDPRendezvous.start(identity: identity, listen: listen, agent: agent, relayKbps: relayKbps, alternatePort: alternate) { _ in }
            } catch where alternatePort == nil && alternate != 0 {
                // The default alternate port taken: a rendezvous without one still lists rooms and answers STUN.
                Output.warn("cannot listen on STUN port \(alternate) (\(describeSocketError(error))); going on without an alternate port (choose one with --alternate-port)")
                server = try await UDPRendezvous.start(identity: identity, listen: listen, agent: agent, relayKbps: relayKbps, alternatePort: 0) { _ in }
            }
        } catch {
            let ports = alternatePort.map { $0 == 0 ? "" : " and STUN port \($0)" } ?? ""
            Output.fail("cannot listen on \(listen)\(ports): \(describeSocketError(error)); choose other ports with --listen\(ports.isEmpty ? "" : " and --alternate-port (0: none)")")
            throw ExitCode(1)
        }
        var ready = JSONLine(event: "ready")
        ready.add("id", identity.nodeID.text)
        ready.add("listen", server.udp.localAddress.description)
        ready.add("role", NodeRole.rendezvous.name)
        ready.add("alternate", server.alternateAddress?.description)
        let alternateText = server.alternateAddress.map { ", STUN also on \($0)" } ?? ""
        out.emit(ready, human: "rendezvous \(identity.nodeID.text) listening on \(server.udp.localAddress) (rooms and STUN\(alternateText))", kind: "ready")
        let reason = await termination.wait()
        let stats = try? await server.submit { service, core in (service.stats, service.registry.count, core.stats, service.replays.stats, service.replays.entries.count) }
        await server.close()
        var bye = JSONLine(event: "exit")
        bye.add("reason", reason.text)
        if let (s, rooms, transport, r, replays) = stats {
            var o = JSONLine()
            o.add("rooms", rooms)
            o.add("replays", replays)
            o.add("replays_held", r.held)
            o.add("replays_refused", r.refused)
            o.add("replay_list_requests", r.listRequests)
            o.add("replay_find_requests", r.findRequests)
            o.add("replay_malformed", r.malformed + r.rateLimited)
            o.add("announcements", s.announcements)
            o.add("refused", s.refused)
            o.add("list_requests", s.listRequests)
            o.add("resolve_requests", s.resolveRequests)
            o.add("introduce_requests", s.introduceRequests)
            o.add("introductions", s.introductions)
            o.add("reintroductions", s.reintroductions)
            o.add("rate_limited", s.rateLimited)
            o.add("relayed_datagrams", s.relayedDatagrams)
            o.add("relayed_bytes", s.relayedBytes)
            o.add("relay_refused", s.relayRefused)
            o.add("thumbnails", s.thumbnails)
            o.add("thumbnail_refused", s.thumbnailRefused)
            o.add("thumbnail_requests", s.thumbnailRequests)
            o.add("malformed", s.malformed)
            o.add("unknown_types", s.unknownTypes)
            o.add("stun_answered", s.stunAnswered)
            o.add("stun_dropped", s.stunDropped)
            o.add("stun_other_port", s.stunOtherPort)
            o.add("alternate_not_stun", s.alternateNotSTUN)
            bye.addRaw("rendezvous", o.text)
            bye.addRaw("stats", StatsJSON.encode(transport))
        }
        out.emit(bye, human: "leaving (\(reason.text))", kind: "exit")
        if reason.status != 0 { throw ExitCode(reason.status) }
    }
}

/// `lvbnode rooms`: the live rooms a rendezvous lists, a page at a time.
struct RoomsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rooms",
        abstract: "List the live rooms a rendezvous knows, most viewers first, then newest.",
        discussion: """
            20 rooms a page. Each comes with a join ticket; `lvbnode join ROOM-ID --rendezvous ADDR` works too. \
            Then the replays the rendezvous's peers hold, newest first (`lvbnode join REPLAY-ID --rendezvous ADDR` plays one). \
            With --thumbnails DIR, each listed room's thumbnail (a small JPEG of its host's latest keyframe, \
            signed by the host and checked here) is written as DIR/ROOM-ID.jpg, and each replay's (its live's \
            last) as DIR/REPLAY-ID.jpg.
            """)

    @Option(name: .long, help: ArgumentHelp("The rendezvous, IP:PORT (repeatable: the first to answer is used).", valueName: "ip:port"))
    var rendezvous: [String] = []

    @Option(name: .long, help: ArgumentHelp("Which page, from 1.", valueName: "n"))
    var page: Int = 1

    @Option(name: .long, help: ArgumentHelp("Write each listed room's thumbnail as DIR/ROOM-ID.jpg, and each listed replay's (its live's last, signed by its host) as DIR/REPLAY-ID.jpg (an existing directory).", valueName: "dir"))
    var thumbnails: String?

    @Flag(name: .long, help: "Print one JSON object per line instead of readable text.")
    var json = false

    func validate() throws {
        guard !rendezvous.isEmpty else { throw ValidationError("give the rendezvous with --rendezvous IP:PORT") }
        if let thumbnails {
            var info = stat()
            guard stat(thumbnails, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
                throw ValidationError("--thumbnails \(thumbnails): no such directory; create it first")
            }
        }
        for r in rendezvous { _ = try parseAddress(r, what: "--rendezvous") }
        guard (1...10_000).contains(page) else { throw ValidationError("--page must be 1 or more") }
    }

    func run() async throws {
        let out = Output(json: json)
        let addresses = try rendezvous.map { try parseAddress($0, what: "--rendezvous") }
        let answer: RendezvousClient.Answer
        var pictures: [RoomID: RoomThumbnail] = [:]
        do {
            if thumbnails != nil {
                (answer, pictures) = try await RendezvousQuery.listWithThumbnails(addresses, page: page - 1, timeout: RendezvousConstants.queryTimeout)
            } else {
                answer = try await RendezvousQuery.ask(addresses, timeout: RendezvousConstants.queryTimeout) { client, server in
                    client.list(page: page - 1, from: server)
                }
            }
        } catch {
            Output.fail("\(error)")
            throw ExitCode(1)
        }
        guard case let .page(_, total, rooms) = answer else { throw ExitCode(1) }
        RoomListOutput.emit(rooms, total: total, page: page, to: out)
        if let dir = thumbnails { try write(rooms.map { ($0.room.text, pictures[$0.room]) }, to: dir, out: out) }
        // Then the replays its peers hold, newest first (a rendezvous without a replay list answers nothing).
        if case let .page(total, replays)? = try? await ReplayListQuery.list(addresses, page: page - 1, timeout: .seconds(2)) {
            RoomListOutput.emit(replays, total: total, page: page, to: out)
            // A replay's thumbnail is its live's last, signed by its host.
            if let dir = thumbnails, !replays.isEmpty {
                let rooms = replays.map { (room: $0.card.info.room, host: $0.card.info.host) }
                let replayPictures = (try? await RendezvousQuery.thumbnails(of: rooms, addresses, timeout: RendezvousConstants.queryTimeout)) ?? [:]
                try write(replays.map { ($0.card.id.text, replayPictures[$0.card.info.room]) }, to: dir, out: out)
            }
        }
    }

    /// Each listed room's or replay's thumbnail as DIR/ID.jpg, one `thumbnail` line each.
    private func write(_ pictures: [(id: String, picture: RoomThumbnail?)], to dir: String, out: Output) throws {
        for (id, picture) in pictures {
            guard let picture else { continue }
            let path = (dir.hasSuffix("/") ? dir : dir + "/") + id + ".jpg"
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            let written = fd < 0 ? -1 : picture.jpeg.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if fd >= 0 { close(fd) }
            guard written == picture.jpeg.count else {
                Output.fail("cannot write \(path): \(String(cString: strerror(errno))); check that the directory is writable")
                throw ExitCode(1)
            }
            var l = JSONLine(event: "thumbnail")
            l.add("id", id)
            l.add("path", path)
            l.add("bytes", picture.jpeg.count)
            out.emit(l, human: "thumbnail of \(id): \(path) (\(picture.jpeg.count) bytes)", kind: "room")
        }
    }
}

/// The room list as lines: one `room` per room, then the `rooms` summary
/// (`lvbnode rooms` and the console's `/rooms` alike).
enum RoomListOutput {
    /// `page` counts from 1; each room gets its place in the whole list (`n`, from 1: `/switch N`).
    static func emit(_ rooms: [RoomAnnouncement], total: Int, page: Int, to out: Output) {
        for (i, a) in rooms.enumerated() {
            let n = (page - 1) * RendezvousConstants.roomsPerPage + i + 1
            var l = JSONLine(event: "room")
            l.add("n", n)
            l.add("id", a.room.text)
            l.add("title", a.info.title)
            l.add("host", a.host.text)
            l.add("nick", a.hostNickname)
            l.add("viewers", Int(a.viewers))
            l.add("likes", Int(a.likes))
            if let s = a.info.startedAt { l.add("started_at", Int(s)) }
            l.add("location", a.info.location)
            l.add("access", ["open", "password", "invite-only"][Int(min(a.access, 2))])
            l.add("ticket", a.ticket.text)
            let lock = a.access == 1 ? " (password)" : a.access == 2 ? " (invite only)" : ""
            out.emit(l, human: "\(n). \(a.room.text)  \(a.info.title ?? "(untitled)")\(lock) — \(a.hostNickname ?? a.host.short), \(a.viewers) watching, \(a.likes) likes", kind: "room")
        }
        let pages = max(1, (total + RendezvousConstants.roomsPerPage - 1) / RendezvousConstants.roomsPerPage)
        var l = JSONLine(event: "rooms")
        l.add("page", page)
        l.add("pages", pages)
        l.add("total", total)
        out.emit(l, human: "page \(page) of \(pages), \(total) live rooms", kind: "rooms")
    }
}

extension RoomListOutput {
    /// Replays after the live rooms: one `room` line each with `replay` true, then a `replays` summary.
    static func emit(_ replays: [ReplayListMessage.Listed], total: Int, page: Int, to out: Output) {
        for (i, r) in replays.enumerated() {
            let info = r.card.info
            var l = JSONLine(event: "room")
            l.add("n", (page - 1) * ReplayDirectory.pageSize + i + 1)
            l.add("replay", true)
            l.add("id", r.card.id.text)
            l.add("title", info.title)
            l.add("host", info.host.text)
            l.add("room", info.room.text)
            l.add("started_at", Int(info.startedMs))
            l.add("duration_ms", Int(r.card.durationMs))
            l.add("holders", Int(r.holders))
            out.emit(l, human: "replay \(r.card.id.text)  \(info.title.isEmpty ? "(untitled)" : info.title) — \(info.host.short), "
                         + "\(ReplaysCommand.List.duration(r.card.durationMs)), held by \(r.holders)", kind: "replay")
        }
        var l = JSONLine(event: "replays")
        l.add("page", page)
        l.add("total", total)
        out.emit(l, human: "\(total) replays", kind: "rooms")
    }
}

extension RoomAnnouncement {
    /// A join ticket for the announced room (open rooms; the access of a
    /// private one is asked at admission).
    var ticket: JoinTicket {
        JoinTicket(host: host, addresses: addresses, fields: [TicketField.room: room.bytes, TicketField.access: [access]])
    }
}
