import ArgumentParser
import LVBCore
import LVBMedia
import LVBRendezvous
import LVBReplay
import LVBCrypto
import LVBGossip
import LVBRoom
import LVBTransport

/// `lvbnode join`: join a room by its ticket, or by the host's address.
struct JoinCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "join",
        abstract: "Join a live room by its ticket, by the host's IP:PORT, or by its room id with --rendezvous; or play a replay by its id.",
        discussion: """
            With a ticket the session uses Noise IK (the ticket carries the host's key) and the room id. \
            With IP:PORT (or localhost:PORT) it uses Noise XX and prints the host's id so you can check it; \
            private rooms need the ticket. With a room id (26 characters, as `lvbnode rooms` lists it) and \
            --rendezvous, the rendezvous tells where the room's host is and its key (Noise IK). A replay's id \
            (as `lvbnode rooms` lists it after the live rooms) plays the replay from the nodes that hold it: \
            /seek [+-]SECONDS|MM:SS, /pause, /play, /speed X. \
            Listens on [::] with an ephemeral port (IPv6 and IPv4 peers alike) unless --listen says otherwise.
            """)

    @Argument(help: ArgumentHelp("A join ticket (lvb1…), IP:PORT, [IPv6]:PORT, localhost:PORT, or a room id with --rendezvous.", valueName: "peer"))
    var peer: String

    @Option(name: .long, help: ArgumentHelp("Find the room id through this rendezvous, IP:PORT (repeatable: the first to answer is used); with it the console browses the rooms it lists (/rooms, /switch, /next, /prev), and so does the studio page with --web (thumbnails; arrow keys, wheel or swipe switch).", valueName: "ip:port"))
    var rendezvous: [String] = []

    @Option(name: .long, help: ArgumentHelp("Ask this STUN server (IP:PORT, repeatable) where it sees this node (a reflexive event).", valueName: "ip:port"))
    var stun: [String] = []

    @Option(name: .long, help: ArgumentHelp("Rooms kept ready on each side of this one in the rendezvous's list, for a quick /next or /prev (0: none; each costs a trickle of keyframes).", valueName: "n"))
    var preload = 1

    @OptionGroup var node: NodeOptions
    @OptionGroup var profile: ProfileOptions
    @OptionGroup(title: "Media") var media: ViewerMediaOptions
    @OptionGroup(title: "Media server") var egress: EgressOptions
    @OptionGroup(title: "On stage (link-mic: sent to the host while it has you on stage; synthetic is a guest pattern and tone)")
    var stage: HostMediaOptions

    @OptionGroup(title: "Replays") var replays: KeepReplayOptions

    @Option(name: .long, help: ArgumentHelp("The password of a private room.", valueName: "password"))
    var password: String?

    @Option(name: .long, help: ArgumentHelp("An invite (lvbi…) from the host of an invite-only room.", valueName: "invite"))
    var invite: String?

    struct Target {
        var addresses: [PeerAddress]
        var host: NodeID?
        var room: RoomID
        var access: UInt8
    }

    func validate() throws {
        if stage.video == "page" || stage.audio == "page" {
            throw ValidationError("--video page and --audio page are a host's; on stage a co-host's page puts its camera there itself (start with --video none --audio none and --web PORT)")
        }
        for r in rendezvous { _ = try parseAddress(r, what: "--rendezvous") }
        if node.lie != nil, node.relaySlots == 0 { throw ValidationError("--lie needs children to lie to: give --relay-slots 1 or more") }
        guard (0...4).contains(preload) else { throw ValidationError("--preload must be from 0 to 4") }
        if media.noMedia && egress.egress != nil { throw ValidationError("--egress hands on the stream this node takes: drop --no-media") }
        for server in stun { _ = try parseAddress(server, what: "--stun") }
        if roomID != nil {
            guard !rendezvous.isEmpty else {
                throw ValidationError("'\(peer)' is a room id (or a replay's): say where to find it with --rendezvous IP:PORT, the rendezvous that lists it")
            }
            if password != nil && invite != nil { throw ValidationError("give one of --password and --invite") }
            if let invite { do { _ = try Invite(text: invite) } catch { throw ValidationError("--invite: \(error)") } }
            return
        }
        let t = try target()
        if password != nil && invite != nil { throw ValidationError("give one of --password and --invite") }
        if (password != nil || invite != nil) && t.host == nil {
            throw ValidationError("private rooms are joined by ticket: pass the host's ticket instead of an address")
        }
        if let invite { do { _ = try Invite(text: invite) } catch { throw ValidationError("--invite: \(error)") } }
    }

    /// The addresses to dial, the identity expected there, and the room.
    func target() throws -> Target {
        let peer = self.peer.trimmingCharacters()
        if peer.lowercased().hasPrefix(JoinTicket.prefix) {
            do {
                let ticket = try JoinTicket(text: peer)
                return Target(addresses: ticket.addresses, host: ticket.host, room: .from(ticket),
                              access: ticket.fields[TicketField.access]?.first ?? 0)
            } catch { throw ValidationError("\(error)") }
        }
        do { return Target(addresses: [try PeerAddress(parsing: peer)], host: nil, room: RoomNode.anyRoom, access: 0) } catch {
            if Self.looksLikeAnID(peer) {
                throw ValidationError("'\(peer)' is not a room id: an id is 26 characters, a to z and 2 to 7, as `lvbnode rooms` lists it (check for a typo), and joining by id needs --rendezvous IP:PORT")
            }
            throw ValidationError("'\(peer)' is neither a join ticket (lvb1…), an address (IP:PORT, [IPv6]:PORT or localhost:PORT) nor a room id (with --rendezvous IP:PORT)")
        }
    }

    /// Letters and digits only, about an id's length: someone meant a room
    /// or replay id (mistyped, cut short, with a character too many).
    static func looksLikeAnID(_ text: String) -> Bool {
        (20...32).contains(text.count) && text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
    }

    /// The peer argument as a room id (26 base32 characters), if it is one.
    var roomID: RoomID? {
        let text = peer.trimmingCharacters().lowercased()
        guard text.count == 26, let bytes = try? Base32.decode(text) else { return nil }
        return try? RoomID(bytes: bytes)
    }

    /// Asks the rendezvous where the room is: its host's key and addresses;
    /// nil when it lists no such live room.
    private func resolve(_ room: RoomID) async throws -> Target? {
        let addresses = try rendezvous.map { try parseAddress($0, what: "--rendezvous") }
        let answer: RendezvousClient.Answer
        do {
            answer = try await RendezvousQuery.ask(addresses, timeout: RendezvousConstants.queryTimeout) { client, server in
                client.resolve(room, from: server)
            }
        } catch {
            Output.fail("\(error)")
            throw ExitCode(1)
        }
        guard case .resolved(_, let found?) = answer else { return nil }
        return Target(addresses: found.addresses, host: found.host, room: found.room, access: found.access)
    }

    /// The holders of the replay with this id that the rendezvous knows.
    private func findReplay(_ id: ReplayID?) async -> [ReplayListMessage.Holder] {
        guard let id, let addresses = try? rendezvous.map({ try parseAddress($0, what: "--rendezvous") }),
              case let .holders(_, holders)? = try? await ReplayListQuery.find(id, addresses, timeout: .seconds(3)) else { return [] }
        return holders
    }

    /// Plays the replay with this id from `holders`.
    private func playReplay(_ id: ReplayID, holders: [ReplayListMessage.Holder], startedAt: Instant) async throws -> Bool {
        let addresses = try rendezvous.map { try parseAddress($0, what: "--rendezvous") }
        guard !holders.isEmpty else { return false }
        if egress.egress != nil {
            Output.fail("\(id.text) is a replay: --egress hands on a live room; a replay goes out as plain RTP with --rtp-out")
            throw ExitCode(64)
        }
        var runner = ReplayRunner(options: node, rendezvous: addresses)
        runner.play = (id, holders, media.sinkOptions(startedAt: startedAt) ?? SinkOptions())
        if replays.keepReplays {
            runner.library = ReplayLibrary(root: replays.place.directory(node.identity))
            runner.keepBudget = try replays.place.budget()
        }
        let status = await runner.run()
        if status != 0 { throw ExitCode(status) }
        return true
    }

    func run() async throws {
        let startedAt = SystemClock.shared.now()
        let t: Target
        if let room = roomID {
            // A live room or a replay: both asked at once.
            let replayID = try? ReplayID(text: room.text)
            async let holders = findReplay(replayID)
            if let found = try await resolve(room) {
                t = found
            } else if let replayID, try await playReplay(replayID, holders: await holders, startedAt: startedAt) {
                return
            } else {
                Output.fail("\(room.text) is neither a live room nor a replay the rendezvous lists (it may have ended); `lvbnode rooms --rendezvous \(rendezvous[0])` lists both")
                throw ExitCode(1)
            }
        } else {
            t = try target()
        }
        var proof = JoinProof.none
        if let password {
            do { proof = .password(roomKey: try PasswordKey.derive(password: password, roomID: t.room.bytes)) } catch {
                Output.fail("--password: \(error)")
                throw ExitCode(64)
            }
        } else if let invite {
            proof = .invite(try Invite(text: invite))
        } else if t.access == 1 {
            Output.fail("this room is private: pass its password with --password")
            throw ExitCode(64)
        } else if t.access == 2 {
            Output.fail("this room is invite-only: ask the host for an invite (/invite YOUR-ID) and pass it with --invite")
            throw ExitCode(64)
        }
        // Through a rendezvous, the node dials the host only when introduced,
        // whatever range its addresses are in: a packet to the host's NAT
        // before the host sent towards us can make that NAT pick another
        // port for the host (a Linux conntrack clash), and the hole punching
        // then fails. A host on our LAN is reached by the punch's first,
        // hop-limited initiation.
        let dialNow = roomID == nil ? t.addresses : []
        var runner = NodeRunner(options: node, setup: .join(room: t.room, host: t.host, proof: proof, addresses: dialNow, access: t.access))
        if roomID != nil { runner.introductionFallback = t.addresses }
        runner.profile = profile.profile
        runner.receive = media.sinkOptions(startedAt: startedAt)
        runner.egress = try egress.target()
        runner.preload = preload
        runner.rendezvous = try rendezvous.map { try parseAddress($0, what: "--rendezvous") }
        runner.stun = try stun.map { try parseAddress($0, what: "--stun") }
        do {
            let setup = try stage.publisherSetup(look: .guest)
            // Without sources the bitrate and GOP still apply to a studio page's camera on stage (--web).
            runner.publish = setup.isEmpty && node.web == nil ? nil : setup
        } catch {
            Output.fail("\(error)")
            throw ExitCode(1)
        }
        runner.stdinIsMedia = stage.readsStdin
        let status = await runner.run()
        if status != 0 { throw ExitCode(status) }
    }
}
