import LVBCore
import LVBCrypto

/// Why a receiver refused what came (lvbnode-protocol(7), MEDIA).
public enum SealFailure: String, Sendable, CaseIterable {
    /// A frame or audio run whose seal does not verify: altered bytes, a
    /// frame of the sender's own, a seal not made by the origin.
    case signature
    /// A frame's first packet without a seal (one dropped on the way).
    case unsealed
    /// A seal that does not parse, on the wrong packet, or over a frame that does not match it.
    case malformed
    /// An audio packet that is not the one its verified seal names.
    case audio
    /// A packet of a verified frame's timestamp outside that frame.
    case stray
    /// A frame signed long before the newest one verified (an old frame sent again as new).
    case replayed
}

/// What the checker lets through, and what it refused.
public enum SealOutput: Sendable {
    /// A verified video frame's packets, in sequence order.
    case video([RTPPacket])
    /// A verified audio packet.
    case audio(RTPPacket)
    /// Refused: why, and the sequence numbers of the video frame dropped
    /// with it (to be asked for again; empty when there is nothing to ask).
    case forged(SealFailure, [UInt16])
    /// A frame begun by a node that no longer feeds us failed: dropped and
    /// its numbers asked for again, blaming nobody (whose packet was it?).
    case dropped([UInt16])
}

public struct SealCheckerStats: Sendable, Equatable {
    public var verifiedFrames = 0
    public var verifiedAudio = 0
    /// Refusals by `SealFailure` raw value.
    public var refused: [String: Int] = [:]
    /// Audio never covered by a verified seal in time (its seal's frame was lost): not played.
    public var unverifiedAudio = 0
    /// Frames whose seal never came, dropped with their packets after a while.
    public var abandonedFrames = 0
    /// Copies of packets already verified (repairs), ignored.
    public var duplicates = 0
    /// Frames and audio a former feeder began that failed, dropped blaming nobody.
    public var inheritedDropped = 0
    /// Ed25519 checks made (passed or failed), at most `sealChecksPerSecond`
    /// a second from one feeder (the rest wait: `deferredChecks`).
    public var signatureChecks = 0
    public var deferredChecks = 0
    /// Frames and audio packets that came from their origin itself, over its
    /// session (which says who sent them): let through without a signature check.
    public var fromOrigin = 0

    public var refusedTotal: Int { refused.values.reduce(0, +) }
}

/// The receiving side of `MediaSeal`, sans-IO: every packet of a stream as
/// it arrives (after a relay forwarded it), and out what the origin made —
/// a video frame once all its packets are here and its seal verifies, an
/// audio packet once a verified seal names its hash — and what it refused.
/// Nothing unverified goes further: not to the decoder, the sinks, a
/// recording, the studio page or an egress. What came from the origin
/// itself, over its session, needs no signature (the session authenticates
/// its sender): its audio goes through as it comes, its frames once whole.
/// Signature checks are capped per feeder (`sealChecksPerSecond`): what is
/// over the cap waits, so a liar cannot buy more work than an honest stream costs.
public final class SealChecker {
    struct Frame {
        var packets: [UInt16: (packet: RTPPacket, digest: [UInt8])] = [:]
        var seal: (seal: MediaSeal, first: UInt16)?
        var since: Instant
        /// The feeder it began under (`feederChanged`).
        var epoch: Int
        /// Every packet of it so far came from the origin itself.
        var fromOrigin: Bool
    }

    public internal(set) var stats = SealCheckerStats()
    /// When the last packet came that was neither refused nor a copy of one
    /// verified: the node that feeds us is sending the stream (a parent
    /// that sends only lies or copies is silent).
    public internal(set) var lastFresh: Instant?
    public let signer: NodeID
    /// The room the stream belongs to; nil while not known yet (a viewer that
    /// joined by address learns it with its pass): seals wait, unchecked, until it is.
    let scope: () -> [UInt8]?
    /// Something waited for the scope or for the cap (`retry` checks it then).
    public internal(set) var awaitingScope = false
    /// Audio seals waiting for the scope or the cap, with their carriers.
    var waitingSeals: [(seal: MediaSeal, packet: RTPPacket)] = []
    /// Signature checks left to the node that feeds us now.
    var checks = RateLimiter<Int>(count: MediaConstants.sealChecksPerSecond, burst: MediaConstants.sealCheckBurst)
    /// Frames being gathered, by SSRC and RTP timestamp (`key`).
    private var frames: [UInt64: Frame] = [:]
    /// Verified frames: their key → first sequence number and packet count (the newest `rememberedFrames`).
    private var verified: [UInt64: (first: UInt16, count: UInt16)] = [:]
    private var verifiedOrder: [UInt64] = []
    /// The newest verified frame's SSRC, timestamp and first sequence number.
    private var newestVideo: (ssrc: UInt32, ts: UInt32, seq: UInt16)?
    /// Audio hashes verified seals named, by sequence number (the newest `rememberedAudio`).
    var expected: [UInt16: UInt64] = [:]
    var expectedOrder: [UInt16] = []
    /// Audio packets let through (their sequence numbers), to ignore copies.
    var passedAudio: Set<UInt64> = []
    var passedOrder: [UInt64] = []
    var newestAudio: (ssrc: UInt32, ts: UInt32, seq: UInt16)?
    /// Feeders so far (`feederChanged`): what is held is judged only by its own.
    var epoch = 0
    /// Audio waiting for its seal, and the feeder it came under.
    var audio: [UInt16: (packet: RTPPacket, hash: UInt64, since: Instant, epoch: Int)] = [:]

