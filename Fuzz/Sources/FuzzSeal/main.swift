import FuzzSupport
import LVBCore
import LVBCrypto
import LVBMedia

// The media seals (issue 32): the signature container and the check every
// node runs on what its parent sends. An input is a script of records:
//
//   [1 byte: flags and time step] [2 bytes: length, big-endian] [length bytes]
//
// The low 6 bits advance the clock by that many ms (so held audio and
// frames expire); bit 6 says another node feeds the stream from this record
// on (what is held unchecked is forgotten); bit 7 makes the bytes a seal
// element (parsed as both kinds) rather than an RTP packet. RTP packets go to
// a `SealChecker` and to a `StreamReceiver` checking the same host's seals.
// The host's key is fixed (seed 0x5E), so a seed corpus of its real stream
// reaches the verified paths. Nothing may trap; whatever the checker lets
// through must verify on its own with the host's key: no frame passes that
// the host did not sign, and no audio packet that a verified seal does not
// name (a seal naming the run, or its own seal of it alone: n = 0). The
// checker makes at most its allowance of signature checks per feeder
// (`sealCheckBurst` at once, `sealChecksPerSecond` a second). A second
// checker takes every packet as if from the origin itself (over its
// session): it may pass anything, but checks no signature.

private final class FuzzClock: Clock {
    var t = Instant(nanoseconds: 1_000_000_000)
    func now() -> Instant { t }
    func wallTime() -> WallTime { WallTime(seconds: 1_800_000_000 + t.nanoseconds / 1_000_000_000, nanoseconds: UInt32(t.nanoseconds % 1_000_000_000)) }
}

private let host = try! Identity(seed: [UInt8](repeating: 0x5E, count: 32))  // invariant: 32 bytes
private let room = [UInt8](repeating: 0x52, count: 16)

/// Whether `frame` (packets in order, the first carrying a video seal) is one the host sealed.
private func hostSealed(_ frame: [RTPPacket]) -> Bool {
    guard let first = frame.first, let seal = (try? MediaSeal.of(first)) ?? nil, seal.kind == .video,
          Int(seal.framePackets) == frame.count else { return false }
    let digest = MediaSeal.frameDigest(frame.map(MediaSeal.packetDigest))
    return Identity.verify(signature: seal.signature, message: seal.message(scope: room, frameDigest: digest), by: host.nodeID)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let clock = FuzzClock()
    let checker = SealChecker(signer: host.nodeID, scope: room)
    guard let receiver = try? StreamReceiver(clock: clock, ssrc: 1, maxDatagram: 1200,
                                             checker: SealChecker(signer: host.nodeID, scope: room)) else { return 0 }
    receiver.sendFeedback = { b in fuzzCheck(b.count <= 1200, "FuzzSeal", "feedback of \(b.count) bytes") }
    receiver.subscribe()
    let trusting = SealChecker(signer: host.nodeID, scope: room)
    var named: Set<UInt64> = []  // audio (seq, hash) named by verified seals
    var passedAudio = 0
    // The checks of the feeder now: when it began, and the count then.
    var feederSince = clock.t, checksBefore = 0
    var i = 0, records = 0
    while i + 3 <= bytes.count, records < 4096 {
        let head = bytes[i]
        let length = Int(bytes[i + 1]) << 8 | Int(bytes[i + 2])
        i += 3
        let body = Array(bytes[i..<min(bytes.count, i + length)])
        i += length
        records += 1
        clock.t = clock.t + .milliseconds(Int64(head & 0x3F))
        if head & 0x80 != 0 {
            for kind in [MediaSeal.Kind.video, .audio] {
                guard let seal = try? MediaSeal.parse(body, kind: kind) else { continue }
                fuzzCheck(seal.encoded() == body, "FuzzSeal", "a \(kind) seal does not round-trip")
                fuzzCheck(seal.audioHashes.count <= MediaSeal.maxAudioHashes, "FuzzSeal", "\(seal.audioHashes.count) hashes")
            }
            continue
        }
        if head & 0x40 != 0 {
            checker.feederChanged()
            receiver.feederChanged()
            feederSince = clock.t
            checksBefore = checker.stats.signatureChecks
        }
        guard let packet = try? RTPPacket.parse(body) else { continue }
        if let seal = (try? MediaSeal.of(packet)) ?? nil, seal.kind == .audio {
            // Remember what a seal names, if the host made it (checked on its own below).
            let run = seal.namedAudio(carrier: packet.sequenceNumber, hash: MediaSeal.audioHash(MediaSeal.packetDigest(packet)))
            if Identity.verify(signature: seal.signature, message: seal.message(scope: room, frameDigest: nil, audio: run), by: host.nodeID) {
                for (k, h) in run.hashes.enumerated() { named.insert(UInt64(run.first &+ UInt16(k)) << 48 ^ h) }
            }
        }
        for output in checker.receive(packet, now: clock.t) + checker.retry(now: clock.t) {
            switch output {
            case .video(let frame):
                fuzzCheck(hostSealed(frame), "FuzzSeal", "a frame the host did not seal passed")
                if let seal = (try? MediaSeal.of(frame[0])) ?? nil {
                    for (k, h) in seal.audioHashes.enumerated() { named.insert(UInt64(seal.audioFirstSeq &+ UInt16(k)) << 48 ^ h) }
                }
            case .audio(let a):
                passedAudio += 1
                let h = MediaSeal.audioHash(MediaSeal.packetDigest(a))
                fuzzCheck(named.contains(UInt64(a.sequenceNumber) << 48 ^ h), "FuzzSeal", "audio no verified seal named passed")
            case .forged(_, let seqs), .dropped(let seqs):
                fuzzCheck(seqs.count <= 2 * ReceiverConstants.maxPacketsPerFrame + 1, "FuzzSeal", "\(seqs.count) sequence numbers to ask again")
            }
        }
        let allowance = Double(MediaConstants.sealCheckBurst)
            + Double(clock.t.nanoseconds - feederSince.nanoseconds) / 1e9 * Double(MediaConstants.sealChecksPerSecond) + 1
        fuzzCheck(Double(checker.stats.signatureChecks - checksBefore) <= allowance, "FuzzSeal",
                  "\(checker.stats.signatureChecks - checksBefore) checks from one feeder, allowed \(allowance)")
        _ = trusting.receive(packet, now: clock.t, fromOrigin: true)
        trusting.expire(now: clock.t)
        receiver.receiveRTP(body[...])
        checker.expire(now: clock.t)
        receiver.tick()
    }
    fuzzCheck(trusting.stats.signatureChecks == 0, "FuzzSeal", "\(trusting.stats.signatureChecks) checks of what the origin sent itself")
    fuzzCheck(checker.stats.verifiedAudio == passedAudio, "FuzzSeal", "audio counted \(checker.stats.verifiedAudio), passed \(passedAudio)")
    return 0
}

@main enum Main {
    static func main() { runLibFuzzer(fuzz) }
}
