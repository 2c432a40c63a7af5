import FuzzSupport
import LVBCore
import LVBRoom

// Room-channel messages (admission requests and answers, leaving, leave
// acks) arrive from any peer with a session, admitted or not. The parser must
// refuse bad bytes with an error, never trap; an unknown type must come out
// as `unknownMessage` (counted, never penalised); what it accepts must
// encode back to the same bytes.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    do {
        let message = try RoomMessage.parse(bytes[...])
        fuzzCheck(message.encoded == bytes, "FuzzRoom", "message does not survive re-encoding: \(message)")
    } catch {
        if let first = bytes.first, !RoomMessage.isKnown(first) {
            fuzzCheck(error == .unknownMessage(first), "FuzzRoom", "unknown type \(first) gave \(error)")
        }
    }
    return 0
}

@main enum Main {
    static func main() { runLibFuzzer(fuzz) }
}
