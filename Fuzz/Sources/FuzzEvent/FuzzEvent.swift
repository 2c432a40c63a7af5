import FuzzSupport
import LVBCore
import LVBCrypto
import LVBGossip
import LVBRoom

// Signed room events, of the kinds the room registers (`RoomEvents`), arrive
// from any peer of a room's overlay. Each input is tried two ways:
//
// 1. As a whole event: `RoomEvent.parse` must reject it with an error or
//    accept it without trapping; what it accepts keeps its exact bytes, parses
//    again to the same event, and fits `maxEncodedSize`.
// 2. As kind(1) ‖ body, framed and signed here by a fixed identity, so the
//    body parsers are reached past the signature check. What parse accepts,
//    `make` with the same fields must encode to the same bytes (exactly one
//    encoding per event, and make and parse agree on the limits); what it
//    rejects is never `badSignature`, because the signature is good.

private let signer = try? Identity(seed: [UInt8](repeating: 3, count: 32))
private let room = try? RoomID(bytes: [UInt8](repeating: 0x5A, count: 16))
private let seq: UInt64 = 7
private let timestamp: UInt64 = 1_700_000_000_000

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))

    if let event = try? RoomEvent.parse(bytes[...], kinds: RoomEvents.table) {
        fuzzCheck(event.encoded == bytes, "FuzzEvent", "accepted event does not keep its bytes")
        fuzzCheck(bytes.count <= RoomEvent.maxEncodedSize, "FuzzEvent", "accepted \(bytes.count) bytes > maxEncodedSize")
        fuzzCheck(event.signature.count == 64 && event.body.kind.rawValue == bytes[65], "FuzzEvent", "fields do not match the bytes")
        fuzzCheck((try? RoomEvent.parse(event.encoded[...], kinds: RoomEvents.table)) == event, "FuzzEvent", "accepted event does not parse again")
    }

    guard let signer, let room, let kind = bytes.first else {
        fuzzCheck(signer != nil && room != nil, "FuzzEvent", "fixed identity or room id failed")
        return 0
    }
    let body = bytes.dropFirst().prefix(Int(UInt16.max))
    var w = ByteWriter(capacity: 68 + body.count + 64)
    w.write(UInt8(1))
    w.write(bytes: room.bytes)
    w.write(bytes: signer.nodeID.publicKey)
    w.write(seq)
    w.write(timestamp)
    w.write(kind)
    w.write(UInt16(body.count))
    w.write(bytes: body)
    let wire = w.bytes + signer.sign(Array("lvbnode room event v1".utf8) + [0] + w.bytes)

    do {
        let event = try RoomEvent.parse(wire[...], kinds: RoomEvents.table)
        fuzzCheck(event.body.kind.rawValue == kind, "FuzzEvent", "kind \(kind) parsed as \(event.body.kind)")
        let again = try? RoomEvent.make(room: room, author: signer, seq: seq, timestamp: timestamp, body: event.body)
        fuzzCheck(again?.encoded == wire, "FuzzEvent", "make does not reproduce the parsed event \(event.body)")
    } catch {
        fuzzCheck(error != .badSignature, "FuzzEvent", "a good signature was rejected")
        if case .unknownKind = error {
            fuzzCheck(RoomEvents.table.kind(kind) == nil, "FuzzEvent", "known kind \(kind) reported unknown")
        }
    }
    return 0
}

@main enum Main {
    static func main() { runLibFuzzer(fuzz) }
}
