import LVBCore
import Logging

/// Which media channel a packet goes on.
public enum MediaChannel: Sendable { case rtp, rtcp }

/// What the host's media fan-out did, for `stats` lines.
public struct BroadcastStats: Sendable {
    public var videoPackets = 0
    public var audioPackets = 0
    public var bytesSent = 0
    public var retransmissions = 0
    public var nacksReceived = 0
    public var retransmitsRefused = 0
    public var plisReceived = 0
    public var receiverReports = 0
    public var malformedRTCP = 0
    public var gopBursts = 0
}

/// The host side of a room's media, sans-IO on the node's loop: sends every
/// encoded packet to each subscribed viewer, keeps the send history (NACK →
/// retransmission) and the GOP cache (a subscriber gets the current GOP at
/// once), turns PLIs into a keyframe request and receiver reports into a
/// target bitrate per viewer (the encoder follows the lowest), and sends
/// sender reports. A viewer subscribes by sending RTCP; it is dropped after
/// `subscriberTimeout` without any.
public final class MediaBroadcaster<Viewer: Hashable> {
    private struct Subscriber {
        var lastHeard: Instant
        var rate: RateController
        var lastSenderReport: Instant
        var retransmitTokens: Double
        var tokensAt: Instant
        var lossFraction = 0.0
        var rtt: Duration?
        /// Video packets sent and distinct sequence numbers NACKed since the
        /// last receiver report: the loss before repair. (The report's own
        /// fraction lost counts retransmitted packets as received, so it
        /// shows only what repair could not fix.)
        var sentSinceReport = 0
        var nackedSinceReport: Set<UInt16> = []
    }

    public let videoSSRC: UInt32
    public let audioSSRC: UInt32
    public let useGOPCache: Bool
    public let maxVideoKbps: Int
    /// Sends one packet to one viewer (the owner seals it into the session).
    public var send: ((Viewer, MediaChannel, [UInt8]) -> Void)?
    public private(set) var stats = BroadcastStats()

    private let clock: Clock
    private let log = Log.logger("media")
    private var subscribers: [Viewer: Subscriber] = [:]
    private var history = SendHistory()
    private var gop = GOPCache()
    private var keyframeWanted = false
    /// When each viewer last got the GOP cache.
    private var lastBurst: [Viewer: Instant] = [:]
    private var lastKeyframeRequest: Instant?
    // Sender report bookkeeping (RFC 3550 §6.4.1).
    private var videoCount: (packets: UInt32, octets: UInt32, timestamp: UInt32) = (0, 0, 0)
    private var audioCount: (packets: UInt32, octets: UInt32, timestamp: UInt32) = (0, 0, 0)

    public init(clock: Clock, videoSSRC: UInt32, audioSSRC: UInt32, maxVideoKbps: Int, useGOPCache: Bool = true) {
        self.clock = clock
        self.videoSSRC = videoSSRC
        self.audioSSRC = audioSSRC
        self.maxVideoKbps = maxVideoKbps
        self.useGOPCache = useGOPCache
    }

    public var viewers: [Viewer] { Array(subscribers.keys) }
    public var subscriberCount: Int { subscribers.count }

    /// The video target: the lowest any subscriber's rate control allows.
    public var targetVideoKbps: Int {
        subscribers.values.map { Int($0.rate.targetKbps) }.min() ?? maxVideoKbps
    }

    /// Mean loss fraction and worst round-trip time the viewers report.
    public var viewerLoss: Double {
        subscribers.isEmpty ? 0 : subscribers.values.reduce(0) { $0 + $1.lossFraction } / Double(subscribers.count)
    }
    public var viewerRTT: Duration? { subscribers.values.compactMap(\.rtt).max() }

    /// True once after a viewer asked for a keyframe (PLI) or joined without a
    /// cached GOP; the encoder forces one on its next frame.
    public func takeKeyframeRequest() -> Bool {
        defer { keyframeWanted = false }
        return keyframeWanted
    }