    public init(signer: NodeID, scope: @escaping () -> [UInt8]?) {
        self.signer = signer
        self.scope = scope
    }

    public convenience init(signer: NodeID, scope: [UInt8]) {
        self.init(signer: signer, scope: { scope })
    }

    /// Checks what waited for the scope, once it is known, or for the cap, once checks are left.
    public func retry(now: Instant) -> [SealOutput] {
        guard awaitingScope, scope() != nil, checks.wouldAllow(0, now: now) else { return [] }
        awaitingScope = false
        var out: [SealOutput] = []
        for key in frames.keys.sorted(by: { frames[$0]?.since ?? now < frames[$1]?.since ?? now }) {
            guard checks.wouldAllow(0, now: now) else {
                awaitingScope = true
                break
            }
            out += verify(key, now: now)
        }
        let seals = waitingSeals
        waitingSeals = []
        for (seal, packet) in seals { out += check(seal, carriedBy: packet, now: now) }
        return out
    }

    /// One packet of the stream as it arrived; `fromOrigin`: over a session
    /// with the stream's origin itself (not through a relay).
    public func receive(_ packet: RTPPacket, now: Instant, fromOrigin: Bool) -> [SealOutput] {
        switch packet.payloadType {
        case MediaConstants.videoPayloadType: video(packet, now: now, fromOrigin: fromOrigin)
        case MediaConstants.audioPayloadType: audio(packet, now: now, fromOrigin: fromOrigin)
        default: []
        }
    }

    /// Another node feeds the stream from now on. What is held unchecked
    /// stays (the new feeder's packets complete the frames it began, and an
    /// honest path's frames verify so), but a frame begun before, or audio
    /// that came before, that fails is dropped blaming nobody: a frame half
    /// from each feeder cannot say who lied. The new feeder has checks of its own.
    public func feederChanged() {
        epoch += 1
        checks = RateLimiter<Int>(count: MediaConstants.sealChecksPerSecond, burst: MediaConstants.sealCheckBurst)
    }

    /// Takes one signature check from the feeder's allowance; with none
    /// left, the check waits (`retry`) and this says so.
    func takeCheck(now: Instant) -> Bool {
        guard checks.allow(0, now: now) else {
            awaitingScope = true
            stats.deferredChecks += 1
            return false
        }
        stats.signatureChecks += 1
        return true
    }

    /// Drops what waited too long for its seal; call with the node's tick.
    public func expire(now: Instant) {
        for (seq, a) in audio where now - a.since >= MediaConstants.sealAudioWait {
            audio[seq] = nil
            stats.unverifiedAudio += 1
        }
        for (ts, f) in frames where now - f.since >= MediaConstants.sealFrameWait {
            frames[ts] = nil
            stats.abandonedFrames += 1
        }
    }

    // MARK: Video

    private func video(_ packet: RTPPacket, now: Instant, fromOrigin: Bool) -> [SealOutput] {
        let ts = Self.key(packet), seq = packet.sequenceNumber
        if let done = verified[ts] {
            if UInt16(truncatingIfNeeded: seq &- done.first) < done.count {
                stats.duplicates += 1
                return []
            }
            return [refuse(.stray, [])]
        }
        let seal: MediaSeal?
        do { seal = try MediaSeal.of(packet) } catch { return [drop(ts, .malformed, also: seq)] }
        let starts = VP8PayloadDescriptor.startsFrame(packet.payload)
        if let seal, seal.kind != .video || !starts { return [drop(ts, .malformed, also: seq)] }
        if seal == nil, starts { return [drop(ts, .unsealed, also: seq)] }

        var frame = frames[ts] ?? Frame(since: now, epoch: epoch, fromOrigin: fromOrigin)
        if frame.packets[seq] == nil, frame.packets.count < ReceiverConstants.maxPacketsPerFrame {
            frame.packets[seq] = (packet, MediaSeal.packetDigest(packet))
            frame.fromOrigin = frame.fromOrigin && fromOrigin
            lastFresh = now
        }
        if let seal {
            if let existing = frame.seal, existing.seal != seal || existing.first != seq {
                frames[ts] = frame
                return [drop(ts, .malformed, also: seq)]
            }
            frame.seal = (seal, seq)
        }
        frames[ts] = frame
        if frames.count > MediaConstants.sealPendingFrames, let oldest = frames.min(by: { $0.value.since < $1.value.since })?.key {
            frames[oldest] = nil
            stats.abandonedFrames += 1
        }
        return verify(ts, now: now)
    }

