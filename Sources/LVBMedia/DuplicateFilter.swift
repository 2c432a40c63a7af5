/// Recognises RTP packets seen before, by SSRC and sequence number, so that a
/// relay forwards each packet once however often it arrives (a retransmission
/// that fills a hole passes; a second copy does not). Per SSRC, a ring of bits
/// for the `window` sequence numbers up to the newest seen (RFC 6479's bitmap,
/// as `ReplayWindow`, over unwrapped sequence numbers); at most `maxSSRCs`
/// SSRCs, the one heard from longest ago forgotten first.
struct DuplicateFilter: Sendable {
    /// What a packet is to the filter.
    enum Verdict: Equatable, Sendable {
        /// Not seen before (now marked seen).
        case new
        /// Seen before.
        case duplicate
        /// Further behind the newest than the window reaches.
        case tooOld
    }

    private struct Stream: Sendable {
        var unwrapper = SequenceUnwrapper()
        var bits: [UInt64]
        var lastUsed: UInt64
    }

    let window: Int
    let maxSSRCs: Int
    private var streams: [UInt32: Stream] = [:]
    private var uses: UInt64 = 0

    init(window: Int = MediaConstants.relayDuplicateWindow, maxSSRCs: Int = MediaConstants.relayMaxSSRCs) {
        // A power of two (the ring is indexed by the low bits), whole 64-bit
        // words, at most half the sequence space.
        var w = 64
        while w < window, w < 1 << 15 { w <<= 1 }
        self.window = w
        self.maxSSRCs = max(1, maxSSRCs)
    }

    /// Marks `sequence` of `ssrc` seen; says whether it was new.
    mutating func check(ssrc: UInt32, sequence: UInt16) -> Verdict {
        uses += 1
        guard var s = streams.removeValue(forKey: ssrc) else {
            if streams.count >= maxSSRCs, let oldest = streams.min(by: { $0.value.lastUsed < $1.value.lastUsed })?.key {
                streams[oldest] = nil
            }
            var s = Stream(bits: Array(repeating: 0, count: window / 64), lastUsed: uses)
            let u = s.unwrapper.unwrap(sequence)
            set(&s, u)
            streams[ssrc] = s
            return .new
        }
        defer { streams[ssrc] = s }
        s.lastUsed = uses
        let newest = s.unwrapper.newest ?? 0
        let u = s.unwrapper.peek(sequence)
        if u > newest {
            // Clear what the window slides over (all of it on a far jump).
            if u - newest >= Int64(window) {
                for i in s.bits.indices { s.bits[i] = 0 }
            } else {
                var k = newest + 1
                while k <= u { clear(&s, k); k += 1 }
            }
            _ = s.unwrapper.unwrap(sequence)
        } else if newest - u >= Int64(window) {
            return .tooOld
        } else if isSet(s, u) {
            return .duplicate
        }
        set(&s, u)
        return .new
    }

    /// True when `sequence` of `ssrc` is within the window behind the newest
    /// seen and has not arrived: a hole the sender can still fill.
    func isMissing(ssrc: UInt32, sequence: UInt16) -> Bool {
        guard let s = streams[ssrc], let newest = s.unwrapper.newest else { return false }
        let u = s.unwrapper.peek(sequence)
        return u < newest && newest - u < Int64(window) && !isSet(s, u)
    }

    /// Forgets `ssrc` (its stream was replaced).
    mutating func forget(_ ssrc: UInt32) { streams[ssrc] = nil }

    private func position(_ u: Int64) -> (word: Int, bit: UInt64) {
        let slot = Int(u & Int64(window - 1))
        return (slot / 64, UInt64(1) << UInt64(slot % 64))
    }

    private func isSet(_ s: Stream, _ u: Int64) -> Bool {
        let (w, b) = position(u)
        return s.bits[w] & b != 0
    }

    private func set(_ s: inout Stream, _ u: Int64) {
        let (w, b) = position(u)
        s.bits[w] |= b
    }

    private func clear(_ s: inout Stream, _ u: Int64) {
        let (w, b) = position(u)
        s.bits[w] &= ~b
    }
}
