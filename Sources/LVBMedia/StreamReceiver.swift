import LVBCore
import Logging

/// The receive pipeline of one stream (one origin's video and audio), sans-IO:
/// takes the stream's RTP and RTCP, runs the video and audio receivers
/// (jitter buffer, NACK, keyframe requests, decoding), hands decoded frames to
/// its sinks and produces feedback for the node it receives from. Sending
/// feedback is what subscribes: the first receiver report goes out on
/// `subscribe()`, and one at least every `resubscribeInterval` after.
public final class StreamReceiver {
    public private(set) var video: VideoReceiver
    public private(set) var audio: AudioReceiver
    /// Every decoded (or skipped-to) video frame, in decode order.
    public var onVideo: ((ReceivedVideoFrame) -> Void)?
    /// One 20 ms block of audio, every 20 ms while the stream plays.
    public var onAudio: ((ReceivedAudioFrame) -> Void)?
    /// Every RTP packet of the stream the checker let through, when it did
    /// (`NodeMedia`'s taps: `--rtp-out`, `--egress`).
    public var onPacket: ((RTPPacket) -> Void)?
    /// Checks the origin's seals (`MediaSeal`): nothing else reaches the
    /// pipelines and `onPacket` (`AdmitAll`: an unsealed stream, in tests of the pipeline alone).
    public let checker: any MediaAdmission
    /// The checker refused something (the node that feeds us sent it), with
    /// the video sequence numbers dropped with it; nil: a frame a former
    /// feeder began failed, nobody to blame.
    public var onRefused: ((SealFailure?, [UInt16]) -> Void)?
    /// After each RTP packet is taken in: `nextWakeup` may have moved earlier.
    public var onReceived: (() -> Void)?
    /// Just before each video frame is decoded (see `VideoReceiver.beforeDecode`).
    public var beforeDecode: (() -> Void)? {
        didSet { video.beforeDecode = beforeDecode }
    }
    /// Sends one RTCP datagram upstream (the owner seals it into the session).
    public var sendFeedback: (([UInt8]) -> Void)?
    public private(set) var malformed = 0
    public private(set) var unknownPayloadTypes = 0
    /// RTP bytes received per medium (retransmissions included).
    public private(set) var videoBytes = 0
    public private(set) var audioBytes = 0

    private let clock: Clock
    private let maxDatagram: Int
    private let log = Log.logger("media")
    private var subscribed = false
    private var lastFeedback: Instant?
    /// This receiver's own SSRC (the sender of its feedback).
    public let ssrc: UInt32
    /// Media (payload types) whose next packet of another SSRC starts a new stream.
    private var switchExpected: Set<UInt8> = []
    private var lastVideoRTP: Instant?
    private var lastAudioRTP: Instant?
    /// When the pipelines last took a packet (of a sealed stream: one verified).
    public private(set) var lastTaken: Instant?
    /// Times the sender's stream was replaced by another (SSRC change).
    public private(set) var streamSwitches = 0
    /// NACK packets sent upstream over the receiver's life (across stream switches).
    public private(set) var nacksSent = 0

    /// - Parameters:
    ///   - ssrc: this receiver's own SSRC (the sender of its feedback).
    ///   - maxDatagram: the largest RTCP datagram the transport carries.
    ///   - checker: what it lets through (the origin's seals).
    public init(clock: Clock, ssrc: UInt32, maxDatagram: Int, checker: any MediaAdmission) throws(MediaError) {
        self.clock = clock
        self.checker = checker
        self.maxDatagram = maxDatagram
        self.ssrc = ssrc
        video = try VideoReceiver(clock: clock, ssrc: ssrc)
        audio = try AudioReceiver(clock: clock, ssrc: ssrc)
    }

    /// One RTP packet of the stream.
    public func receiveRTP(_ payload: ArraySlice<UInt8>) {
        let packet: RTPPacket
        do { packet = try RTPPacket.parse(payload) } catch {
            malformed += 1
            log.debug("malformed RTP: \(error)")
            return
        }
        receiveRTP(packet, bytes: payload)
    }

