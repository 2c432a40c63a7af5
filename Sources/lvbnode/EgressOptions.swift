import ArgumentParser
import LVBCore
import LVBMedia

/// `--egress`: the room's stream handed to a media server (host and join).
struct EgressOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Hand the room's stream to a media server's plain-RTP input, e.g. a Janus streaming mountpoint (docs/janus): video to IP:PORT (port 5004 if left out), its RTCP feedback on PORT+1.", valueName: "ip[:port]"))
    var egress: String?

    @Option(name: .long, help: ArgumentHelp("The server's audio port (RTCP on the port above).", valueName: "port"))
    var egressAudioPort: UInt16 = EgressTarget.defaultAudioPort

    @Option(name: .long, help: ArgumentHelp("RTP payload types of the video and the audio, as the server expects them.", valueName: "video,audio"))
    var egressPayloadTypes = "\(EgressTarget.defaultVideoPayloadType),\(EgressTarget.defaultAudioPayloadType)"

    @Option(name: .long, help: ArgumentHelp("SSRCs of the video and the audio the server gets (decimal, or hex with 0x).", valueName: "video,audio"))
    var egressSsrcs = String(format0x: EgressTarget.defaultVideoSSRC) + "," + String(format0x: EgressTarget.defaultAudioSSRC)

    /// The server, or nil without `--egress`.
    func target() throws -> EgressTarget? {
        guard let egress else { return nil }
        let address: PeerAddress
        if let parsed = try? PeerAddress(parsing: egress) {
            address = parsed
        } else if let host = try? PeerAddress(parsing: egress.hasPrefix("[") || !egress.contains(":") ? "\(egress):0" : "[\(egress)]:0") {
            address = PeerAddress(host: host.host, port: EgressTarget.defaultVideoPort)
        } else {
            throw ValidationError("--egress: \(egress) is not IP or IP:PORT (e.g. 127.0.0.1, 127.0.0.1:5004, [::1]:5004)")
        }
        guard address.port > 0, address.port < UInt16.max else { throw ValidationError("--egress needs a video port in 1...65534 (RTCP goes to PORT+1)") }
        guard egressAudioPort > 0, egressAudioPort < UInt16.max else { throw ValidationError("--egress-audio-port must be 1...65534 (RTCP goes to PORT+1)") }
        let ports: Set = [address.port, address.port + 1, egressAudioPort, egressAudioPort + 1]
        guard ports.count == 4 else {
            throw ValidationError("--egress and --egress-audio-port overlap: video, its RTCP, audio and its RTCP need four ports (5004, 5005, 5002, 5003 by default)")
        }
        let types = try Self.pair(egressPayloadTypes, what: "--egress-payload-types", range: 96...127)
        let ssrcs = try Self.pair(egressSsrcs, what: "--egress-ssrcs", range: 1...UInt64(UInt32.max))
        guard ssrcs.0 != ssrcs.1 else { throw ValidationError("--egress-ssrcs: video and audio need different SSRCs") }
        guard types.0 != types.1 else { throw ValidationError("--egress-payload-types: video and audio need different payload types") }
        return EgressTarget(video: address, audioPort: egressAudioPort,
                            videoPayloadType: UInt8(types.0), audioPayloadType: UInt8(types.1),
                            videoSSRC: UInt32(ssrcs.0), audioSSRC: UInt32(ssrcs.1))
    }

    func validate() throws { _ = try target() }

    private static func pair(_ text: String, what: String, range: ClosedRange<UInt64>) throws -> (UInt64, UInt64) {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { part -> UInt64? in
            part.hasPrefix("0x") ? UInt64(part.dropFirst(2), radix: 16) : UInt64(part)
        }
        guard parts.count == 2, let a = parts[0], let b = parts[1], range.contains(a), range.contains(b) else {
            throw ValidationError("\(what) must be two numbers VIDEO,AUDIO in \(range.lowerBound)...\(range.upperBound)")
        }
        return (a, b)
    }
}

private extension String {
    init(format0x value: UInt32) { self = "0x" + String(value, radix: 16) }
}
