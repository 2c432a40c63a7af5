import ArgumentParser
import LVBCrypto
import LVBReplay

/// Where replays are kept, and how much of the disk they may take.
struct ReplayPlace: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Directory of replays. Default: replays/ in the node's home directory.", valueName: "dir"))
    var replayDir: String?

    @Option(name: .long, help: ArgumentHelp("Disk the replays this node holds may take, e.g. 500M or 2G (at least 16M; default 2G): the oldest go first, and one that alone passes it stops being kept, with a line.", valueName: "size"))
    var replayBudget: String?

    func validate() throws {
        if let replayBudget { _ = try ReplayOptions.parseSize(replayBudget, what: "--replay-budget") }
    }

    func budget() throws -> Int64 {
        try replayBudget.map { try ReplayOptions.parseSize($0, what: "--replay-budget") } ?? ReplayConstants.defaultBudget
    }

    func directory(_ identity: IdentityOptions) -> String { ReplayOptions.directory(replayDir, home: identity.home) }
}

/// A host's replay of its live.
struct ReplayOptions: ParsableArguments {
    @Flag(inversion: .prefixedNo, help: "Keep a replay of the live (the stream as sent, the mix included, no re-encoding) for `lvbnode replays`. Default: on, except with --ephemeral. Given, the host serves the replay after /close until /quit.")
    var replay: Bool?

    @OptionGroup var place: ReplayPlace

    /// The directory and budget when replays are kept, else nil.
    func settings(_ identity: IdentityOptions) throws -> (directory: String, budget: Int64)? {
        guard replay ?? !identity.ephemeral else { return nil }
        return (place.directory(identity), try place.budget())
    }

    /// `--replay-dir`, else replays/ in the node's home (`--home`, else the default home).
    static func directory(_ given: String?, home: String?) -> String {
        given ?? (home ?? IdentityStore.defaultHome(environment: ProcessEnvironment.all)) + "/replays"
    }

    /// "500M", "2G", "1.5G", "65536": bytes, with K, M, G or T in powers of 1024.
    static func parseSize(_ text: String, what: String) throws -> Int64 {
        let units: [Character: Double] = ["K": 1024, "M": 1_048_576, "G": 1_073_741_824, "T": 1_099_511_627_776]
        var digits = Substring(text.uppercased())
        if digits.hasSuffix("B"), digits.count > 1, units[digits[digits.index(before: digits.index(before: digits.endIndex))]] != nil { digits = digits.dropLast() }
        var scale = 1.0
        if let last = digits.last, let u = units[last] { scale = u; digits = digits.dropLast() }
        guard let n = Double(digits), n.isFinite, n > 0 else {
            throw ValidationError("\(what) \(text): give a size such as 500M or 2G")
        }
        let bytes = n * scale
        guard bytes >= 16 * 1_048_576, bytes < Double(Int64.max / 2) else {
            throw ValidationError("\(what) \(text): give at least 16M")
        }
        return Int64(bytes)
    }
}

/// A viewer that plays a replay may keep it and serve it to others.
struct KeepReplayOptions: ParsableArguments {
    @Flag(name: .long, help: "Playing a replay: fetch and keep all of it (within --replay-budget) and serve it to other players while this node runs (`lvbnode replays --serve` serves it later).")
    var keepReplays = false

    @OptionGroup var place: ReplayPlace
}