    /// Sends one encoded video frame to every subscriber.
    public func publishVideo(_ frame: EncodedMediaFrame) {
        let bytes = frame.packets.map { $0.serialized() }
        for (p, b) in zip(frame.packets, bytes) {
            history.store(p.sequenceNumber, b)
            videoCount.packets &+= 1
            videoCount.octets &+= UInt32(truncatingIfNeeded: p.payload.count)
            videoCount.timestamp = p.timestamp
        }
        if useGOPCache { gop.add(bytes, keyframe: frame.isKeyframe) }
        stats.videoPackets += bytes.count
        fanOut(bytes, video: true)
    }

    /// Sends one audio packet to every subscriber.
    public func publishAudio(_ packet: RTPPacket) {
        let b = packet.serialized()
        audioCount.packets &+= 1
        audioCount.octets &+= UInt32(truncatingIfNeeded: packet.payload.count)
        audioCount.timestamp = packet.timestamp
        stats.audioPackets += 1
        fanOut([b])
    }

    private func fanOut(_ packets: [[UInt8]], video: Bool = false) {
        guard let send else { return }
        for viewer in subscribers.keys {
            for b in packets { send(viewer, .rtp, b) }
            if video { subscribers[viewer]?.sentSinceReport += packets.count }
        }
        stats.bytesSent += packets.reduce(0) { $0 + $1.count } * subscribers.count
    }

    /// RTCP from a viewer the owner has admitted. The first one subscribes it:
    /// it gets the cached GOP at once.
    public func receiveRTCP(_ bytes: [UInt8], from viewer: Viewer) {
        let packets: [RTCPPacket]
        do { packets = try RTCPPacket.parseCompound(bytes) } catch {
            stats.malformedRTCP += 1
            log.debug("malformed RTCP: \(error)")
            return
        }
        let now = clock.now()
        if subscribers[viewer] == nil { subscribe(viewer, now: now) }
        subscribers[viewer]?.lastHeard = now
        for packet in packets {
            switch packet {
            case .nack(let nack) where nack.mediaSSRC == videoSSRC:
                stats.nacksReceived += 1
                let lost = nack.lostSequenceNumbers
                if var s = subscribers[viewer], s.nackedSinceReport.count < 4096 {
                    s.nackedSinceReport.formUnion(lost)
                    subscribers[viewer] = s
                }
                retransmit(lost, to: viewer, now: now)
            case .pli(let pli) where pli.mediaSSRC == videoSSRC:
                stats.plisReceived += 1
                requestKeyframe(now: now)
            case .receiverReport(let rr):
                stats.receiverReports += 1
                for block in rr.reportBlocks where block.ssrc == videoSSRC {
                    noteReport(block, from: viewer, now: now)
                }
            default:
                break
            }
        }
    }

    private func subscribe(_ viewer: Viewer, now: Instant) {
        subscribers[viewer] = Subscriber(lastHeard: now, rate: RateController(maxKbps: maxVideoKbps),
                                         lastSenderReport: now, retransmitTokens: 0, tokensAt: now)
        log.debug("viewer subscribed")
        // One burst per viewer per interval: going quiet and subscribing again
        // must not turn the cache into an amplifier.
        lastBurst = lastBurst.filter { now - $0.value < MediaConstants.gopBurstInterval }
        let burstAllowed = lastBurst[viewer] == nil
        if useGOPCache, burstAllowed, gop.isComplete, !gop.packets.isEmpty, let send {
            lastBurst[viewer] = now
            stats.gopBursts += 1
            for b in gop.packets { send(viewer, .rtp, b) }
            stats.bytesSent += gop.bytes
        } else if useGOPCache {
            // Nothing cached (over-long GOP, or no picture yet): start one now.
            // Without the cache the viewer waits for a keyframe like a classic
            // CDN edge viewer, asking for one (PLI) if it takes too long.
            requestKeyframe(now: now)
        }
    }

