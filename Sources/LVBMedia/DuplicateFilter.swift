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
        var ssrc: UInt32
        var unwrapper = SequenceUnwrapper()
        var bits: [UInt64]
        var lastUsed: UInt64
    }

    let window: Int
    let maxSSRCs: Int
    /// A few streams, searched in order (no hashing per packet).
    private var streams: [Stream] = []
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
        guard let i = streams.firstIndex(where: { $0.ssrc == ssrc }) else {
            if streams.count >= maxSSRCs, let oldest = streams.indices.min(by: { streams[$0].lastUsed < streams[$1].lastUsed }) {
                streams.remove(at: oldest)
            }
            var s = Stream(ssrc: ssrc, bits: Array(repeating: 0, count: window / 64), lastUsed: uses)
            let u = s.unwrapper.unwrap(sequence)
            Self.set(&s, u, window)
            streams.append(s)
            return .new
        }
        streams[i].lastUsed = uses
        return Self.check(&streams[i], sequence, window: window)
    }

    private static func check(_ s: inout Stream, _ sequence: UInt16, window: Int) -> Verdict {
        let newest = s.unwrapper.newest ?? 0
        let u = s.unwrapper.peek(sequence)
        if u > newest {
            // Clear what the window slides over (all of it on a far jump).
            if u - newest >= Int64(window) {
                for i in s.bits.indices { s.bits[i] = 0 }
            } else {
                var k = newest + 1
                while k <= u { clear(&s, k, window); k += 1 }
            }
            _ = s.unwrapper.unwrap(sequence)
        } else if newest - u >= Int64(window) {
            return .tooOld
        } else if isSet(s, u, window) {
            return .duplicate
        }
        set(&s, u, window)
        return .new
    }

    /// True when `sequence` of `ssrc` is within the window behind the newest
    /// seen and has not arrived: a hole the sender can still fill.
    func isMissing(ssrc: UInt32, sequence: UInt16) -> Bool {
        guard let s = streams.first(where: { $0.ssrc == ssrc }), let newest = s.unwrapper.newest else { return false }
        let u = s.unwrapper.peek(sequence)
        return u < newest && newest - u < Int64(window) && !Self.isSet(s, u, window)
    }

    /// Counts `sequence` of `ssrc` as not arrived (what came was refused; a true copy may follow).
    mutating func unsee(ssrc: UInt32, sequence: UInt16) {
        guard let i = streams.firstIndex(where: { $0.ssrc == ssrc }), let newest = streams[i].unwrapper.newest else { return }
        let u = streams[i].unwrapper.peek(sequence)
        guard u <= newest, newest - u < Int64(window) else { return }
        Self.clear(&streams[i], u, window)
    }

    /// Forgets `ssrc` (its stream was replaced).
    mutating func forget(_ ssrc: UInt32) { streams.removeAll { $0.ssrc == ssrc } }

    private static func position(_ u: Int64, _ window: Int) -> (word: Int, bit: UInt64) {
        let slot = Int(u & Int64(window - 1))
        return (slot / 64, UInt64(1) << UInt64(slot % 64))
    }

    private static func isSet(_ s: Stream, _ u: Int64, _ window: Int) -> Bool {
        let (w, b) = position(u, window)
        return s.bits[w] & b != 0
    }

    private static func set(_ s: inout Stream, _ u: Int64, _ window: Int) {
        let (w, b) = position(u, window)
        s.bits[w] |= b
    }

    private static func clear(_ s: inout Stream, _ u: Int64, _ window: Int) {
        let (w, b) = position(u, window)
        s.bits[w] &= ~b
    }
}
