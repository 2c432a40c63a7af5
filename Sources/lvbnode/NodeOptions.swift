import ArgumentParser
import LVBCore
import LVBCrypto
import LVBGossip
import LVBMedia
import LVBRoom
import LVBTransport

/// Options every running node shares (host and join).
struct NodeOptions: ParsableArguments {
    @OptionGroup var identity: IdentityOptions

    @Option(name: .long, help: ArgumentHelp("Local UDP address to bind, as IP:PORT or [IPv6]:PORT. Default: [::] (IPv6 and IPv4).", valueName: "ip:port"))
    var listen: String?

    @Option(name: .long, help: ArgumentHelp("Hand out this address (IP:PORT, repeatable) in tickets, announcements and introductions instead of this machine's own (a forwarded port, a known public address, a relay in front).", valueName: "ip:port"))
    var advertise: [String] = []

    @Flag(name: .long, help: "Print one JSON object per line instead of readable text.")
    var json = false

    @Option(name: .long, help: ArgumentHelp("The media tree: children this node sends the stream to (a host: viewers it serves directly; a viewer: viewers it relays to, before decoding). 0 makes a viewer a leaf; at most \(RelayPosition.maxSlots).", valueName: "n"))
    var relaySlots: Int = RoomConstants.defaultRelaySlots

    @Option(name: .long, help: ArgumentHelp("Relay, up to this many kbit/s in all (\(IntroductionConstants.relayPairKbps) a pair at most), for members this node introduced that cannot reach each other directly (both behind NATs that pick a new port for every destination, and no relaying rendezvous); 0: never. Default \(RoomConstants.defaultHostRelayKbps) for a host (it introduces its members to each other), 0 for a viewer and for a rendezvous.", valueName: "kbps"))
    var relayKbps: Int?

    @Option(name: .long, help: ArgumentHelp("Serve the studio page (video, chat, bullet comments, likes, viewers, link-mic) to a browser on this machine at [IP:]PORT (IP defaults to 127.0.0.1); the node prints the page's URL with its access token. On stage, a co-host's page can send the browser's own camera and microphone in place of --video/--audio (at once with --video none --audio none). Playing a replay, the page gets the replay's controls (play, pause, a scrubber, speed).", valueName: "[ip:]port"))
    var web: String?

    @Option(name: .long, help: ArgumentHelp("Leave cleanly after this many seconds.", valueName: "seconds"))
    var duration: Double?

    @Option(name: .long, help: ArgumentHelp("Log level on stderr: trace, debug, info, notice, warning, error, critical.", valueName: "level"))
    var logLevel: String = "warning"

    @Option(name: .long, help: ArgumentHelp("Drop this share (0 to 1) of the datagrams this node receives, before reading them: a lossy link into it whichever address a peer uses, for tests and the demo mesh (`lvbnode impair` is the relay for one path).", valueName: "share"))
    var inboundLoss: Double = 0

    @Option(name: .long, help: ArgumentHelp("For tests only: relay to this node's children media the host did not make — alter (flip bytes), inject (a picture of its own), replay (old frames as new) or strip (drop the signatures) — to see them refuse it, leave this node and play on. Never in a real room.", valueName: "mode"))
    var lie: String?

    @Flag(name: .long, help: ArgumentHelp("For measurement only (what seals cost): a host sends its stream unsigned, a viewer takes media without checking its signatures, so anyone on the path could show it anything. Both ends need it: a checking viewer refuses an unsigned stream. Never in a real room."))
    var unsealed = false

    @Flag(name: .long, help: ArgumentHelp("For tests only, with --lie: also tell this node's children every 250 ms that its own parent lied (false excuses), to see what they still cost it."))
    var lieExcuses = false

    @Option(name: .long, help: ArgumentHelp("For tests only, with --lie: relay the truth for this many seconds first, so children that watched the true stream meet the lie.", valueName: "seconds"))
    var lieAfter: Double = 0

    /// Set by `lvbnode mesh` for the nodes it runs: they end with it, even when it is killed.
    @Option(name: .long, help: .hidden)
    var parentPid: Int32?

    func validate() throws {
        if let listen { _ = try parseAddress(listen, what: "--listen") }
        for a in advertise {
            let address = try parseAddress(a, what: "--advertise")
            if address.port == 0 || address.isIPv6Unspecified || address.host == .v4(0) { throw ValidationError("--advertise \(a): give an address others can dial, with its port") }
        }
        guard (0...Int(RelayPosition.maxSlots)).contains(relaySlots) else {
            throw ValidationError("--relay-slots must be between 0 and \(RelayPosition.maxSlots)")
        }
        if let web { _ = try WebAddress(parsing: web) }
        if let lie, RelayLieMode(rawValue: lie) == nil {
            throw ValidationError("--lie must be one of \(RelayLieMode.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        if lieExcuses, lie == nil { throw ValidationError("--lie-excuses goes with --lie MODE: a relay that lies, then excuses itself") }
        if lieAfter != 0, lie == nil || !(0...3600).contains(lieAfter) {
            throw ValidationError("--lie-after goes with --lie MODE and takes 0 to 3600 seconds")
        }
        if let relayKbps, !(0...1_000_000).contains(relayKbps) { throw ValidationError("--relay-kbps must be 0...1000000") }
        guard inboundLoss >= 0, inboundLoss < 1 else { throw ValidationError("--inbound-loss must be at least 0 and below 1 (0.1 drops a tenth)") }
        if let duration, !(duration > 0) { throw ValidationError("--duration must be a positive number of seconds") }
        guard LogLevelName.parse(logLevel) != nil else {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical")
        }
    }

    /// The addresses others are given to reach this node bound at `local`.
    func advertised(for local: PeerAddress) -> [PeerAddress] {
        let given = advertise.compactMap { try? PeerAddress(parsing: $0) }
        return given.isEmpty ? LocalAddresses.advertised(for: local) : given
    }

    func listenAddress(defaultPort: UInt16) throws -> PeerAddress {
        if let listen { return try parseAddress(listen, what: "--listen") }
        // One dual-stack socket reaches a peer of either family, whatever the
        // user dials (the transport falls back to 0.0.0.0 without IPv6).
        return .anyDualStack(port: defaultPort)
    }
}

/// Where the node's identity comes from.
struct IdentityOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Node home directory (identity key). Default: $LVBNODE_HOME, else ~/.lvbnode.", valueName: "dir"))
    var home: String?

    @Flag(name: .long, help: "Use a fresh in-memory identity instead of the one in the home directory.")
    var ephemeral = false

    func load() throws -> (Identity, note: String?) {
        if ephemeral { return (Identity.generate(), nil) }
        let dir = home ?? IdentityStore.defaultHome(environment: ProcessEnvironment.all)
        let (identity, created) = try IdentityStore.loadOrCreate(home: dir)
        return (identity, created ? "created a new identity in \(dir)" : nil)
    }
}

func parseAddress(_ text: String, what: String) throws -> PeerAddress {
    do { return try PeerAddress(parsing: text) } catch {
        throw ValidationError("\(what): \(error)")
    }
}

enum LogLevelName {
    static func parse(_ s: String) -> String? {
        ["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(s.lowercased()) ? s.lowercased() : nil
    }
}
