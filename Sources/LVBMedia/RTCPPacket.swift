import LVBCore

/// One reception report block (RFC 3550 §6.4.1), 24 bytes on the wire.
public struct RTCPReportBlock: Equatable, Sendable {
    public var ssrc: UInt32
    /// Fraction of packets lost since the last report, in 1/256ths.
    public var fractionLost: UInt8
    /// Cumulative packets lost: 24-bit signed on the wire (duplicates can make it negative).
    public var cumulativeLost: Int32
    public var extendedHighestSequence: UInt32
    public var jitter: UInt32
    /// Middle 32 bits of the last SR's NTP timestamp (LSR).
    public var lastSenderReport: UInt32
    /// Delay since that SR, in 1/65536 s (DLSR).
    public var delaySinceLastSenderReport: UInt32

    public init(ssrc: UInt32, fractionLost: UInt8, cumulativeLost: Int32, extendedHighestSequence: UInt32,
                jitter: UInt32, lastSenderReport: UInt32, delaySinceLastSenderReport: UInt32) {
        self.ssrc = ssrc
        self.fractionLost = fractionLost
        self.cumulativeLost = cumulativeLost
        self.extendedHighestSequence = extendedHighestSequence
        self.jitter = jitter
        self.lastSenderReport = lastSenderReport
        self.delaySinceLastSenderReport = delaySinceLastSenderReport
    }
}

/// Sender report (RFC 3550 §6.4.1, PT 200).
public struct RTCPSenderReport: Equatable, Sendable {
    public var ssrc: UInt32
    /// NTP 64-bit wall-clock time of sending (RFC 3550 §4).
    public var ntpTimestamp: UInt64
    public var rtpTimestamp: UInt32
    public var packetCount: UInt32
    public var octetCount: UInt32
    /// At most 31 blocks (the 5-bit RC field), checked by `init`.
    public private(set) var reportBlocks: [RTCPReportBlock]

    public init(ssrc: UInt32, ntpTimestamp: UInt64, rtpTimestamp: UInt32, packetCount: UInt32,
                octetCount: UInt32, reportBlocks: [RTCPReportBlock] = []) throws(MediaError) {
        guard reportBlocks.count <= MediaConstants.RTCP.maxCount else { throw .invalidParameter("\(reportBlocks.count) report blocks, at most 31") }
        self.ssrc = ssrc
        self.ntpTimestamp = ntpTimestamp
        self.rtpTimestamp = rtpTimestamp
        self.packetCount = packetCount
        self.octetCount = octetCount
        self.reportBlocks = reportBlocks
    }
}

/// Receiver report (RFC 3550 §6.4.2, PT 201).
public struct RTCPReceiverReport: Equatable, Sendable {
    public var ssrc: UInt32
    /// At most 31 blocks (the 5-bit RC field), checked by `init`.
    public private(set) var reportBlocks: [RTCPReportBlock]

    public init(ssrc: UInt32, reportBlocks: [RTCPReportBlock] = []) throws(MediaError) {
        guard reportBlocks.count <= MediaConstants.RTCP.maxCount else { throw .invalidParameter("\(reportBlocks.count) report blocks, at most 31") }
        self.ssrc = ssrc
        self.reportBlocks = reportBlocks
    }
}

/// Generic NACK (RFC 4585 §6.2.1, PT 205 FMT 1): lost RTP sequence numbers as PID + BLP entries.
///
/// ```
///  0                   1                   2                   3
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |            PID                |             BLP               |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// ```
/// BLP bit i (least significant first) reports PID + i + 1 lost.
public struct RTCPGenericNACK: Equatable, Sendable {
    public struct Entry: Equatable, Sendable {
        public var packetID: UInt16
        public var lostBitmask: UInt16
        public init(packetID: UInt16, lostBitmask: UInt16) {
            self.packetID = packetID
            self.lostBitmask = lostBitmask
        }
    }

    public var senderSSRC: UInt32
    public var mediaSSRC: UInt32
    /// Never empty: a NACK without entries is not valid on the wire.
    public private(set) var entries: [Entry]

