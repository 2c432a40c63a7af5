import LVBCore

/// Where `--egress` sends the room's stream: a media server's plain-RTP
/// input (Janus's streaming plugin `rtp` mountpoint, docs/janus), video and
/// audio on ports of their own, RTCP on the port above each.
public struct EgressTarget: Sendable, Equatable {
    public static let defaultVideoPort: UInt16 = 5004
    public static let defaultAudioPort: UInt16 = 5002
    public static let defaultVideoPayloadType: UInt8 = 100
    public static let defaultAudioPayloadType: UInt8 = 111
    /// "lvbv" and "lvba": any SSRC will do for the mountpoint; fixed ones
    /// read well in a capture.
    public static let defaultVideoSSRC: UInt32 = 0x6C76_6276
    public static let defaultAudioSSRC: UInt32 = 0x6C76_6261

    /// The server's address; `port` is the video port.
    public var video: PeerAddress
    public var audioPort: UInt16
    public var videoPayloadType: UInt8
    public var audioPayloadType: UInt8
    public var videoSSRC: UInt32
    public var audioSSRC: UInt32

    public init(video: PeerAddress, audioPort: UInt16 = defaultAudioPort,
                videoPayloadType: UInt8 = defaultVideoPayloadType, audioPayloadType: UInt8 = defaultAudioPayloadType,
                videoSSRC: UInt32 = defaultVideoSSRC, audioSSRC: UInt32 = defaultAudioSSRC) {
        self.video = video
        self.audioPort = audioPort
        self.videoPayloadType = videoPayloadType
        self.audioPayloadType = audioPayloadType
        self.videoSSRC = videoSSRC
        self.audioSSRC = audioSSRC
    }

    public var audio: PeerAddress { PeerAddress(host: video.host, port: audioPort) }
    public var videoRTCP: PeerAddress { PeerAddress(host: video.host, port: video.port &+ 1) }
    public var audioRTCP: PeerAddress { PeerAddress(host: video.host, port: audioPort &+ 1) }
}

/// What `RTPEgress` did and what the server said, for `stats`.
public struct EgressStats: Sendable, Equatable {
    public var videoPackets = 0
    public var audioPackets = 0
    public var bytes = 0
    /// Sends the socket refused (a full buffer; never retried).
    public var sendFailures = 0
    /// Copies that arrived twice (a repair's and the original) sent once.
    public var duplicates = 0
    /// Video packets held back until a keyframe (at the start, and after the
    /// stream's source changed), so the server never sees a broken picture.
    public var heldForKeyframe = 0
    /// Times the room's stream changed source under the server (a new SSRC,
    /// or a sequence jump): the server saw one stream go on.
    public var sourceChanges = 0
    public var senderReports = 0
    /// Feedback from the server.
    public var plis = 0
    public var firs = 0
    public var nacks = 0
    public var rembs = 0
    /// The server's latest bandwidth estimate (REMB), in bit/s; 0 before any.
    public var rembBitrate: UInt64 = 0
    /// Packets resent for the server's NACKs, and those asked for that were
    /// gone or over the retransmission budget.
    public var retransmitted = 0
    public var notRetransmitted = 0
    /// Keyframe requests passed upstream (at most one per `egressKeyframeInterval`).
    public var keyframeRequests = 0
    /// Requests folded into one already passed up.
    public var keyframeRequestsAggregated = 0
    public var malformedRTCP = 0
    /// RTCP from any address but the server's, dropped.
    public var strangerRTCP = 0
}

/// `--egress`, sans-IO: the room's stream as one plain RTP stream per medium
/// for a media server (RFC 3550), whatever happens upstream. Every packet is
/// renumbered onto a fixed SSRC and payload type whose sequence numbers and
/// timestamps go on across the host's source changes (link-mic, a page
/// camera) and the tree's failovers; copies that arrive twice go once; after
/// a change of source the video waits for the new source's keyframe, so the
/// server's subscribers see at most a keyframe. RTCP goes both ways: sender
/// reports every second (they carry the wall-clock mapping the server passes
/// to its subscribers for lip sync, and let the server learn where to send
/// feedback), and the server's feedback becomes what a child in the tree
/// would ask: PLI and FIR a keyframe request upstream (at most one per
/// `egressKeyframeInterval`, however many subscribers ask), a NACK resends
/// from this egress's own history (within a budget of a quarter of the
/// packets forwarded: feedback cannot make it send much more than the
/// stream), and REMB is recorded (one server's audience does not set the
/// room's rate: see lvbnode(1)).
public final class RTPEgress {
    public let target: EgressTarget
    public private(set) var stats = EgressStats()
    /// Sends one datagram to the server; false when the socket refused it.
    public var send: ((PeerAddress, [UInt8]) -> Bool)?