    /// The same, already parsed (a relaying node parses once for its relay
    /// and its receiver). Only what the `checker` let through goes on;
    /// `fromOrigin`: it came over a session with the stream's origin itself.
    public func receiveRTP(_ packet: RTPPacket, bytes payload: ArraySlice<UInt8>, fromOrigin: Bool = false) {
        switch packet.payloadType {
        case MediaConstants.videoPayloadType: videoBytes += payload.count
        case MediaConstants.audioPayloadType: audioBytes += payload.count
        default:
            unknownPayloadTypes += 1
            return
        }
        let now = clock.now()
        // A new stream starts as its first packet arrives, not once verified:
        // its receiver sees every arrival (its first keyframe may need repairs).
        adopt(packet, now: now)
        if packet.payloadType == MediaConstants.videoPayloadType, packet.ssrc == videoSSRC { video.arrived(packet) }
        handle(checker.retry(now: now) + checker.receive(packet, now: now, fromOrigin: fromOrigin))
        poll()
        onReceived?()
    }

    /// What the checker let through goes on; what it refused is asked for again and reported.
    private func handle(_ outputs: [SealOutput]) {
        for output in outputs {
            switch output {
            case .video(let packets): for p in packets { take(p) }
            case .audio(let p): take(p)
            case .dropped(let seqs):
                video.askAgain(seqs)
                onRefused?(nil, seqs)
            case let .forged(failure, seqs):
                video.askAgain(seqs)
                log.debug("refused media: \(failure.rawValue)")
                onRefused?(failure, seqs)
            }
        }
    }

    /// The video and audio streams taken now (their SSRCs), adopted as their
    /// first packets arrive (the receivers learn theirs only from verified ones).
    private var videoSSRC: UInt32?
    private var audioSSRC: UInt32?

    /// A packet of another SSRC than the stream taken starts a new stream
    /// (with fresh receivers) when one is expected or the current one is silent.
    private func adopt(_ packet: RTPPacket, now: Instant) {
        switch packet.payloadType {
        case MediaConstants.videoPayloadType:
            if let current = videoSSRC, current != packet.ssrc, switches(MediaConstants.videoPayloadType, since: lastVideoRTP, now: now),
               let fresh = try? VideoReceiver(clock: clock, ssrc: ssrc) {
                fresh.rtt = video.rtt
                fresh.beforeDecode = beforeDecode
                video = fresh
                videoSSRC = packet.ssrc
            }
            if videoSSRC == nil { videoSSRC = packet.ssrc }
            if packet.ssrc == videoSSRC { lastVideoRTP = now }
        case MediaConstants.audioPayloadType:
            if let current = audioSSRC, current != packet.ssrc, switches(MediaConstants.audioPayloadType, since: lastAudioRTP, now: now),
               let fresh = try? AudioReceiver(clock: clock, ssrc: ssrc) {
                audio = fresh
                audioSSRC = packet.ssrc
            }
            if audioSSRC == nil { audioSSRC = packet.ssrc }
            if packet.ssrc == audioSSRC { lastAudioRTP = now }
        default:
            break
        }
    }

    /// A packet the pipelines may use (the checker let it through).
    private func take(_ packet: RTPPacket) {
        lastTaken = clock.now()
        switch packet.payloadType {
        case MediaConstants.videoPayloadType:
            // (A verified packet of the stream before a switch is its receiver's no more.)
            guard packet.ssrc == videoSSRC else { return }
            video.receive(packet)
        case MediaConstants.audioPayloadType:
            guard packet.ssrc == audioSSRC else { return }
            audio.receive(packet)
        default:
            return
        }
        onPacket?(packet)
    }