    /// Builds the fewest entries in ascending order; fails for an empty set.
    public init(senderSSRC: UInt32, mediaSSRC: UInt32, lost: Set<UInt16>) throws(MediaError) {
        guard !lost.isEmpty else { throw .invalidParameter("NACK needs at least one lost sequence number") }
        let sorted = lost.sorted()
        var entries: [Entry] = []
        var i = 0
        while i < sorted.count {
            let pid = sorted[i]
            var mask: UInt16 = 0
            i += 1
            while i < sorted.count, sorted[i] - pid <= 16 {
                mask |= 1 << (sorted[i] - pid - 1)
                i += 1
            }
            entries.append(Entry(packetID: pid, lostBitmask: mask))
        }
        self.init(senderSSRC: senderSSRC, mediaSSRC: mediaSSRC, checkedEntries: entries)
    }

    init(senderSSRC: UInt32, mediaSSRC: UInt32, checkedEntries: [Entry]) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.entries = checkedEntries
    }

    /// Every sequence number the entries report lost, in entry order.
    public var lostSequenceNumbers: [UInt16] {
        var out: [UInt16] = []
        for entry in entries {
            out.append(entry.packetID)
            for bit in 0..<16 where entry.lostBitmask & (1 << bit) != 0 {
                out.append(entry.packetID &+ UInt16(bit) &+ 1)
            }
        }
        return out
    }
}

/// Picture Loss Indication (RFC 4585 §6.3.1, PT 206 FMT 1): asks the sender for a keyframe.
public struct RTCPPictureLossIndication: Equatable, Sendable {
    public var senderSSRC: UInt32
    public var mediaSSRC: UInt32
    public init(senderSSRC: UInt32, mediaSSRC: UInt32) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
    }
}

/// Full Intra Request (RFC 5104 §4.3.1, PT 206 FMT 4): asks each listed
/// source for a keyframe; `sequence` tells a repeated request from a new one.
public struct RTCPFullIntraRequest: Equatable, Sendable {
    public struct Entry: Equatable, Sendable {
        public var ssrc: UInt32
        public var sequence: UInt8
        public init(ssrc: UInt32, sequence: UInt8) {
            self.ssrc = ssrc
            self.sequence = sequence
        }
    }
    public var senderSSRC: UInt32
    public var entries: [Entry]
    public init(senderSSRC: UInt32, entries: [Entry]) {
        self.senderSSRC = senderSSRC
        self.entries = entries
    }
}

/// Receiver Estimated Maximum Bitrate (draft-alvestrand-rmcat-remb, PT 206
/// FMT 15, "REMB"): the bitrate in bit/s the receivers of `ssrcs` can take.
/// Sent with a mantissa of 18 bits: large values lose their low bits.
public struct RTCPREMB: Equatable, Sendable {
    public var senderSSRC: UInt32
    public var bitrate: UInt64
    public var ssrcs: [UInt32]
    public init(senderSSRC: UInt32, bitrate: UInt64, ssrcs: [UInt32]) throws(MediaError) {
        guard ssrcs.count <= Int(UInt8.max) else { throw .invalidParameter("REMB lists at most 255 sources") }
        self.senderSSRC = senderSSRC
        self.bitrate = bitrate
        self.ssrcs = ssrcs
    }
    init(senderSSRC: UInt32, bitrate: UInt64, checkedSSRCs checked: [UInt32]) {
        self.senderSSRC = senderSSRC
        self.bitrate = bitrate
        ssrcs = checked
    }
}

/// Goodbye (RFC 3550 §6.6, PT 203): the sources leave. A subscriber sends
/// it to the node that feeds it when it takes the stream elsewhere or stops,
/// so that node lets it go at once instead of after `subscriberTimeout`.
/// The optional reason text is skipped when parsing and never sent.
public struct RTCPBye: Equatable, Sendable {
    public var ssrcs: [UInt32]
    public init(ssrcs: [UInt32]) throws(MediaError) {
        guard ssrcs.count <= MediaConstants.RTCP.maxCount else { throw .malformed("BYE lists at most \(MediaConstants.RTCP.maxCount) sources") }
        self.ssrcs = ssrcs
    }
    init(checkedSSRCs: [UInt32]) { ssrcs = checkedSSRCs }
}