    private let clock: Clock
    private var video: EgressTrack
    private var audio: EgressTrack
    private var duplicates = DuplicateFilter()
    private var history = SendHistory()
    private var waitingForKeyframe = true
    private var keyframeWanted = false
    private var lastKeyframeRequest: Instant?
    private var lastReport: Instant?
    /// Retransmissions in hand (a quarter per video packet forwarded, at most `egressRetransmitBurst`).
    private var retransmitBudget = 0.0

    public init(target: EgressTarget, clock: Clock) {
        self.target = target
        self.clock = clock
        video = EgressTrack(clockRate: MediaConstants.videoClockRate)
        audio = EgressTrack(clockRate: MediaConstants.audioClockRate)
    }

    /// One RTP packet of the room's stream as it arrived (repairs and
    /// copies included, in any order).
    public func forward(_ packet: RTPPacket) {
        let isVideo = packet.payloadType == MediaConstants.videoPayloadType
        guard isVideo || packet.payloadType == MediaConstants.audioPayloadType else { return }
        if duplicates.check(ssrc: packet.ssrc, sequence: packet.sequenceNumber) != .new {
            stats.duplicates += 1
            return
        }
        let now = clock.now()
        if isVideo {
            if video.isNewSource(packet) {
                // Counted once, at the new source's first packet (the rest wait with it).
                if video.hasSent && !waitingForKeyframe { stats.sourceChanges += 1 }
                waitingForKeyframe = true
            }
            if waitingForKeyframe {
                guard Self.startsKeyframe(packet) else {
                    stats.heldForKeyframe += 1
                    requestKeyframe(now: now, aggregating: false)
                    return
                }
                waitingForKeyframe = false
                video.splice(packet, now: now)
            }
        } else if audio.isNewSource(packet) {
            if audio.hasSent { stats.sourceChanges += 1 }
            audio.splice(packet, now: now)
        }
        let (seq, ts) = isVideo ? video.map(packet, now: now) : audio.map(packet, now: now)
        guard let out = try? RTPPacket(marker: packet.marker, payloadType: isVideo ? target.videoPayloadType : target.audioPayloadType,
                                       sequenceNumber: seq, timestamp: ts, ssrc: isVideo ? target.videoSSRC : target.audioSSRC,
                                       payload: packet.payload) else { return }
        let bytes = out.serialized()
        if isVideo {
            history.store(seq, bytes)
            retransmitBudget = min(MediaConstants.egressRetransmitBurst, retransmitBudget + MediaConstants.egressRetransmitShare)
            stats.videoPackets += 1
        } else {
            stats.audioPackets += 1
        }
        transmit(bytes, to: isVideo ? target.video : target.audio)
        if lastReport == nil { sendReports(now: now) }
    }

    /// A datagram that came to the egress socket.
    public func receiveRTCP(_ bytes: ArraySlice<UInt8>, from source: PeerAddress) {
        guard source.host == target.video.host else {
            stats.strangerRTCP += 1
            return
        }
        let packets: [RTCPPacket]
        do { packets = try RTCPPacket.parseCompound(bytes) } catch {
            stats.malformedRTCP += 1
            return
        }
        let now = clock.now()
        for packet in packets {
            switch packet {
            // One video stream goes to the server: whatever SSRC a request
            // names (Janus names the one it saw, others 0), it is for that one.
            case .pli:
                stats.plis += 1
                requestKeyframe(now: now)
            case .fir:
                stats.firs += 1
                requestKeyframe(now: now)
            case .nack(let nack):
                stats.nacks += 1
                for seq in nack.lostSequenceNumbers { retransmit(seq) }
            case .remb(let remb):
                stats.rembs += 1
                stats.rembBitrate = remb.bitrate
            default:
                break
            }
        }
    }

    /// True once after the server (or a change of source) wanted a
    /// keyframe: the owner asks upstream as a child in the tree would.
    public func takeKeyframeRequest() -> Bool {
        defer { keyframeWanted = false }
        return keyframeWanted
    }

    /// Runs timers (call every 100 ms or so): the sender reports.
    public func tick() {
        let now = clock.now()
        if let last = lastReport, now - last >= MediaConstants.senderReportInterval { sendReports(now: now) }
    }

