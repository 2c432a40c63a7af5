import LVBCore

/// The fields of an RTP packet a relay forwards by (RFC 3550 §5.1: payload
/// type, marker, sequence number, timestamp, SSRC) and where its payload
/// lies, read in place: no CSRC list or extension elements are built, so
/// nothing is allocated per packet. It accepts and rejects exactly what
/// `RTPPacket.parse` does (the extension elements, RFC 8285 §4.2 and §4.3,
/// are walked and checked, not kept).
struct RTPHeader: Equatable, Sendable {
    var marker: Bool
    var payloadType: UInt8
    var sequenceNumber: UInt16
    var timestamp: UInt32
    var ssrc: UInt32
    /// The payload, padding removed, with the input's indices.
    var payload: ArraySlice<UInt8>

    init(parsing bytes: ArraySlice<UInt8>) throws(MediaError) {
        var r = ByteReader(bytes)
        guard r.remaining >= MediaConstants.RTP.fixedHeaderSize else { throw .truncated("RTP header") }
        let b0 = try r.mediaRead8("RTP header")
        guard b0 >> 6 == MediaConstants.RTP.version else { throw .malformed("RTP version \(b0 >> 6)") }
        let b1 = try r.mediaRead8("RTP header")
        marker = b1 & 0x80 != 0
        payloadType = b1 & 0x7F
        sequenceNumber = try r.mediaRead16("RTP header")
        timestamp = try r.mediaRead32("RTP header")
        ssrc = try r.mediaRead32("RTP header")
        let csrcCount = Int(b0 & 0x0F)
        guard r.remaining >= 4 * csrcCount else { throw .truncated("RTP CSRC list") }
        _ = try r.mediaBytes(4 * csrcCount, "RTP CSRC list")
        if b0 & 0x10 != 0 {
            let profile = try r.mediaRead16("RTP header extension")
            let words = Int(try r.mediaRead16("RTP header extension"))
            let block = try r.mediaBytes(4 * words, "RTP header extension")
            // Walked and checked as `RTPPacket.parse` does, nothing kept.
            if profile == MediaConstants.RTP.oneByteProfile {
                try RTPPacket.walkOneByteElements(block) { _, _ in }
            } else if profile & 0xFFF0 == MediaConstants.RTP.twoByteProfile {
                try RTPPacket.walkTwoByteElements(block) { _, _ in }
            }
        }
        var payload = r.readRest()
        if b0 & 0x20 != 0 {
            guard let count = payload.last else { throw .malformed("RTP padding longer than payload") }
            guard count > 0 else { throw .malformed("RTP padding count 0") }
            guard Int(count) <= payload.count else { throw .malformed("RTP padding longer than payload") }
            payload = payload.dropLast(Int(count))
        }
        self.payload = payload
    }

    /// The header of a packet already parsed.
    init(_ packet: RTPPacket) {
        marker = packet.marker
        payloadType = packet.payloadType
        sequenceNumber = packet.sequenceNumber
        timestamp = packet.timestamp
        ssrc = packet.ssrc
        payload = packet.payload
    }
}
