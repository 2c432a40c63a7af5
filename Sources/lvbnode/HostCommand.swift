import ArgumentParser
import LVBCore
import LVBMedia
import LVBCrypto
import LVBGossip
import LVBRoom
import LVBTransport

/// `lvbnode host`: start a room and print its join ticket.
struct HostCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "host",
        abstract: "Start a live room and print its join ticket.",
        discussion: "Listens on [::]:7400 (IPv6 and IPv4) unless --listen says otherwise, admits joiners, and runs the room until /close, /quit, SIGINT/SIGTERM or --duration.")

    @OptionGroup var node: NodeOptions
    @OptionGroup var profile: ProfileOptions
    @OptionGroup(title: "Media") var media: HostMediaOptions
    @OptionGroup(title: "Replays") var replays: ReplayOptions
    @OptionGroup(title: "Media server") var egress: EgressOptions

    @Option(name: .long, help: ArgumentHelp("Ask this STUN server (IP:PORT, repeatable; any RFC 8489 Binding server) where it sees this node, and announce that address too.", valueName: "ip:port"))
    var stun: [String] = []

    @Option(name: .long, help: ArgumentHelp("Link-mic: co-hosts on stage at once (0 turns link-mic off: requests are declined at once).", valueName: "n"))
    var maxGuests = RoomConstants.defaultMaxGuests

    @Option(name: .long, help: ArgumentHelp("Room title shown to viewers (1–100 bytes).", valueName: "text"))
    var title: String?

    @Option(name: .long, help: ArgumentHelp("Chat lines and bullet comments the whole room carries a second, 1–1000 (default \(RoomConstants.defaultRoomChatRate)); a viewer's line past it is refused at the viewer with a note to wait. /chatrate changes it live.", valueName: "n"))
    var chatRate: UInt16?

    @Option(name: .long, help: ArgumentHelp("Make the room private: joiners need this password (never sent: joiners prove it).", valueName: "password"))
    var password: String?

    @Flag(name: .long, help: "Make the room private: joiners need an invite from /invite.")
    var inviteOnly = false

    @Option(name: .long, help: ArgumentHelp("Announce the room to this rendezvous, IP:PORT (repeatable), so `lvbnode rooms` lists it and viewers join it by its id.", valueName: "ip:port"))
    var rendezvous: [String] = []

    func validate() throws {
        if password != nil && inviteOnly { throw ValidationError("choose one of --password and --invite-only") }
        for r in rendezvous { _ = try parseAddress(r, what: "--rendezvous") }
        if let password, password.isEmpty { throw ValidationError("--password must not be empty") }
        for server in stun { _ = try parseAddress(server, what: "--stun") }
        if node.relaySlots == 0 { throw ValidationError("--relay-slots: a host needs at least 1 (the viewers it sends its stream to directly)") }
        if node.lie != nil { throw ValidationError("--lie is a relaying viewer's: a host makes its stream (use it with lvbnode join)") }
        if !(0...MixConstants.maxGuests).contains(maxGuests) { throw ValidationError("--max-guests must be 0...\(MixConstants.maxGuests)") }
        if let chatRate, !RoomInfo.chatRates.contains(chatRate) {
            throw ValidationError("--chat-rate must be 1...1000 (chat lines a second for the whole room)")
        }
        if let title {
            do { try EventBody.roomInfo(RoomInfo(title: title)).validate() } catch { throw ValidationError("--title: \(error)") }
        }
        if (media.video == "page" || media.audio == "page") && node.web == nil {
            throw ValidationError("--video page and --audio page take the studio page's camera and microphone: add --web PORT and press \"Go live with my camera\" there")
        }
    }

    func run() async throws {
        var mediaSetup: PublisherSetup
        do {
            mediaSetup = try media.publisherSetup()
            // With a page, its camera can take the place of the host's own sources ("Go live with my camera").
            if node.web != nil { try mediaSetup.feedFromPage(video: media.video == "page", audio: media.audio == "page") }
        } catch {
            Output.fail("\(error)")
            throw ExitCode(1)
        }
        let room = RoomID.random(SodiumRandom.shared)
        let mode: AdmissionPolicy.Mode
        var access: UInt8 = 0
        if let password {
            do { mode = .password(roomKey: try PasswordKey.derive(password: password, roomID: room.bytes)) } catch {
                Output.fail("--password: \(error)")
                throw ExitCode(64)
            }
            access = 1
        } else if inviteOnly {
            mode = .inviteOnly
            access = 2
        } else {
            mode = .open
        }
        let started = SystemClock.shared.wallTime().milliseconds
        var runner = NodeRunner(options: node, setup: .host(room: room, mode: mode, access: access,
                                                            info: RoomInfo(title: title, startedAt: started, chatRate: chatRate)))
        runner.profile = profile.profile
        runner.publish = mediaSetup.isEmpty ? nil : mediaSetup
        runner.egress = try egress.target()
        if runner.egress != nil && mediaSetup.isEmpty {
            Output.fail("--egress hands on the host's stream, and this host sends none: drop --video none --audio none, or --egress")
            throw ExitCode(64)
        }
        runner.maxGuests = maxGuests
        runner.stdinIsMedia = media.readsStdin
        runner.replay = try replays.settings(node.identity)
        runner.replayStays = replays.replay == true
        runner.rendezvous = try rendezvous.map { try parseAddress($0, what: "--rendezvous") }
        runner.stun = try stun.map { try parseAddress($0, what: "--stun") }
        let status = await runner.run()
        if status != 0 { throw ExitCode(status) }
    }
}
