import FuzzSupport
import LVBCore
import LVBReplay

// Replay messages come from any peer with a session (players, holders,
// a rendezvous); manifests and segments from holders that may lie. The
// parsers must refuse bad bytes with an error, never trap; what they accept
// must re-encode byte for byte; a manifest accepted has a card that parses
// back to itself, and every segment it lists has a time inside the manifest.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let message = try? ReplayMessage.parse(bytes[...]) {
        fuzzCheck(message.bytes == bytes, "FuzzReplay", "exchange message does not survive re-encoding")
    }
    if let message = try? ReplayListMessage.parse(bytes[...]) {
        fuzzCheck(message.bytes == bytes, "FuzzReplay", "list message does not survive re-encoding")
    }
    if let card = try? ReplayCard.parse(bytes[...]) {
        fuzzCheck(card.encoded == bytes, "FuzzReplay", "card does not survive re-encoding")
    }
    if let (manifest, card) = try? ReplayManifest.parseWithCard(bytes[...]) {
        fuzzCheck((try? ReplayCard.parse(card.encoded[...])) == card, "FuzzReplay", "a manifest's card does not parse")
        fuzzCheck(card.durationMs == manifest.durationMs && manifest.segments.allSatisfy { $0.endMs <= manifest.durationMs },
                  "FuzzReplay", "segments past the manifest's duration")
    }
    if bytes.count >= 12 {
        let index = bytes[8..<12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        if let frames = try? ReplaySegment.parse(bytes[...], index: index) {
            fuzzCheck(ReplaySegment.encode(index: index, frames) == bytes, "FuzzReplay", "segment does not survive re-encoding")
        }
    }
    return 0
}

@main enum Main {
    static func main() { runLibFuzzer(fuzz) }
}
