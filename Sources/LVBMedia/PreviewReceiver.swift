import LVBCore
import Logging

/// A keyframe a `PreviewReceiver` holds: its RTP packets, byte for byte as
/// they arrived, in sequence order.
public struct PreviewKeyframe: Sendable, Equatable {
    public var packets: [[UInt8]]
    public var timestamp: UInt32
    public var ssrc: UInt32
    /// When its last missing packet arrived.
    public var completed: Instant
    /// Bytes of `packets`.
    public var bytes: Int
}

/// The receive side of a keyframes-only (trickle) subscription, sans-IO: it
/// keeps the latest complete keyframe of a room next to the one watched, so
/// that switching to it shows a picture at once.
///
/// Its feedback always carries the APP keyframes-only request
/// (`RTCPApp.keyframesOnly`), so the origin sends it keyframes alone; a hole in
/// a keyframe is NACKed a few times, since the next keyframe is a GOP away.
/// Delta frames (from an origin that sends the whole stream anyway), audio and
/// other payload types are dropped. At the switch the owner replays
/// `latestKeyframe.packets` into a fresh `StreamReceiver` — whose feedback,
/// without the request, upgrades the subscription to the whole stream — and
/// stops calling `tick` here: the next resubscription would turn the
/// subscription back to keyframes only.
public final class PreviewReceiver {
    /// Called when a new keyframe is complete (now `latestKeyframe`).
    public var onKeyframe: (() -> Void)?
    /// Sends one RTCP datagram upstream (the owner seals it into the session).
    public var sendFeedback: (([UInt8]) -> Void)?
    /// The newest complete keyframe, replaced by each newer one.
    public private(set) var latestKeyframe: PreviewKeyframe?
    /// Keyframes completed; RTP packets that did not parse (or whose VP8
    /// descriptor did not); packets not kept (audio, other payload types,
    /// delta frames, duplicates, frames already done or too big); every RTP
    /// byte received (what the preview costs).
    public private(set) var keyframes = 0
    public private(set) var malformed = 0
    public private(set) var ignoredPackets = 0
    public private(set) var bytes = 0
    /// NACK packets sent, and the sequence numbers they asked for.
    public private(set) var nacksSent = 0
    public private(set) var nackedSequences = 0

    private struct FrameKey: Hashable {
        var ssrc: UInt32
        var timestamp: UInt32
    }

    /// The packets of one (SSRC, timestamp) so far.
    private struct Pending {
        let order: Int
        var packets: [UInt16: [UInt8]] = [:]
        var bytes = 0
        var lowest: UInt16
        var highest: UInt16
        /// The S = 1, PID = 0 packet (RFC 7741 §4.2) and the marker packet.
        var start: UInt16?
        var end: UInt16?
        /// Known once the start packet arrived (RFC 7741 §4.3: P bit 0).
        var isKeyframe: Bool?
        var lastPacket: Instant
        var nackRounds = 0
        var lastNack: Instant?
    }

    private let clock: Clock
    private let ssrc: UInt32
    private let maxDatagram: Int
    private let log = Log.logger("media")
    private var subscribed = false
    private var lastFeedback: Instant?
    private var pending: [FrameKey: Pending] = [:]
    private var nextOrder = 0
    /// Frames kept, dropped as deltas or too big: their late packets are ignored.
    private var finished: [FrameKey] = []
    /// Bytes of the packets in `pending` (bounded by `previewMaxPendingBytes`).
    private(set) var pendingBytes = 0
    var pendingFrames: Int { pending.count }

    /// - Parameters:
    ///   - ssrc: this receiver's own SSRC (the sender of its feedback).
    ///   - maxDatagram: the largest RTCP datagram the transport carries.
    public init(clock: Clock, ssrc: UInt32, maxDatagram: Int) {
        self.clock = clock
        self.ssrc = ssrc
        self.maxDatagram = maxDatagram
    }

    /// Starts (or keeps up) the subscription: an empty receiver report and
    /// the keyframes-only request say "keep sending me keyframes".
    public func subscribe() {
        subscribed = true
        send([])
    }

    /// Keeps the subscription alive and asks again for what a keyframe
    /// misses; call with the node's tick.
    public func tick() {
        guard subscribed else { return }
        let now = clock.now()
        let nacks = dueNacks(now: now)
        if !nacks.isEmpty || lastFeedback.map({ now - $0 >= MediaConstants.resubscribeInterval }) ?? true { send(nacks) }
    }

