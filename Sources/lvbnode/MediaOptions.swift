import ArgumentParser
import LVBCore
import LVBMedia

/// What the host streams (`lvbnode host`).
struct HostMediaOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Video source: synthetic (test pattern), FILE.y4m (looped), - (Y4M on stdin), none, or (a host with --web) page: the studio page's camera, black until it is on; with --web any source gives way to the page's camera while it is on.", valueName: "source"))
    var video = "synthetic"

    @Option(name: .long, help: ArgumentHelp("Audio source: synthetic (tone with a beep each second), FILE.wav (48 kHz 16-bit, looped), - (WAV on stdin), none, or (a host with --web) page: the studio page's microphone, silent until its camera is on.", valueName: "source"))
    var audio = "synthetic"

    @Option(name: .long, help: ArgumentHelp("Video size, WIDTHxHEIGHT (default 640x360; a Y4M file is scaled to it when given).", valueName: "WxH"))
    var size: String?

    @Option(name: .long, help: ArgumentHelp("Frames per second (default 30; a Y4M file's own rate unless given).", valueName: "n"))
    var fps: Int?

    @Option(name: .long, help: ArgumentHelp("Seconds between keyframes.", valueName: "seconds"))
    var gop: Double = 2

    @Option(name: .long, help: ArgumentHelp("Video target bitrate in kbit/s (rate control backs off from it on loss and probes back up).", valueName: "kbps"))
    var bitrate: Int = 1000

    @Flag(name: .long, help: "Do not send a new viewer the current GOP (it then waits for a keyframe).")
    var noGopCache = false

    func validate() throws {
        if video == "-" && audio == "-" { throw ValidationError("only one of --video and --audio can read stdin") }
        if let size { _ = try Self.parseSize(size) }
        if let fps, !(1...120).contains(fps) { throw ValidationError("--fps must be 1...120") }
        if !(gop > 0 && gop <= 60) { throw ValidationError("--gop must be more than 0 and at most 60 seconds") }
        if !(50...20_000).contains(bitrate) { throw ValidationError("--bitrate must be 50...20000 kbit/s") }
    }

    /// Opens the sources the options name (a file that cannot be used fails
    /// here with one line naming it and what is supported).
    func publisherSetup(look: SyntheticLook = .host) throws(MediaError) -> PublisherSetup {
        var setup = try PublisherSetup.open(video: .init(video), audio: .init(audio),
                                            size: size.flatMap { try? Self.parseSize($0) }, fps: fps, clock: SystemClock.shared, look: look)
        setup.gopSeconds = gop
        setup.bitrateKbps = bitrate
        setup.gopCache = !noGopCache
        return setup
    }

    var readsStdin: Bool { video == "-" || audio == "-" }

    static func parseSize(_ text: String) throws -> (width: Int, height: Int) {
        let parts = text.lowercased().split(separator: "x")
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]),
              I420Frame.sizeRange.contains(w), I420Frame.sizeRange.contains(h), w % 2 == 0, h % 2 == 0 else {
            throw ValidationError("--size must be WIDTHxHEIGHT with even edges in 16...4096, e.g. 640x360")
        }
        return (w, h)
    }
}

/// What a viewer does with the stream (`lvbnode join`).
struct ViewerMediaOptions: ParsableArguments {
    @Flag(name: .long, help: "Take no media: chat and room events only.")
    var noMedia = false

    @Option(name: .long, help: ArgumentHelp("Record the stream, as sent (no re-encoding), to a WebM file (VP8 + Opus) in this directory.", valueName: "dir"))
    var record: String?

    @Option(name: .long, help: ArgumentHelp("Forward the stream as plain RTP to IP:PORT (video) and IP:PORT+2 (audio), e.g. for ffplay with --sdp.", valueName: "ip:port"))
    var rtpOut: String?

    @Option(name: .long, help: ArgumentHelp("Write an SDP file describing --rtp-out (ffplay -protocol_whitelist file,udp,rtp -i FILE).", valueName: "file"))
    var sdp: String?

    @Option(name: .long, help: ArgumentHelp("Write decoded video as Y4M to FILE, or - for stdout.", valueName: "file"))
    var videoOut: String?

    @Option(name: .long, help: ArgumentHelp("Write decoded audio as WAV (48 kHz mono) to FILE, or - for stdout.", valueName: "file"))
    var audioOut: String?

    /// Where the stream goes; nil with `--no-media`.
    func sinkOptions(startedAt: Instant) -> SinkOptions? {
        guard !noMedia else { return nil }
        var options = SinkOptions(record: record, videoOut: videoOut, audioOut: audioOut,
                                  rtpOut: rtpOut.flatMap { try? PeerAddress(parsing: $0) }, sdp: sdp)
        options.startedAt = startedAt
        return options
    }

    func validate() throws {
        if noMedia, record != nil || rtpOut != nil || videoOut != nil || audioOut != nil {
            throw ValidationError("--no-media takes no media: drop --record, --rtp-out, --video-out and --audio-out")
        }
        if videoOut == "-" && audioOut == "-" { throw ValidationError("only one of --video-out and --audio-out can write stdout") }
        if sdp != nil && rtpOut == nil { throw ValidationError("--sdp describes --rtp-out: give --rtp-out IP:PORT too") }
        if let rtpOut {
            let address = try parseAddress(rtpOut, what: "--rtp-out")
            guard address.port > 0, address.port < 65534 else { throw ValidationError("--rtp-out needs a port below 65534 (audio goes to PORT+2)") }
        }
    }
}
