import FuzzSupport
import LVBMedia

// Media packets arrive from any peer that sends us a stream. Each input is fed
// to every media parser:
//
// 1. `RTPPacket.parse`: what it accepts serializes to bytes that parse again
//    to an equal packet.
// 2. `RTCPPacket.parseCompound`: what it accepts serializes (as a compound
//    packet) to bytes that parse back to the same packets.
// 3. `VP8PayloadDescriptor.parse` (on the whole input and on an accepted RTP
//    packet's payload): the descriptor's bytes followed by the data parse
//    again to the same descriptor and data.
// 4. `OpusPayload.toc(of:)`: the fields are those of the first byte.
// 5. A long-lived `VP8FrameAssembler` (small bounds, so eviction is reached)
//    gets every RTP packet accepted; it must never trap, and its outputs stay
//    within its bounds (an RSS limit catches state that grows). Assembled frames go to the decoder too.
// 6. A long-lived `VP8Decoder` decodes the whole input: errors are fine,
//    trapping is not.

private let maxPendingFrames = 8
private let maxPacketsPerFrame = 32
private var assembler = VP8FrameAssembler(maxPendingFrames: maxPendingFrames, maxPacketsPerFrame: maxPacketsPerFrame)
private let decoder = try? VP8Decoder()

private func checkDescriptor(_ payload: ArraySlice<UInt8>) {
    guard let (descriptor, data) = try? VP8PayloadDescriptor.parse(payload) else { return }
    fuzzCheck(!data.isEmpty, "FuzzMedia", "VP8 descriptor accepted with no data after it")
    fuzzCheck(data.count < payload.count, "FuzzMedia", "VP8 data is not shorter than its payload")
    let again = descriptor.serialized() + data
    guard let (d2, data2) = try? VP8PayloadDescriptor.parse(again[...]) else {
        fuzzCheck(false, "FuzzMedia", "serialized VP8 descriptor \(descriptor) does not parse")
        return
    }
    fuzzCheck(d2 == descriptor, "FuzzMedia", "VP8 descriptor \(descriptor) parses back as \(d2)")
    fuzzCheck(data2 == data, "FuzzMedia", "VP8 data changes through serialization")
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))

    if let packet = try? RTPPacket.parse(bytes) {
        let wire = packet.serialized()
        let again = try? RTPPacket.parse(wire)
        fuzzCheck(again == packet, "FuzzMedia", "RTP packet does not parse again to itself")
        checkDescriptor(packet.payload)
        if let outputs = try? assembler.insert(packet) {
            // One insert gives up at most every pending frame, plus its own result.
            fuzzCheck(outputs.count <= maxPendingFrames + 1, "FuzzMedia", "\(outputs.count) outputs from one packet")
            for case let .frame(frame) in outputs {
                fuzzCheck(frame.timestamp == packet.timestamp, "FuzzMedia", "delivered a frame of another timestamp")
                if let decoder, !frame.data.isEmpty { _ = try? decoder.decode(frame.data) }
            }
        }
    }

    if let packets = try? RTCPPacket.parseCompound(bytes) {
        let wire = RTCPPacket.serializeCompound(packets)
        if packets.isEmpty {
            // Only unknown packet types: nothing to write back.
            fuzzCheck(wire.isEmpty, "FuzzMedia", "no RTCP packets serialize to \(wire.count) bytes")
        } else {
            let again = try? RTCPPacket.parseCompound(wire)
            fuzzCheck(again == packets, "FuzzMedia", "RTCP compound \(packets) parses back as \(String(describing: again))")
        }
    }

    checkDescriptor(bytes[...])

    if let toc = try? OpusPayload.toc(of: bytes[...]) {
        let first = bytes[0]
        fuzzCheck(toc.config == first >> 3 && toc.stereo == (first & 0x04 != 0) && toc.frameCountCode == first & 0x03,
                  "FuzzMedia", "Opus TOC \(toc) does not match byte \(first)")
    } else {
        fuzzCheck(bytes.isEmpty || (bytes.count == 1 && bytes[0] & 0x03 == 3), "FuzzMedia", "Opus TOC rejected")
    }

    if let decoder {
        _ = try? decoder.decode(bytes)
    } else {
        fuzzCheck(false, "FuzzMedia", "VP8Decoder() failed")
    }
    return 0
}

@main enum Main {
    static func main() { runLibFuzzer(fuzz) }
}
