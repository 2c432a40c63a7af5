import FuzzSupport
import LVBCore
import LVBMedia

// The whole media receive path a viewer runs on what its host sends, and the
// host's side of what viewers send back. An input is a script of records:
//
//   [1 byte: kind and time step] [2 bytes: length, big-endian] [length bytes]
//
// The low 7 bits of the first byte advance the clock by that many ms (so
// jitter-buffer deadlines, NACK retries and keyframe waits all fire); the
// top bit picks where the bytes go: 0 → parsed as RTP and given to the
// video or audio receiver (by payload type), 1 → parsed as RTCP and given
// to a host-side MediaOrigin (as one subscribed viewer) and to the
// receivers (sender reports). After each record both receivers are polled.
// RTP records also go to a PreviewReceiver (a keyframes-only subscription),
// ticked with the clock: its held keyframe and its feedback stay bounded.
// Nothing may trap; outputs stay bounded.

private final class FuzzClock: Clock {
    var t = Instant(nanoseconds: 1_000_000_000)
    func now() -> Instant { t }
    func wallTime() -> WallTime { WallTime(seconds: 1_800_000_000 + t.nanoseconds / 1_000_000_000, nanoseconds: UInt32(t.nanoseconds % 1_000_000_000)) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let clock = FuzzClock()
    guard let video = try? VideoReceiver(clock: clock, ssrc: 1),
          let audio = try? AudioReceiver(clock: clock, ssrc: 1) else { return 0 }
    let host = MediaOrigin<Int>(clock: clock, videoSSRC: 0x1122_3344, audioSSRC: 0x5566_7788, maxVideoKbps: 1000)
    guard let preview = try? PreviewReceiver(clock: clock, ssrc: 2, maxDatagram: 1200) else { return 0 }
    preview.sendFeedback = { b in
        fuzzCheck(b.count <= 1200, "FuzzMediaReceive", "preview sent \(b.count) bytes of feedback")
    }
    preview.subscribe()
    var sent = 0
    host.send = { _, _, b in
        sent += 1
        fuzzCheck(b.count <= 1500, "FuzzMediaReceive", "host sent a \(b.count)-byte packet")
    }
    // Something for NACKs to find: a few video packets in the host's history.
    for seq in UInt16(0)..<8 {
        if let p = try? RTPPacket(marker: seq == 7, payloadType: 96, sequenceNumber: seq, timestamp: 0,
                                  ssrc: 0x1122_3344, payload: [0x90, 0x80, 0x00, 0x01, 0x10][...]) {
            host.publishVideo(EncodedMediaFrame(packets: [p], isKeyframe: seq == 0, bytes: 5))
        }
    }
    var i = 0
    var records = 0
    while i + 3 <= bytes.count, records < 4096 {
        let head = bytes[i]
        let length = Int(bytes[i + 1]) << 8 | Int(bytes[i + 2])
        i += 3
        let body = Array(bytes[i..<min(bytes.count, i + length)])
        i += length
        records += 1
        clock.t = clock.t + .milliseconds(Int64(head & 0x7F))
        if head & 0x80 == 0 {
            preview.receiveRTP(body[...])
            preview.tick()
            if let held = preview.latestKeyframe {
                fuzzCheck(!held.packets.isEmpty && held.bytes <= MediaConstants.gopCacheMaxBytes, "FuzzMediaReceive",
                          "preview holds a keyframe of \(held.packets.count) packets, \(held.bytes) bytes")
            }
            if let packet = try? RTPPacket.parse(body) {
                if packet.payloadType == 111 { audio.receive(packet) } else { video.receive(packet) }
            }
        } else {
            host.receiveRTCP(body[...], from: 1)
            if let packets = try? RTCPPacket.parseCompound(body) {
                for p in packets {
                    video.receiveRTCP(p)
                    audio.receiveRTCP(p)
                }
            }
        }
        for case let .frame(f) in video.poll() {
            fuzzCheck(f.image.width > 0 && f.image.height > 0, "FuzzMediaReceive", "decoded an empty picture")
        }
        for case let .audio(a) in audio.poll() {
            fuzzCheck(a.pcm.count == 960, "FuzzMediaReceive", "audio block of \(a.pcm.count) samples")
        }
        // Work can stay due after a poll (NACKs go out at most 200 per
        // feedback), but polling again at the same instant must drain it:
        // nothing may stay due forever.
        var polls = 0
        while let wake = video.nextWakeup, wake <= clock.t, polls < 16 {
            _ = video.poll()
            polls += 1
        }
        if let wake = video.nextWakeup { fuzzCheck(wake > clock.t, "FuzzMediaReceive", "video work stays due after \(polls) polls") }
    }
    host.tick()
    // Retransmissions are bounded by the history and the budget, not by the input.
    fuzzCheck(host.fanOut.stats.retransmissions <= 8 * max(1, host.fanOut.stats.nacksReceived), "FuzzMediaReceive", "more repairs than held packets")
    _ = sent
    return 0
}

@main enum Main {
    static func main() { runLibFuzzer(fuzz) }
}