    /// Forgets a viewer (its session ended or it left).
    public func unsubscribe(_ viewer: Viewer) { subscribers[viewer] = nil }

    private func requestKeyframe(now: Instant) {
        if let last = lastKeyframeRequest, now - last < MediaConstants.keyframeRequestInterval { return }
        lastKeyframeRequest = now
        keyframeWanted = true
    }

    private func retransmit(_ sequences: [UInt16], to viewer: Viewer, now: Instant) {
        guard var s = subscribers[viewer], let send else { return }
        // Token bucket in bytes: refill at budget × target rate, one second deep.
        let perSecond = MediaConstants.retransmitBudgetFactor * s.rate.targetKbps * 125
        s.retransmitTokens = min(perSecond, s.retransmitTokens + perSecond * (now - s.tokensAt).seconds)
        s.tokensAt = now
        for seq in sequences {
            guard let b = history.packet(seq) else { continue }
            guard s.retransmitTokens >= Double(b.count) else {
                stats.retransmitsRefused += 1
                continue
            }
            s.retransmitTokens -= Double(b.count)
            send(viewer, .rtp, b)
            stats.retransmissions += 1
            stats.bytesSent += b.count
        }
        subscribers[viewer] = s
    }

    private func noteReport(_ block: RTCPReportBlock, from viewer: Viewer, now: Instant) {
        guard var s = subscribers[viewer] else { return }
        let beforeRepair = s.sentSinceReport > 0 ? min(1, Double(s.nackedSinceReport.count) / Double(s.sentSinceReport)) : 0
        let loss = max(Double(block.fractionLost) / 256, beforeRepair)
        s.sentSinceReport = 0
        s.nackedSinceReport.removeAll(keepingCapacity: true)
        subscribers[viewer] = s
        subscribers[viewer]?.lossFraction = loss
        subscribers[viewer]?.rate.report(fractionLost: loss, at: now)
        // RFC 3550 §6.4.1: RTT = A − LSR − DLSR, in 1/65536 s.
        if block.lastSenderReport != 0 {
            let a = NTPTime.middle32(NTPTime.from(clock.wallTime()))
            let rtt = a &- block.lastSenderReport &- block.delaySinceLastSenderReport
            if rtt < 65536 * 10 { subscribers[viewer]?.rtt = .nanoseconds(Int64(rtt) * 1_000_000_000 / 65536) }
        }
    }

    /// Runs timers (call every 100 ms): sender reports, silent viewers dropped.
    public func tick() {
        let now = clock.now()
        for (viewer, s) in subscribers {
            if now - s.lastHeard >= MediaConstants.subscriberTimeout {
                subscribers[viewer] = nil
                log.debug("viewer timed out")
                continue
            }
            if now - s.lastSenderReport >= MediaConstants.senderReportInterval {
                subscribers[viewer]?.lastSenderReport = now
                send?(viewer, .rtcp, senderReports())
            }
        }
    }

    private func senderReports() -> [UInt8] {
        let ntp = NTPTime.from(clock.wallTime())
        var out: [RTCPPacket] = []
        if videoCount.packets > 0 {
            if let sr = try? RTCPSenderReport(ssrc: videoSSRC, ntpTimestamp: ntp, rtpTimestamp: videoCount.timestamp,
                                              packetCount: videoCount.packets, octetCount: videoCount.octets) {
                out.append(.senderReport(sr))
            }
        }
        if audioCount.packets > 0 {
            if let sr = try? RTCPSenderReport(ssrc: audioSSRC, ntpTimestamp: ntp, rtpTimestamp: audioCount.timestamp,
                                              packetCount: audioCount.packets, octetCount: audioCount.octets) {
                out.append(.senderReport(sr))
            }
        }
        return RTCPPacket.serializeCompound(out)
    }
}
