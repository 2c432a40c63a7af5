import LVBCore
import Logging

/// The receive pipeline of one stream (one origin's video and audio), sans-IO:
/// takes the stream's RTP and RTCP, runs the video and audio receivers
/// (jitter buffer, NACK, keyframe requests, decoding), hands decoded frames to
/// its sinks and produces feedback for the node it receives from. Sending
/// feedback is what subscribes: the first receiver report goes out on
/// `subscribe()`, and one at least every `resubscribeInterval` after.
public final class StreamReceiver {
    public let video: VideoReceiver
    public let audio: AudioReceiver
    /// Every decoded (or skipped-to) video frame, in decode order.
    public var onVideo: ((ReceivedVideoFrame) -> Void)?
    /// One 20 ms block of audio, every 20 ms while the stream plays.
    public var onAudio: ((ReceivedAudioFrame) -> Void)?
    /// Every RTP packet of the stream as it arrived (`--rtp-out`, relaying).
    public var onPacket: ((RTPPacket, ArraySlice<UInt8>) -> Void)?
    /// After each RTP packet is taken in: `nextWakeup` may have moved earlier.
    public var onReceived: (() -> Void)?
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

    /// - Parameters:
    ///   - ssrc: this receiver's own SSRC (the sender of its feedback).
    ///   - maxDatagram: the largest RTCP datagram the transport carries.
    public init(clock: Clock, ssrc: UInt32, maxDatagram: Int) throws(MediaError) {
        self.clock = clock
        self.maxDatagram = maxDatagram
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
        switch packet.payloadType {
        case MediaConstants.videoPayloadType:
            videoBytes += payload.count
            video.receive(packet)
        case MediaConstants.audioPayloadType:
            audioBytes += payload.count
            audio.receive(packet)
        default:
            unknownPayloadTypes += 1
            return
        }
        onPacket?(packet, payload)
        poll()
        onReceived?()
    }

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
    /// "keep sending to me".
    public func subscribe() {
        subscribed = true
        guard let rr = try? RTCPReceiverReport(ssrc: video.ssrc) else { return }
        send([.receiverReport(rr)])
    }

    /// Runs the pipelines and keeps the subscription alive; call with the node's tick.
    public func tick() {
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
        if !feedback.isEmpty, subscribed { send(feedback) }
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
