import LVBCore
import LVBMedia
import LVBTransport

// MixBench's inputs, made before anything is timed: the host's pictures and
// tone, and each guest's synthetic `.guest` stream encoded as a guest's node
// sends it (VideoStreamEncoder and AudioStreamEncoder RTP packets), each
// packet stamped with when it reaches the host on a virtual schedule.
//
// The schedule (nanoseconds on the host's clock): host picture n is captured
// at hostStart + n/30 s and sound block m at hostStart + m × 20 ms. A guest's
// picture reaches the host when its encode (timed here) is done after its
// capture, a 20 ms block when its encode is done after the block is complete:
// a loopback network, so the loop's waits are the mixer's own. Each guest starts
// after the host, at its own phase, and its clock loses one picture interval
// over the run: its pictures meet the host's slots at every phase, as two
// unsynchronised cameras do, and its sound never queues up ahead of the
// host's (StageMixer never drains such a queue; a slow guest leaves a block
// silent now and then instead).

/// One link-mic case: the host's canvas and its guests, who publish at the
/// canvas's size and bitrate (a guest's on-stage options default to the host's).
struct MixScenario {
    let guests: Int
    let width: Int
    let height: Int
    let bitrateKbps: Int
    var label: String { "\(guests) guest\(guests == 1 ? "" : "s") at \(width)x\(height)@\(MixBench.fps)" }
}

/// A guest's stream as it reaches the host.
struct GuestStream {
    var video: [(at: UInt64, packets: [RTPPacket])] = []
    var audio: [(at: UInt64, packet: RTPPacket)] = []
    /// RTP timestamps of the first picture and block: a frame's number is its distance from these.
    var firstVideoTimestamp: UInt32 = 0
    var firstAudioTimestamp: UInt32 = 0
}

struct MixInputs {
    var hostPictures: [I420Frame] = []
    var hostSound: [[Int16]] = []
    var guests: [GuestStream] = []

    static let hostStart: UInt64 = 200_000_000
    static let blockNanos: UInt64 = 20_000_000
    /// Largest RTP packet, as LiveNode gives its encoders (the session's plaintext less its type byte).
    static let maxPacketSize = MessageSize.maxTransportPlaintext - 1

    static func pictureTime(_ n: Int) -> UInt64 { UInt64(n) * 1_000_000_000 / UInt64(MixBench.fps) }

    /// Guest `g`'s phase: spread over a frame so guests do not arrive together.
    static func guestPhase(_ g: Int, of count: Int) -> UInt64 {
        pictureTime(1) * UInt64(2 * g + 1) / UInt64(2 * count) + 3_000_000
    }

    static func elapsed(since start: Double) -> UInt64 { UInt64(max(0, ProcessRunner.now() - start) * 1e9) }

    /// `frames` host pictures and their sound, and every guest's stream over the same span.
    static func make(_ s: MixScenario, frames: Int) throws(MediaError) -> MixInputs {
        var inputs = MixInputs()
        let host = try SyntheticVideo(width: s.width, height: s.height, look: .host)
        inputs.hostPictures = (0..<frames).map { host.frame(number: $0, captureMilliseconds: pictureTime($0) / 1_000_000) }
        var tone = try SyntheticAudio(look: .host)
        let blocks = frames * 50 / MixBench.fps
        inputs.hostSound = (0..<blocks).map { _ in tone.next20ms() }
        let end = hostStart + pictureTime(frames)
        for g in 0..<s.guests {
            inputs.guests.append(try guestStream(s, index: g, until: end, drift: frames))
        }
        return inputs
    }

    /// Guest `index`'s stream, delivered up to `until`; its clock loses one
    /// picture interval every `drift` pictures.
    static func guestStream(_ s: MixScenario, index: Int, until: UInt64, drift: Int) throws(MediaError) -> GuestStream {
        let start = hostStart + guestPhase(index, of: s.guests)
        // Guest time τ reaches the host at start + τ × (1 + 1/drift).
        func arrival(_ tau: UInt64) -> UInt64 { start + tau + tau / UInt64(max(2, drift)) }
        // NTP capture times on the guest's clock (any origin will do: only differences matter).
        func ntp(_ tau: UInt64) -> UInt64 {
            (UInt64(3_900_000_000) + tau / 1_000_000_000) << 32 | (tau % 1_000_000_000) << 32 / 1_000_000_000
        }

        let random = SeededRandom(seed: 0x6D69_7800 + UInt64(index))
        var stream = GuestStream()
        let pattern = try SyntheticVideo(width: s.width, height: s.height, look: .guest)
        let video = try VideoStreamEncoder(width: s.width, height: s.height, fps: MixBench.fps, bitrateKbps: s.bitrateKbps,
                                           gopSeconds: MixBench.gopSeconds, ssrc: 0x1000 + UInt32(index),
                                           maxPacketSize: maxPacketSize, random: random)
        var k = 0
        while arrival(pictureTime(k)) < until {
            let tau = pictureTime(k)
            let picture = pattern.frame(number: k, captureMilliseconds: tau / 1_000_000)
            let start = ProcessRunner.now()
            if let encoded = try video.encode(picture, mediaTime: .nanoseconds(Int64(tau)), captureTime: ntp(tau),
                                              forceKeyframe: false) {
                if k == 0 { stream.firstVideoTimestamp = encoded.packets[0].timestamp }
                stream.video.append((arrival(tau) + elapsed(since: start), encoded.packets))
            }
            k += 1
        }
        var tone = try SyntheticAudio(look: .guest)
        let audio = try AudioStreamEncoder(ssrc: 0x2000 + UInt32(index), random: random)
        var j = 0
        while arrival(UInt64(j + 1) * blockNanos) < until {
            let tau = UInt64(j) * blockNanos
            let block = tone.next20ms()
            let start = ProcessRunner.now()
            let packet = try audio.encode(block, mediaTime: .nanoseconds(Int64(tau)), captureTime: ntp(tau))
            if j == 0 { stream.firstAudioTimestamp = packet.timestamp }
            stream.audio.append((arrival(tau + blockNanos) + elapsed(since: start), packet))
            j += 1
        }
        return stream
    }
}
