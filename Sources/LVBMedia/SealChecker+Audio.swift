import LVBCore
import LVBCrypto

/// The audio side of `SealChecker`: a packet goes through once a verified
/// seal names its hash (its own seal, in a stream with video; the run's
/// seal, in an audio-only one), or at once when it came from the origin itself.
extension SealChecker {
    func audio(_ packet: RTPPacket, now: Instant, fromOrigin: Bool) -> [SealOutput] {
        let seq = packet.sequenceNumber
        if passedAudio.contains(UInt64(packet.ssrc) << 16 | UInt64(seq)) {
            stats.duplicates += 1
            return []
        }
        let seal: MediaSeal?
        do { seal = try MediaSeal.of(packet) } catch { return [refuse(.malformed, [])] }
        if let seal, seal.kind != .audio { return [refuse(.malformed, [])] }
        if fromOrigin {
            // The session with the origin says who sent it: no seal to wait for.
            audio[seq] = nil
            lastFresh = now
            stats.fromOrigin += 1
            return pass(packet)
        }
        let hash = MediaSeal.audioHash(MediaSeal.packetDigest(packet))
        if let want = expected[seq] {
            if want == hash {
                lastFresh = now
                return pass(packet)
            }
            // Not the packet the seal names. Of the stream verified so far, a
            // lie; of another SSRC (a new stream whose numbers meet the old
            // one's), it waits for its own seal.
            if packet.ssrc == newestAudio?.ssrc { return [refuse(.audio, [])] }
        }
        if audio[seq] == nil {
            audio[seq] = (packet, hash, now, epoch)
            lastFresh = now
            if audio.count > MediaConstants.sealPendingAudio, let oldest = audio.min(by: { $0.value.since < $1.value.since })?.key {
                audio[oldest] = nil
                stats.unverifiedAudio += 1
            }
        }
        guard let seal else { return [] }
        return check(seal, carriedBy: packet, now: now)
    }

    /// Verifies an audio seal (once the scope is known and a check is left:
    /// till then it waits); the run it names goes through.
    func check(_ seal: MediaSeal, carriedBy packet: RTPPacket, now: Instant) -> [SealOutput] {
        guard let scope = scope(), checks.wouldAllow(0, now: now) else {
            awaitingScope = true
            if waitingSeals.count < MediaConstants.sealPendingAudio { waitingSeals.append((seal, packet)) }
            return []
        }
        guard takeCheck(now: now) else { return [] }
        let seq = packet.sequenceNumber
        let run = seal.namedAudio(carrier: seq, hash: MediaSeal.audioHash(MediaSeal.packetDigest(packet)))
        guard Identity.verify(signature: seal.signature, message: seal.message(scope: scope, frameDigest: nil, audio: run), by: signer) else {
            audio[seq] = nil
            return [refuse(.signature, [])]
        }
        if Self.isReplay(packet, newest: newestAudio, window: MediaConstants.sealReplayAudioTicks) {
            audio[seq] = nil
            return [refuse(.replayed, [])]
        }
        return learn(first: run.first, run.hashes)
    }

    /// A verified seal's audio run: the packets waiting for it go through (or are refused).
    func learn(first: UInt16, _ hashes: [UInt64]) -> [SealOutput] {
        var out: [SealOutput] = []
        for (i, hash) in hashes.enumerated() {
            let seq = first &+ UInt16(i)
            if expected[seq] == nil {
                expectedOrder.append(seq)
                if expectedOrder.count > MediaConstants.sealRememberedAudio { expected[expectedOrder.removeFirst()] = nil }
            }
            expected[seq] = hash
            guard let waiting = audio.removeValue(forKey: seq) else { continue }
            if waiting.hash == hash {
                out += pass(waiting.packet)
            } else if waiting.epoch == epoch {
                out.append(refuse(.audio, []))
            } else {
                stats.inheritedDropped += 1
            }
        }
        return out
    }

    func pass(_ packet: RTPPacket) -> [SealOutput] {
        let seq = packet.sequenceNumber
        let key = UInt64(packet.ssrc) << 16 | UInt64(seq)
        passedAudio.insert(key)
        passedOrder.append(key)
        if passedOrder.count > MediaConstants.sealRememberedAudio { passedAudio.remove(passedOrder.removeFirst()) }
        if Self.isNewer(packet, than: newestAudio) { newestAudio = (packet.ssrc, packet.timestamp, seq) }
        stats.verifiedAudio += 1
        return [.audio(packet)]
    }
}