    /// Asks upstream for a keyframe unless it did within `egressKeyframeInterval`
    /// (a request from the server is then counted as folded into that one).
    private func requestKeyframe(now: Instant, aggregating: Bool = true) {
        if let last = lastKeyframeRequest, now - last < MediaConstants.egressKeyframeInterval {
            if aggregating { stats.keyframeRequestsAggregated += 1 }
            return
        }
        lastKeyframeRequest = now
        keyframeWanted = true
        stats.keyframeRequests += 1
    }

    private func retransmit(_ seq: UInt16) {
        guard retransmitBudget >= 1, let bytes = history.packet(seq) else {
            stats.notRetransmitted += 1
            return
        }
        retransmitBudget -= 1
        stats.retransmitted += 1
        transmit(bytes, to: target.video)
    }

    private func transmit(_ bytes: [UInt8], to address: PeerAddress) {
        if send?(address, bytes) == true { stats.bytes += bytes.count } else { stats.sendFailures += 1 }
    }

    private func sendReports(now: Instant) {
        lastReport = now
        let ntp = NTPTime.from(clock.wallTime())
        for (track, ssrc, address) in [(video, target.videoSSRC, target.videoRTCP), (audio, target.audioSSRC, target.audioRTCP)] {
            guard let rtp = track.timestamp(at: now),
                  let sr = try? RTCPSenderReport(ssrc: ssrc, ntpTimestamp: ntp, rtpTimestamp: rtp,
                                                 packetCount: track.packets, octetCount: track.octets) else { continue }
            stats.senderReports += 1
            transmit(RTCPPacket.senderReport(sr).serialized(), to: address)
        }
    }

    /// Whether `packet` is the first of a VP8 keyframe (RFC 7741 §4.3).
    public static func startsKeyframe(_ packet: RTPPacket) -> Bool {
        guard let (descriptor, data) = try? VP8PayloadDescriptor.parse(packet.payload) else { return false }
        return descriptor.startsKeyframe(data)
    }
}

/// One medium of the egress: maps each source's sequence numbers and
/// timestamps onto the one stream the server sees.
struct EgressTrack {
    let clockRate: Int
    /// The SSRC of the source now mapped.
    private(set) var source: UInt32?
    private var newestIn: UInt16 = 0
    private var seqOffset: UInt16 = 0
    private var tsOffset: UInt32 = 0
    /// The newest packet sent: its sequence number, timestamp, and when its
    /// timestamp was first sent.
    private var newestOut: (seq: UInt16, ts: UInt32, at: Instant)?
    private(set) var packets: UInt32 = 0
    private(set) var octets: UInt32 = 0

    init(clockRate: Int) { self.clockRate = clockRate }

    var hasSent: Bool { newestOut != nil }

    /// Whether `packet` starts another source: another SSRC, or the same one
    /// numbering from elsewhere (a jump RFC 3550 §A.1 reads as a restart).
    func isNewSource(_ packet: RTPPacket) -> Bool {
        guard let source else { return true }
        return source != packet.ssrc || abs(sequenceDistance(from: newestIn, to: packet.sequenceNumber)) >= MediaConstants.egressMaxJump
    }

    /// From `packet` on, its source follows the last packet sent: one
    /// sequence number on, and as many ticks on as time passed.
    mutating func splice(_ packet: RTPPacket, now: Instant) {
        source = packet.ssrc
        newestIn = packet.sequenceNumber
        guard let last = newestOut else { return }
        let elapsed = max(1, VideoStreamEncoder.ticks(now - last.at, rate: clockRate))
        seqOffset = last.seq &+ 1 &- packet.sequenceNumber
        tsOffset = last.ts &+ elapsed &- packet.timestamp
    }

    mutating func map(_ packet: RTPPacket, now: Instant) -> (UInt16, UInt32) {
        if source == nil { splice(packet, now: now) }
        if sequenceDistance(from: newestIn, to: packet.sequenceNumber) > 0 { newestIn = packet.sequenceNumber }
        let seq = packet.sequenceNumber &+ seqOffset, ts = packet.timestamp &+ tsOffset
        if let last = newestOut {
            if sequenceDistance(from: last.seq, to: seq) > 0 { newestOut = (seq, ts, ts == last.ts ? last.at : now) }
        } else {
            newestOut = (seq, ts, now)
        }
        packets &+= 1
        octets &+= UInt32(truncatingIfNeeded: packet.payload.count)
        return (seq, ts)
    }

    /// The RTP time that corresponds to `now` (for a sender report).
    func timestamp(at now: Instant) -> UInt32? {
        newestOut.map { $0.ts &+ VideoStreamEncoder.ticks(now - $0.at, rate: clockRate) }
    }
}