    /// A frame's key: its SSRC and RTP timestamp.
    private static func key(_ p: RTPPacket) -> UInt64 { UInt64(p.ssrc) << 32 | UInt64(p.timestamp) }

    /// Verifies frame `ts` (a `key`) if its seal and every packet it names are here.
    private func verify(_ ts: UInt64, now: Instant) -> [SealOutput] {
        guard let frame = frames[ts], let (seal, first) = frame.seal else { return [] }
        let count = Int(seal.framePackets)
        // (Checked on every packet of a gathering frame: cheap until all can be here.)
        guard frame.packets.count >= count else { return [] }
        var packets: [RTPPacket] = [], digests: [[UInt8]] = []
        packets.reserveCapacity(count)
        for i in 0..<count {
            guard let p = frame.packets[first &+ UInt16(truncatingIfNeeded: i)] else { return [] }
            packets.append(p.packet)
            digests.append(p.digest)
        }
        if frame.fromOrigin {
            stats.fromOrigin += 1
        } else {
            guard let scope = scope() else {
                awaitingScope = true
                return []
            }
            guard takeCheck(now: now) else { return [] }
            let message = seal.message(scope: scope, frameDigest: MediaSeal.frameDigest(digests))
            guard Identity.verify(signature: seal.signature, message: message, by: signer) else { return [drop(ts, .signature)] }
        }
        frames[ts] = nil
        // Packets of this timestamp outside the frame: someone else's.
        let strays = frame.packets.keys.filter { UInt16(truncatingIfNeeded: $0 &- first) >= seal.framePackets }
        let carrier = packets[0]
        if Self.isReplay(carrier, newest: newestVideo, window: MediaConstants.sealReplayTicks) { return [refuse(.replayed, [])] }
        if Self.isNewer(carrier, than: newestVideo) { newestVideo = (carrier.ssrc, carrier.timestamp, first) }
        remember(ts, first: first, count: seal.framePackets)
        stats.verifiedFrames += 1
        var out: [SealOutput] = [.video(packets)]
        if !strays.isEmpty { out.append(refuse(.stray, [])) }
        out += learn(first: seal.audioFirstSeq, seal.audioHashes)
        return out
    }

    /// Forgets frame `ts` (its packets, and `also`): refused for `failure`;
    /// its sequence numbers are asked for again.
    private func drop(_ ts: UInt64, _ failure: SealFailure, also seq: UInt16? = nil) -> SealOutput {
        var seqs = Set(frames[ts]?.packets.keys.map { $0 } ?? [])
        if let (seal, first) = frames[ts]?.seal {
            for i in 0..<Int(seal.framePackets) { seqs.insert(first &+ UInt16(truncatingIfNeeded: i)) }
        }
        if let seq { seqs.insert(seq) }
        let inherited = frames[ts].map { $0.epoch != epoch } ?? false
        frames[ts] = nil
        let ordered = seqs.sorted { Int16(bitPattern: $0 &- $1) < 0 }
        if inherited {
            stats.inheritedDropped += 1
            return .dropped(ordered)
        }
        return refuse(failure, ordered)
    }

    func refuse(_ failure: SealFailure, _ seqs: [UInt16]) -> SealOutput {
        stats.refused[failure.rawValue, default: 0] += 1
        return .forged(failure, seqs)
    }

    private func remember(_ ts: UInt64, first: UInt16, count: UInt16) {
        verified[ts] = (first, count)
        verifiedOrder.append(ts)
        if verifiedOrder.count > MediaConstants.sealRememberedFrames { verified[verifiedOrder.removeFirst()] = nil }
    }

    /// Signed by the origin, numbered after the newest packet verified, but
    /// timed more than `window` before it: a packet from a whole turn of
    /// sequence numbers ago, sent again. (An old packet numbered before the
    /// newest is a late copy, such as a new parent's GOP: not a lie.)
    static func isReplay(_ p: RTPPacket, newest: (ssrc: UInt32, ts: UInt32, seq: UInt16)?, window: Int32) -> Bool {
        guard let newest, newest.ssrc == p.ssrc else { return false }
        return Int16(bitPattern: p.sequenceNumber &- newest.seq) > 0 && Int32(bitPattern: newest.ts &- p.timestamp) > window
    }

    static func isNewer(_ p: RTPPacket, than newest: (ssrc: UInt32, ts: UInt32, seq: UInt16)?) -> Bool {
        guard let newest, newest.ssrc == p.ssrc else { return true }
        return Int16(bitPattern: p.sequenceNumber &- newest.seq) > 0
    }
}