/// The RTCP packets this node speaks; compound packets (RFC 3550 §6.1) are
/// lists of them. Other types and formats are skipped when parsing.
///
/// Common header (RFC 3550 §6.4.1, RFC 4585 §6.1):
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |V=2|P| RC/FMT  |      PT       |             length            |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// ```
/// length is the packet size in 32-bit words minus one.
public enum RTCPPacket: Equatable, Sendable {
    case senderReport(RTCPSenderReport)
    case receiverReport(RTCPReceiverReport)
    case nack(RTCPGenericNACK)
    case pli(RTCPPictureLossIndication)
    case app(RTCPApp)
    case bye(RTCPBye)
    /// From a media server's subscribers (`--egress`): a keyframe, and a bandwidth estimate.
    case fir(RTCPFullIntraRequest)
    case remb(RTCPREMB)

    public static func parseCompound(_ bytes: [UInt8]) throws(MediaError) -> [RTCPPacket] {
        try parseCompound(bytes[...])
    }

    /// Parses every packet of a compound packet; unknown types are skipped,
    /// any packet whose length does not fit fails the whole datagram.
    /// The SR/RR-first rule of RFC 3550 §6.1 is not enforced (RFC 5506 reduced size).
    public static func parseCompound(_ bytes: ArraySlice<UInt8>) throws(MediaError) -> [RTCPPacket] {
        guard !bytes.isEmpty else { throw .truncated("RTCP packet") }
        var r = ByteReader(bytes)
        var packets: [RTCPPacket] = []
        while !r.isAtEnd {
            guard r.remaining >= 4 else { throw .truncated("RTCP header") }
            let b0 = try r.mediaRead8("RTCP header")
            guard b0 >> 6 == 2 else { throw .malformed("RTCP version \(b0 >> 6)") }
            let count = Int(b0 & 0x1F)
            let type = try r.mediaRead8("RTCP header")
            let words = Int(try r.mediaRead16("RTCP header"))
            var body = try r.mediaBytes(4 * words, "RTCP packet")
            if b0 & 0x20 != 0 {
                guard let pad = body.last, pad > 0, Int(pad) <= body.count else {
                    throw .malformed("RTCP padding longer than packet")
                }
                body = body.dropLast(Int(pad))
            }
            if let packet = try parseBody(type: type, count: count, body) { packets.append(packet) }
        }
        return packets
    }

