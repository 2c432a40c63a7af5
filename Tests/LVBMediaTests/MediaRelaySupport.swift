import LVBCore
import LVBTestSupport
import Testing
@testable import LVBMedia

struct RelayEncoderDroppedFrame: Error {}

/// The RTP sequence number of a packet on the wire.
func seq(_ bytes: [UInt8]) -> UInt16 { UInt16(bytes[2]) << 8 | UInt16(bytes[3]) }

/// One relay and its children: what it sends each child waits in an outbox
/// until `flush` hands it to the child's `deliver` (or records it in `sent`),
/// so a child's feedback never re-enters the relay mid-packet.
final class Hop {
    let relay: MediaRelay<Int>
    var deliver: [Int: ([UInt8]) -> Void] = [:]
    private(set) var sent: [Int: [[UInt8]]] = [:]
    private(set) var rtcp: [Int: [[RTCPPacket]]] = [:]
    private var outbox: [(Int, [UInt8])] = []

    init(clock: Clock, maxChildren: Int = .max) {
        relay = MediaRelay(clock: clock, repairBudgetKbps: 1000, maxChildren: maxChildren)
        relay.send = { [unowned self] child, channel, bytes in
            switch channel {
            case .rtp: outbox.append((child, bytes))
            case .rtcp: rtcp[child, default: []].append((try? RTCPPacket.parseCompound(bytes)) ?? [])
            }
        }
    }

    /// Delivers what waits; false when nothing did.
    func flush() -> Bool {
        guard !outbox.isEmpty else { return false }
        while !outbox.isEmpty {
            let (child, bytes) = outbox.removeFirst()
            if let deliver = deliver[child] { deliver(bytes) } else { sent[child, default: []].append(bytes) }
        }
        return true
    }

    /// What `child` was sent since the last call (children without `deliver`).
    func take(_ child: Int) -> [[UInt8]] {
        defer { sent[child] = nil }
        return sent[child] ?? []
    }

    /// Receiver feedback from `child`: an RR, the keyframes-only request when `trickle`, then `extra`.
    func feedback(from child: Int, trickle: Bool = false, _ extra: [RTCPPacket] = []) {
        let ssrc = 0xC000_0000 + UInt32(child)
        var packets: [RTCPPacket] = [.receiverReport(try! RTCPReceiverReport(ssrc: ssrc))]
        if trickle { packets.append(.app(.keyframesOnly(ssrc: ssrc))) }
        relay.receiveRTCP(RTCPPacket.serializeCompound(packets + extra)[...], from: child)
    }
}

/// A host, the library's own path (320×180 VP8 at 30 fps with a keyframe
/// every second — frames 0, 30, 60, … — in 100-byte packets, and a 20 ms Opus
/// packet per frame, published through a `MediaOrigin`), and a relay
/// subscribed to it as peer `relayID`: `hops[0]`. Further relays below it
/// join `hops`, so one `flush` moves everything down the tree.
final class Tree {
    static let videoSSRC: UInt32 = 0x4057_0001
    static let relayID = 0
    static let relaySSRC: UInt32 = 0x4E1A_0001
    let clock = ManualClock()
    let origin: MediaOrigin<Int>
    var hops: [Hop] = []
    var relay: MediaRelay<Int> { hops[0].relay }
    private(set) var frames: [EncodedMediaFrame] = []
    /// Drops a packet on its way from the host to the relay when it returns true.
    var loseUpstream: ([UInt8]) -> Bool = { _ in false }
    /// Reorders each batch on its way from the host to the relay.
    var reorderUpstream: ([[UInt8]]) -> [[UInt8]] = { $0 }
    private var toRelay: [[UInt8]] = []
    private let source: SyntheticVideo
    private let encoder: VideoStreamEncoder
    private let audio: AudioStreamEncoder
    private var tone: SyntheticAudio

    init() throws {
        origin = MediaOrigin(clock: clock, videoSSRC: Self.videoSSRC, audioSSRC: Self.videoSSRC + 1, maxVideoKbps: 500)
        source = try SyntheticVideo(width: 320, height: 180)
        encoder = try VideoStreamEncoder(width: 320, height: 180, fps: 30, bitrateKbps: 400, gopSeconds: 1,
                                         ssrc: Self.videoSSRC, maxPacketSize: 100, random: SeededRandom(seed: 5))
        audio = try AudioStreamEncoder(ssrc: Self.videoSSRC + 1, random: SeededRandom(seed: 6))
        tone = try SyntheticAudio()
        hops = [Hop(clock: clock)]
        origin.send = { [unowned self] peer, channel, bytes in
            guard peer == Self.relayID else { return }
            switch channel {
            case .rtp: if !loseUpstream(bytes) { toRelay.append(bytes) }
            case .rtcp: relay.receiveUpstreamRTCP((try? RTCPPacket.parseCompound(bytes)) ?? [])
            }
        }
        subscribeRelay()
        _ = origin.takeKeyframeRequest()  // nothing was cached yet: the first frame is a keyframe anyway
    }