    /// One RTP packet from the origin.
    public func receiveRTP(_ payload: ArraySlice<UInt8>) {
        bytes += payload.count
        let packet: RTPPacket
        let descriptor: VP8PayloadDescriptor, data: ArraySlice<UInt8>
        do {
            packet = try RTPPacket.parse(payload)
            guard packet.payloadType == MediaConstants.videoPayloadType else {
                ignoredPackets += 1
                return
            }
            (descriptor, data) = try VP8PayloadDescriptor.parse(packet.payload)
        } catch {
            malformed += 1
            log.debug("malformed RTP in a preview: \(error)")
            return
        }
        let key = FrameKey(ssrc: packet.ssrc, timestamp: packet.timestamp)
        let seq = packet.sequenceNumber
        guard !finished.contains(key), !isOlderThanLatest(key), pending[key]?.packets[seq] == nil else {
            ignoredPackets += 1
            return
        }
        let now = clock.now()
        // Taken out while it changes, so that its packets are not copied.
        var frame: Pending
        if let existing = pending.removeValue(forKey: key) {
            frame = existing
        } else {
            while pending.count >= ReceiverConstants.previewMaxPendingFrames, let oldest = oldest(except: key) { drop(oldest) }
            frame = Pending(order: nextOrder, lowest: seq, highest: seq, lastPacket: now)
            nextOrder += 1
        }
        frame.packets[seq] = Array(payload)
        frame.bytes += payload.count
        pendingBytes += payload.count
        if sequencePrecedes(seq, frame.lowest) { frame.lowest = seq }
        if sequencePrecedes(frame.highest, seq) { frame.highest = seq }
        frame.lastPacket = now
        if descriptor.startOfPartition && descriptor.partitionIndex == 0 {
            frame.start = seq
            frame.isKeyframe = (data.first ?? 1) & 0x01 == 0
        }
        if packet.marker { frame.end = seq }
        pending[key] = frame

        if frame.isKeyframe == false || frame.packets.count > ReceiverConstants.maxPacketsPerFrame
            || (span(frame) ?? 0) > ReceiverConstants.maxPacketsPerFrame {
            drop(key)
            return
        }
        while pendingBytes > ReceiverConstants.previewMaxPendingBytes {
            drop(oldest(except: key) ?? key)
        }
        if pending[key] != nil { complete(key, now: now) }
    }


    /// Packets from the start packet to the marker packet, once both are known.
    private func span(_ frame: Pending) -> Int? {
        guard let start = frame.start, let end = frame.end else { return nil }
        return Int(end &- start) + 1
    }

    /// A keyframe of the same stream no newer than the one held is of no use.
    private func isOlderThanLatest(_ key: FrameKey) -> Bool {
        guard let latest = latestKeyframe, latest.ssrc == key.ssrc else { return false }
        return Int32(bitPattern: key.timestamp &- latest.timestamp) <= 0
    }

    private func oldest(except key: FrameKey) -> FrameKey? {
        pending.filter { $0.key != key }.min { $0.value.order < $1.value.order }?.key
    }

    /// Forgets a frame for good (its later packets are ignored).
    private func drop(_ key: FrameKey) {
        guard let frame = pending.removeValue(forKey: key) else { return }
        pendingBytes -= frame.bytes
        ignoredPackets += frame.packets.count
        finish(key)
    }

    private func finish(_ key: FrameKey) {
        finished.append(key)
        if finished.count > ReceiverConstants.previewFinishedFrames { finished.removeFirst() }
    }

    /// Keeps the frame as the latest keyframe if every packet from its start to its marker is here.
    private func complete(_ key: FrameKey, now: Instant) {
        guard let frame = pending[key], frame.isKeyframe == true, let start = frame.start, let count = span(frame) else { return }
        var packets: [[UInt8]] = []
        packets.reserveCapacity(count)
        for i in 0..<count {
            guard let p = frame.packets[start &+ UInt16(i)] else { return }
            packets.append(p)
        }
        pending[key] = nil
        pendingBytes -= frame.bytes
        finish(key)
        latestKeyframe = PreviewKeyframe(packets: packets, timestamp: key.timestamp, ssrc: key.ssrc,
                                         completed: now, bytes: packets.reduce(0) { $0 + $1.count })
        for old in pending.keys where isOlderThanLatest(old) { drop(old) }
        keyframes += 1
        onKeyframe?()
    }

    /// NACKs for frames that may be keyframes and miss packets: first
    /// `previewNackWait` after their last packet, then every `previewNackRetry`.
    /// A missing start or marker packet is asked for as the one before the
    /// lowest or after the highest held (repeated rounds walk outwards).
    private func dueNacks(now: Instant) -> [RTCPPacket] {
        var out: [RTCPPacket] = []
        for (key, frame) in pending where frame.isKeyframe != false && frame.nackRounds < ReceiverConstants.previewNackRounds {
            let due = frame.lastNack.map { now - $0 >= ReceiverConstants.previewNackRetry }
                ?? (now - frame.lastPacket >= ReceiverConstants.previewNackWait)
            guard due else { continue }
            let first = frame.start ?? frame.lowest, last = frame.end ?? frame.highest
            var lost: Set<UInt16> = []
            if frame.start == nil { lost.insert(first &- 1) }
            if frame.end == nil { lost.insert(last &+ 1) }
            var s = first
            for _ in 0..<min(Int(last &- first), ReceiverConstants.nackMaxPerFeedback) {
                s &+= 1
                if frame.packets[s] == nil { lost.insert(s) }
            }
            pending[key]?.nackRounds += 1
            pending[key]?.lastNack = now
            guard let nack = try? RTCPGenericNACK(senderSSRC: ssrc, mediaSSRC: key.ssrc, lost: lost) else { continue }
            out.append(.nack(nack))
            nacksSent += 1
            nackedSequences += lost.count
        }
        return out
    }

    /// Sends the subscription (empty RR, keyframes-only APP) with `extra`
    /// packets, in as many datagrams as they need: each carries the request,
    /// or the origin would take the datagram as a full subscription.
    private func send(_ extra: [RTCPPacket]) {
        guard let sendFeedback, let rr = try? RTCPReceiverReport(ssrc: ssrc) else { return }
        lastFeedback = clock.now()
        let head = RTCPPacket.serializeCompound([.receiverReport(rr), .app(.keyframesOnly(ssrc: ssrc))])
        var datagram = head
        for p in extra {
            let bytes = p.serialized()
            guard head.count + bytes.count <= maxDatagram else { continue }
            if datagram.count + bytes.count > maxDatagram {
                sendFeedback(datagram)
                datagram = head
            }
            datagram += bytes
        }
        sendFeedback(datagram)
    }
}