    private static func parseBody(type: UInt8, count: Int, _ body: ArraySlice<UInt8>) throws(MediaError) -> RTCPPacket? {
        var r = ByteReader(body)
        switch (type, UInt8(count)) {
        case (MediaConstants.RTCP.typeSR, _):
            // SSRC, NTP (64), RTP ts, packet count, octet count; then RC blocks.
            guard body.count >= 24 + MediaConstants.RTCP.reportBlockSize * count else { throw .malformed("SR length does not cover its report blocks") }
            let ssrc = try r.mediaRead32("SR")
            let ntp = try r.mediaRead64("SR")
            let rtp = try r.mediaRead32("SR")
            let packetCount = try r.mediaRead32("SR")
            let octetCount = try r.mediaRead32("SR")
            let blocks = try parseBlocks(&r, count)
            return .senderReport(try RTCPSenderReport(ssrc: ssrc, ntpTimestamp: ntp, rtpTimestamp: rtp,
                                                      packetCount: packetCount, octetCount: octetCount, reportBlocks: blocks))
        case (MediaConstants.RTCP.typeRR, _):
            guard body.count >= 4 + MediaConstants.RTCP.reportBlockSize * count else { throw .malformed("RR length does not cover its report blocks") }
            let ssrc = try r.mediaRead32("RR")
            return .receiverReport(try RTCPReceiverReport(ssrc: ssrc, reportBlocks: try parseBlocks(&r, count)))
        case (MediaConstants.RTCP.typeRTPFB, MediaConstants.RTCP.formatGenericNACK):
            guard body.count >= 12, body.count % 4 == 0 else { throw .malformed("generic NACK length must cover whole FCI entries") }
            let sender = try r.mediaRead32("NACK")
            let media = try r.mediaRead32("NACK")
            var entries: [RTCPGenericNACK.Entry] = []
            while !r.isAtEnd {
                entries.append(.init(packetID: try r.mediaRead16("NACK"), lostBitmask: try r.mediaRead16("NACK")))
            }
            return .nack(RTCPGenericNACK(senderSSRC: sender, mediaSSRC: media, checkedEntries: entries))
        case (MediaConstants.RTCP.typePSFB, MediaConstants.RTCP.formatPLI):
            // RFC 4585 §6.3.1: "the length field MUST be 2".
            guard body.count == 8 else { throw .malformed("PLI length must be 2") }
            return .pli(RTCPPictureLossIndication(senderSSRC: try r.mediaRead32("PLI"), mediaSSRC: try r.mediaRead32("PLI")))
        case (MediaConstants.RTCP.typePSFB, MediaConstants.RTCP.formatFIR):
            // RFC 5104 §4.3.1: sender SSRC, media SSRC (unused), then 8-octet entries.
            guard body.count >= 8, body.count % 8 == 0 else { throw .malformed("FIR length must cover whole FCI entries") }
            let sender = try r.mediaRead32("FIR")
            _ = try r.mediaRead32("FIR")
            var entries: [RTCPFullIntraRequest.Entry] = []
            while !r.isAtEnd {
                let ssrc = try r.mediaRead32("FIR"), seq = try r.mediaRead8("FIR")
                _ = try r.mediaBytes(3, "FIR")
                entries.append(.init(ssrc: ssrc, sequence: seq))
            }
            return .fir(RTCPFullIntraRequest(senderSSRC: sender, entries: entries))
        case (MediaConstants.RTCP.typePSFB, MediaConstants.RTCP.formatAFB):
            // draft-alvestrand-rmcat-remb §2.2: sender SSRC, media SSRC 0,
            // "REMB", count (8), exponent (6) and mantissa (18), the SSRCs.
            // Other application-layer feedback is skipped.
            guard body.count >= 16 else { throw .malformed("application feedback shorter than a REMB") }
            let sender = try r.mediaRead32("REMB")
            _ = try r.mediaRead32("REMB")
            guard Array(try r.mediaBytes(4, "REMB")) == Array("REMB".utf8) else { return nil }
            let word = try r.mediaRead32("REMB")
            let count = Int(word >> 24), exponent = UInt64(word >> 18 & 0x3F), mantissa = UInt64(word & 0x3FFFF)
            guard r.remaining == 4 * count else { throw .malformed("REMB length does not match its SSRC count") }
            var ssrcs: [UInt32] = []
            for _ in 0..<count { ssrcs.append(try r.mediaRead32("REMB")) }
            // A mantissa shifted past 64 bits is no real estimate: the most there is.
            let bitrate = exponent > 45 ? UInt64.max : mantissa << exponent
            return .remb(RTCPREMB(senderSSRC: sender, bitrate: bitrate, checkedSSRCs: ssrcs))
        case (MediaConstants.RTCP.typeAPP, _):
            // RFC 3550 §6.7: SSRC, a 4-octet ASCII name, then data in whole 32-bit words.
            guard body.count >= 8, body.count % 4 == 0 else { throw .malformed("APP length must cover SSRC, name and whole data words") }
            let ssrc = try r.mediaRead32("APP")
            let name = Array(try r.mediaBytes(4, "APP"))
            guard name.allSatisfy({ $0 < 0x80 }) else { throw .malformed("APP name not ASCII") }
            return .app(RTCPApp(checkedSubtype: UInt8(count), ssrc: ssrc, name: name, data: Array(r.readRest())))
        case (MediaConstants.RTCP.typeBYE, _):
            // SC sources, then optionally a length-prefixed reason within the padded body.
            guard body.count >= 4 * count else { throw .malformed("BYE length does not cover its sources") }
            var ssrcs: [UInt32] = []
            for _ in 0..<count { ssrcs.append(try r.mediaRead32("BYE")) }
            if !r.isAtEnd {
                let reason = Int(try r.mediaRead8("BYE"))
                guard reason <= r.remaining else { throw .malformed("BYE reason longer than packet") }
            }
            return .bye(RTCPBye(checkedSSRCs: ssrcs))
        default:
            return nil
        }
    }