    /// The sender is about to replace its stream with another (new SSRCs: a
    /// host now sending this node a mix without itself, or back): the first
    /// packet of another SSRC starts the new stream at once. Without this
    /// call a new SSRC takes over only after the current one has been silent
    /// for `MediaConstants.streamSwitchSilence`; until then it is foreign.
    public func expectNewStream() {
        switchExpected = [MediaConstants.videoPayloadType, MediaConstants.audioPayloadType]
    }

    private func switches(_ type: UInt8, since last: Instant?, now: Instant) -> Bool {
        guard switchExpected.remove(type) != nil || last.map({ now - $0 >= MediaConstants.streamSwitchSilence }) ?? true else {
            return false
        }
        streamSwitches += 1
        log.debug("stream switched to a new SSRC")
        return true
    }

    /// Another node feeds the stream from now on (`SealChecker.feederChanged`).
    public func feederChanged() { checker.feederChanged() }

    /// RTCP from upstream: sender reports feed the round-trip estimate.
    public func receiveRTCP(_ payload: ArraySlice<UInt8>) {
        let packets: [RTCPPacket]
        do { packets = try RTCPPacket.parseCompound(payload) } catch {
            malformed += 1
            return
        }
        receiveRTCP(packets)
    }

    /// The same, already parsed.
    public func receiveRTCP(_ packets: [RTCPPacket]) {
        for p in packets {
            video.receiveRTCP(p)
            audio.receiveRTCP(p)
        }
    }

    /// Starts (or keeps up) the subscription: an empty receiver report says
    /// "keep sending to me"; once a picture was decoded, a resume request
    /// says after which packet a new parent should go on.
    public func subscribe() {
        subscribed = true
        guard let rr = try? RTCPReceiverReport(ssrc: video.ssrc) else { return }
        var packets: [RTCPPacket] = [.receiverReport(rr)]
        if let media = video.mediaSSRC, let after = video.resumePoint {
            packets.append(.app(.resume(ssrc: video.ssrc, mediaSSRC: media, after: after)))
        }
        send(packets)
    }

    /// Runs the pipelines and keeps the subscription alive; call with the node's tick.
    public func tick() {
        checker.expire(now: clock.now())
        handle(checker.retry(now: clock.now()))
        poll()
        guard subscribed else { return }
        if lastFeedback.map({ clock.now() - $0 >= MediaConstants.resubscribeInterval }) ?? true { subscribe() }
    }

    /// Releases what is due to the sinks and sends the feedback the pipelines
    /// produced. Call often (when `nextWakeup` says) for low latency.
    public func poll() {
        var feedback: [RTCPPacket] = []
        for output in video.poll() {
            switch output {
            case .frame(let f): onVideo?(f)
            case .feedback(let p): feedback += p
            }
        }
        for output in audio.poll() {
            switch output {
            case .audio(let a): onAudio?(a)
            case .feedback(let p): feedback += p
            }
        }
        if !feedback.isEmpty, subscribed {
            nacksSent += feedback.count { if case .nack = $0 { true } else { false } }
            send(feedback)
        }
    }

    /// The earliest time `poll` has work (a frame or audio block due, a NACK
    /// retry, a report), if any; arriving packets may bring it sooner.
    public var nextWakeup: Instant? {
        [video.nextWakeup, audio.nextWakeup].compactMap { $0 }.min()
    }

    /// Splits `packets` into datagrams (many NACKs can outgrow one) and sends them.
    private func send(_ packets: [RTCPPacket]) {
        guard let sendFeedback else { return }
        lastFeedback = clock.now()
        var datagram: [UInt8] = []
        for p in packets {
            let bytes = p.serialized()
            if !datagram.isEmpty, datagram.count + bytes.count > maxDatagram {
                sendFeedback(datagram)
                datagram.removeAll(keepingCapacity: true)
            }
            if bytes.count <= maxDatagram { datagram += bytes }
        }
        if !datagram.isEmpty { sendFeedback(datagram) }
    }
}
