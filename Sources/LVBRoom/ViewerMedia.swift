import LVBCore
import LVBCrypto
import LVBCrypto
import LVBMedia
import LVBTransport
import Logging

/// A viewer's media endpoint: takes the host's RTP and RTCP, runs the video
/// and audio receive pipelines (jitter buffer, NACK, keyframe requests,
/// decoding), hands decoded frames to the sinks, and sends feedback to the
/// host. Sending RTCP is what subscribes us: the first receiver report goes
/// out as soon as we are admitted, and one at least every second after.
public final class ViewerMedia: RoomMediaEndpoint {
    public let video: VideoReceiver
    public let audio: AudioReceiver
    /// Every decoded (or skipped-to) video frame, in decode order.
    public var onVideo: ((ReceivedVideoFrame) -> Void)?
    /// One 20 ms block of audio, every 20 ms while the stream plays.
    public var onAudio: ((ReceivedAudioFrame) -> Void)?
    /// Every RTP packet from the host as it arrived (the `--rtp-out` bridge).
    public var onPacket: ((RTPPacket, ArraySlice<UInt8>) -> Void)?
    /// After each RTP packet is taken in: `nextWakeup` may have moved earlier.
    public var onReceived: (() -> Void)?
    public private(set) var malformed = 0
    public private(set) var unknownPayloadTypes = 0
    /// RTP bytes received per medium (retransmissions included).
    public private(set) var videoBytes = 0
    public private(set) var audioBytes = 0

    private let core: TransportCore
    private let clock: Clock
    private let ssrc: UInt32
    private let log = Log.logger("media")
    private var host: NodeID?
    private var lastFeedback: Instant?
    private var lastProbe: Instant?

    public init(core: TransportCore, clock: Clock, ssrc: UInt32) throws(MediaError) {
        self.core = core
        self.clock = clock
        self.ssrc = ssrc
        video = try VideoReceiver(clock: clock, ssrc: ssrc)
        audio = try AudioReceiver(clock: clock, ssrc: ssrc)
    }

    public func receive(_ payload: ArraySlice<UInt8>, channel: DataChannel, from peer: NodeID) {
        switch channel {
        case .rtp:
            let packet: RTPPacket
            do { packet = try RTPPacket.parse(payload) } catch {
                malformed += 1
                log.debug("malformed RTP from host: \(error)")
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
        case .rtcp:
            let packets: [RTCPPacket]
            do { packets = try RTCPPacket.parseCompound(payload) } catch {
                malformed += 1
                return
            }
            for p in packets {
                video.receiveRTCP(p)
                audio.receiveRTCP(p)
            }
        default:
            break
        }
    }

    public func admitted(host: NodeID) {
        self.host = host
        subscribe()
    }

    public func peerGone(_ peer: NodeID) {}

    public func roundTrip(_ rtt: Duration, to peer: NodeID) {
        if peer == host { video.rtt = rtt }
    }

    public func tick() {
        poll()
        guard let host else { return }
        let now = clock.now()
        if lastFeedback.map({ now - $0 >= .seconds(1) }) ?? true { subscribe() }
        // NACK retries and the wait for a repair follow the round trip; the
        // stream keeps the session busy, so no keepalive pings measure it.
        if lastProbe.map({ now - $0 >= MediaConstants.rttProbeInterval }) ?? true {
            lastProbe = now
            core.probeRoundTrip(to: host)
        }
    }

    /// Runs both pipelines: releases what is due to the sinks and sends the
    /// feedback they produced. Call often (every few ms) for low latency.
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
        if !feedback.isEmpty { send(feedback) }
    }

    /// The earliest time a `poll` has work (a frame or audio block due, a
    /// NACK retry, a report), if any; packets arriving may bring it sooner.
    public var nextWakeup: Instant? {
        [video.nextWakeup, audio.nextWakeup].compactMap { $0 }.min()
    }

    /// An empty receiver report: "keep sending to me".
    private func subscribe() {
        guard let rr = try? RTCPReceiverReport(ssrc: ssrc) else { return }
        send([.receiverReport(rr)])
    }

    private func send(_ packets: [RTCPPacket]) {
        guard let host else { return }
        lastFeedback = clock.now()
        // Split into datagrams (many NACKs can outgrow one).
        let limit = MessageSize.maxTransportPlaintext - 1
        var datagram: [UInt8] = []
        for p in packets {
            let bytes = p.serialized()
            if !datagram.isEmpty, datagram.count + bytes.count > limit {
                try? core.send(datagram, channel: .rtcp, to: host)
                datagram.removeAll(keepingCapacity: true)
            }
            if bytes.count <= limit { datagram += bytes }
        }
        if !datagram.isEmpty { try? core.send(datagram, channel: .rtcp, to: host) }
    }
}