    /// RFC 3550 §6.4.1 report block: SSRC, fraction lost (8) + cumulative lost (24),
    /// extended highest sequence, jitter, LSR, DLSR.
    private static func parseBlocks(_ r: inout ByteReader, _ count: Int) throws(MediaError) -> [RTCPReportBlock] {
        var blocks: [RTCPReportBlock] = []
        for _ in 0..<count {
            let ssrc = try r.mediaRead32("report block")
            let lost = try r.mediaRead32("report block")
            blocks.append(RTCPReportBlock(
                ssrc: ssrc, fractionLost: UInt8(lost >> 24),
                cumulativeLost: Int32(bitPattern: lost << 8) >> 8,
                extendedHighestSequence: try r.mediaRead32("report block"), jitter: try r.mediaRead32("report block"),
                lastSenderReport: try r.mediaRead32("report block"),
                delaySinceLastSenderReport: try r.mediaRead32("report block")))
        }
        return blocks
    }

    /// A compound packet: the packets one after another.
    public static func serializeCompound(_ packets: [RTCPPacket]) -> [UInt8] {
        packets.flatMap { $0.serialized() }
    }

    public func serialized() -> [UInt8] {
        var w = ByteWriter()
        let count: Int, type: UInt8
        switch self {
        case let .senderReport(sr):
            (count, type) = (sr.reportBlocks.count, MediaConstants.RTCP.typeSR)
            w.write(sr.ssrc); w.write(sr.ntpTimestamp); w.write(sr.rtpTimestamp)
            w.write(sr.packetCount); w.write(sr.octetCount)
            Self.write(sr.reportBlocks, to: &w)
        case let .receiverReport(rr):
            (count, type) = (rr.reportBlocks.count, MediaConstants.RTCP.typeRR)
            w.write(rr.ssrc)
            Self.write(rr.reportBlocks, to: &w)
        case let .nack(nack):
            (count, type) = (Int(MediaConstants.RTCP.formatGenericNACK), MediaConstants.RTCP.typeRTPFB)
            w.write(nack.senderSSRC); w.write(nack.mediaSSRC)
            for entry in nack.entries { w.write(entry.packetID); w.write(entry.lostBitmask) }
        case let .pli(pli):
            (count, type) = (Int(MediaConstants.RTCP.formatPLI), MediaConstants.RTCP.typePSFB)
            w.write(pli.senderSSRC); w.write(pli.mediaSSRC)
        case let .app(app):
            (count, type) = (Int(app.subtype), MediaConstants.RTCP.typeAPP)
            w.write(app.ssrc); w.write(bytes: app.name); w.write(bytes: app.data)
        case let .bye(bye):
            (count, type) = (bye.ssrcs.count, MediaConstants.RTCP.typeBYE)
            for ssrc in bye.ssrcs { w.write(ssrc) }
        case let .fir(fir):
            (count, type) = (Int(MediaConstants.RTCP.formatFIR), MediaConstants.RTCP.typePSFB)
            w.write(fir.senderSSRC); w.write(UInt32(0))
            for entry in fir.entries { w.write(entry.ssrc); w.write(entry.sequence); w.write(bytes: [0, 0, 0]) }
        case let .remb(remb):
            (count, type) = (Int(MediaConstants.RTCP.formatAFB), MediaConstants.RTCP.typePSFB)
            w.write(remb.senderSSRC); w.write(UInt32(0)); w.write(bytes: Array("REMB".utf8))
            var (mantissa, exponent) = (remb.bitrate, UInt64(0))
            while mantissa > 0x3FFFF { mantissa >>= 1; exponent += 1 }
            w.write(UInt32(remb.ssrcs.count) << 24 | UInt32(exponent) << 18 | UInt32(mantissa))
            for ssrc in remb.ssrcs { w.write(ssrc) }
        }
        var out: [UInt8] = [2 << 6 | UInt8(count), type]
        let words = UInt16(w.count / 4)
        out += [UInt8(words >> 8), UInt8(words & 0xFF)]
        return out + w.bytes
    }

    private static func write(_ blocks: [RTCPReportBlock], to w: inout ByteWriter) {
        for b in blocks {
            let lost = UInt32(bitPattern: min(max(b.cumulativeLost, -0x80_0000), 0x7F_FFFF)) & 0xFF_FFFF
            w.write(b.ssrc); w.write(UInt32(b.fractionLost) << 24 | lost)
            w.write(b.extendedHighestSequence); w.write(b.jitter)
            w.write(b.lastSenderReport); w.write(b.delaySinceLastSenderReport)
        }
    }
}
