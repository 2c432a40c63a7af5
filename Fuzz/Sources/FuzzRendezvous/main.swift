import FuzzSupport
import LVBCore
import LVBRendezvous

// STUN, rendezvous messages and room announcements arrive on the rendezvous port from anyone.
// The parsers must refuse bad bytes with an error, never trap; what they
// accept must re-encode byte for byte; the STUN responder's answer is never
// more than 3× its request (no amplifier) and is itself a valid STUN message.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let message = try? STUNMessage.parse(bytes[...]) {
        fuzzCheck(message.encoded == bytes, "FuzzRendezvous", "message does not survive re-encoding")
    }
    for source in [PeerAddress.ipv4(192, 0, 2, 1, port: 32853), PeerAddress(host: .v6([UInt8](repeating: 0x20, count: 16)), port: 1)] {
        if case let .answer(reply) = STUNResponder().answer(bytes[...], from: source) {
            fuzzCheck(reply.count <= 3 * bytes.count, "FuzzRendezvous", "\(reply.count)-byte answer to \(bytes.count) bytes")
            fuzzCheck((try? STUNMessage.parse(reply[...])) != nil, "FuzzRendezvous", "the answer does not parse")
        }
    }
    if let message = try? RendezvousMessage.parse(bytes[...]) {
        fuzzCheck(message.encoded == bytes, "FuzzRendezvous", "rendezvous message does not survive re-encoding")
    }
    if let announcement = try? RoomAnnouncement.parse(bytes[...]) {
        fuzzCheck(announcement.encoded == bytes, "FuzzRendezvous", "announcement does not survive re-encoding")
    }
    return 0
}

@main enum Main {
    static func main() { runLibFuzzer(fuzz) }
}