    /// The relay's owner keeps its own subscription up, as any viewer does.
    func subscribeRelay() {
        origin.receiveRTCP(RTCPPacket.receiverReport(try! RTCPReceiverReport(ssrc: Self.relaySSRC)).serialized()[...],
                           from: Self.relayID)
    }

    /// Captures and publishes the next frame (and an audio packet) at its time, then flushes.
    @discardableResult
    func publish() throws -> EncodedMediaFrame {
        let n = frames.count
        let mediaTime = Duration.nanoseconds(Int64(n) * 1_000_000_000 / 30)
        clock.advance(to: ManualClock.defaultStart + mediaTime)
        let capture = NTPTime.from(clock.wallTime())
        guard let frame = try encoder.encode(source.frame(number: n), mediaTime: mediaTime, captureTime: capture,
                                             forceKeyframe: n % 30 == 0) else { throw RelayEncoderDroppedFrame() }
        frames.append(frame)
        origin.publishVideo(frame)
        origin.publishAudio(try audio.encode(tone.next20ms(), mediaTime: mediaTime, captureTime: capture))
        if n % 30 == 29 { subscribeRelay() }
        flush()
        return frame
    }

    func publish(_ count: Int) throws { for _ in 0..<count { try publish() } }

    /// Moves everything waiting down the tree until nothing moves.
    func flush() {
        var moved = true
        while moved {
            let batch = reorderUpstream(toRelay)
            toRelay.removeAll()
            for bytes in batch { relay.receiveRTP(bytes[...]) }
            moved = !batch.isEmpty
            for hop in hops where hop.flush() { moved = true }
        }
    }

    /// The relay's owner sends what the relay keeps for upstream.
    func sendUpstream() {
        let feedback = relay.takeUpstreamFeedback(senderSSRC: Self.relaySSRC)
        if !feedback.isEmpty { origin.receiveRTCP(RTCPPacket.serializeCompound(feedback)[...], from: Self.relayID) }
        flush()
    }

    func wire(_ n: Int) -> [[UInt8]] { frames[n].packets.map { $0.serialized() } }

    /// Publishes frames until `until` with `viewer` keeping its subscription
    /// up, then lets its buffer release what is due.
    func play(to viewer: Viewer, until: Int) throws {
        while frames.count < until {
            try publish()
            viewer.stream.tick()
        }
        clock.advance(by: .milliseconds(500))
        viewer.stream.poll()
    }

    /// A second relay, child `id` of the first, subscribed to it (the GOP cache starts it).
    func addLowerRelay(id: Int = 2) -> Hop {
        let lower = Hop(clock: clock)
        hops.append(lower)
        hops[0].deliver[id] = { lower.relay.receiveRTP($0[...]) }
        hops[0].feedback(from: id)
        flush()
        return lower
    }
}

/// A child that decodes: a `StreamReceiver` fed by `hop`, its feedback sent to
/// that relay, and the frame numbers it shows.
final class Viewer {
    let stream: StreamReceiver
    private(set) var shown: [Int] = []

    init(_ hop: Hop, id: Int, clock: Clock) throws {
        let stream = try StreamReceiver(clock: clock, ssrc: 0xC000_0000 + UInt32(id), maxDatagram: 1167, checker: AdmitAll())
        self.stream = stream
        stream.onVideo = { [unowned self] in shown.append(SyntheticVideo.readFrameNumber($0.image) ?? -1) }
        stream.sendFeedback = { [unowned hop] in hop.relay.receiveRTCP($0[...], from: id) }
        hop.deliver[id] = { stream.receiveRTP($0[...]) }
    }
}

/// A VP8 RTP packet with a one-byte descriptor: S when `start`, then a first
/// VP8 byte with P clear when `keyframe`, and some data.
func vp8(_ sequence: UInt16, ts: UInt32, start: Bool = false, keyframe: Bool = false, ssrc: UInt32 = 7) -> [UInt8] {
    try! RTPPacket(payloadType: MediaConstants.videoPayloadType, sequenceNumber: sequence, timestamp: ts, ssrc: ssrc,
                   payload: ([start ? 0x10 : 0x00, keyframe ? 0x00 : 0x01] + [UInt8](repeating: 0x5A, count: 20))[...]).serialized()
}

func opus(_ sequence: UInt16, ssrc: UInt32 = 9) -> [UInt8] {
    try! RTPPacket(payloadType: MediaConstants.audioPayloadType, sequenceNumber: sequence, timestamp: 960 * UInt32(sequence),
                   ssrc: ssrc, payload: [0xFC, 1, 2, 3][...]).serialized()
}
