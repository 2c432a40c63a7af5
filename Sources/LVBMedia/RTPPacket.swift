import LVBCore

/// One RTP packet (RFC 3550 §5.1) with RFC 8285 header extensions: one-byte
/// form, or two-byte form when an element needs it (the media seal).
///
/// RFC 3550 §5.1:
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |V=2|P|X|  CC   |M|     PT      |       sequence number         |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |                           timestamp                           |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |           synchronization source (SSRC) identifier            |
/// +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
/// |            contributing source (CSRC) identifiers             |
/// |                             ....                              |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// ```
/// The payload follows; with P set, its last octet counts the padding octets
/// at the end (itself included), which are not part of the payload.
public struct RTPPacket: Equatable, Sendable {
    /// The capture-time extension's id (see `MediaConstants.RTP.captureTimeExtensionID`).
    public static let captureTimeExtensionID = MediaConstants.RTP.captureTimeExtensionID

    public var marker: Bool
    /// 7-bit payload type (0...127), checked by `init`.
    public private(set) var payloadType: UInt8
    public var sequenceNumber: UInt16
    public var timestamp: UInt32
    public var ssrc: UInt32
    /// At most 15 contributing sources.
    public private(set) var csrcs: [UInt32]
    /// Header extension elements by id: 1...14 with 1...16 bytes go in
    /// one-byte form; any other (id 15...255, 0 or 17...255 bytes) puts the
    /// whole block in two-byte form.
    public private(set) var extensions: [UInt8: [UInt8]]
    public var payload: ArraySlice<UInt8>
    /// Padding octets after the payload, the count octet included; 0 means none
    /// (P bit clear).
    public var paddingLength: UInt8

    /// Fails with `.invalidParameter` for a payload type above 127, more than
    /// 15 CSRCs, or an extension element that no form carries (id 0, over 255 bytes).
    public init(marker: Bool = false, payloadType: UInt8, sequenceNumber: UInt16, timestamp: UInt32,
                ssrc: UInt32, csrcs: [UInt32] = [], extensions: [UInt8: [UInt8]] = [:],
                payload: ArraySlice<UInt8>, paddingLength: UInt8 = 0) throws(MediaError) {
        guard payloadType <= 0x7F else { throw .invalidParameter("RTP payload type \(payloadType) above 127") }
        guard csrcs.count <= MediaConstants.RTP.maxCSRCs else { throw .invalidParameter("\(csrcs.count) CSRCs, at most 15") }
        self.marker = marker
        self.payloadType = payloadType
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.ssrc = ssrc
        self.csrcs = csrcs
        self.extensions = [:]
        self.payload = payload
        self.paddingLength = paddingLength
        for (id, value) in extensions { try setExtension(id: id, value) }
    }

    /// Sets a header extension element: id 1...255 and at most 255 bytes
    /// (RFC 8285 §4.3); ids 1...14 with 1...16 bytes also fit one-byte form (§4.2).
    public mutating func setExtension(id: UInt8, _ value: [UInt8]) throws(MediaError) {
        guard id != 0 else { throw .invalidParameter("extension id 0 is padding") }
        guard value.count <= MediaConstants.RTP.maxTwoByteLength else {
            throw .invalidParameter("extension element of \(value.count) bytes, two-byte form carries at most 255")
        }
        extensions[id] = value
    }

    /// Whether every element fits the one-byte form.
    private var fitsOneByteForm: Bool {
        extensions.allSatisfy { MediaConstants.RTP.extensionIDs.contains($0.key) && MediaConstants.RTP.extensionLengths.contains($0.value.count) }
    }

    public mutating func removeExtension(id: UInt8) { extensions[id] = nil }

    /// The capture-time extension (see `captureTimeExtensionID`), or nil when
    /// absent or not 8 bytes long.
    public var captureTime: UInt64? {
        guard let value = extensions[Self.captureTimeExtensionID], value.count == MediaConstants.RTP.captureTimeLength else { return nil }
        return value.reduce(0) { $0 << 8 | UInt64($1) }
    }

    public mutating func setCaptureTime(_ ntp: UInt64) {
        extensions[Self.captureTimeExtensionID] = (0..<8).map { UInt8(truncatingIfNeeded: ntp >> (56 - 8 * $0)) }
    }

    public static func parse(_ bytes: [UInt8]) throws(MediaError) -> RTPPacket {
        try parse(bytes[...])
    }

    /// Parses one RTP packet; the payload keeps the input's indices.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws(MediaError) -> RTPPacket {
        var r = ByteReader(bytes)
        guard r.remaining >= MediaConstants.RTP.fixedHeaderSize else { throw .truncated("RTP header") }
        let b0 = try r.mediaRead8("RTP header")
        guard b0 >> 6 == MediaConstants.RTP.version else { throw .malformed("RTP version \(b0 >> 6)") }
        let hasPadding = b0 & 0x20 != 0
        let hasExtension = b0 & 0x10 != 0
        let csrcCount = Int(b0 & 0x0F)
        let b1 = try r.mediaRead8("RTP header")
        let sequenceNumber = try r.mediaRead16("RTP header")
        let timestamp = try r.mediaRead32("RTP header")
        let ssrc = try r.mediaRead32("RTP header")

        guard r.remaining >= 4 * csrcCount else { throw .truncated("RTP CSRC list") }
        var csrcs: [UInt32] = []
        for _ in 0..<csrcCount { csrcs.append(try r.mediaRead32("RTP CSRC list")) }

        var extensions: [UInt8: [UInt8]] = [:]
        if hasExtension {
            let profile = try r.mediaRead16("RTP header extension")
            let words = Int(try r.mediaRead16("RTP header extension"))
            let block = try r.mediaBytes(4 * words, "RTP header extension")
            // Other profiles are skipped, as RFC 3550 §5.3.1 allows.
            if profile == MediaConstants.RTP.oneByteProfile {
                extensions = try parseOneByteElements(block)
            } else if profile & 0xFFF0 == MediaConstants.RTP.twoByteProfile {
                extensions = try parseTwoByteElements(block)
            }
        }

        var payload = r.readRest()
        var paddingLength: UInt8 = 0
        if hasPadding {
            guard let count = payload.last else { throw .malformed("RTP padding longer than payload") }
            guard count > 0 else { throw .malformed("RTP padding count 0") }
            guard Int(count) <= payload.count else { throw .malformed("RTP padding longer than payload") }
            payload = payload.dropLast(Int(count))
            paddingLength = count
        }
        var packet = RTPPacket(unchecked: b1 & 0x80 != 0, b1 & 0x7F, sequenceNumber, timestamp, ssrc, csrcs, payload, paddingLength)
        packet.extensions = extensions
        return packet
    }

    /// RFC 8285 §4.2, one-byte form:
    /// ```
    ///  0                   1                   2                   3
    /// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    /// |       0xBE    |    0xDE       |           length=3            |
    /// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    /// |  ID   | L=0   |     data      |  ID   |  L=1  |   data...
    /// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    ///       ...data   |    0 (pad)    |    0 (pad)    |  ID   | L=3   |
    /// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    /// |                          data                                 |
    /// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    /// ```
    /// L is the data length minus one; a byte with id 0 is padding (its L is
    /// ignored); id 15 ends parsing.
    private static func parseOneByteElements(_ block: ArraySlice<UInt8>) throws(MediaError) -> [UInt8: [UInt8]] {
        var elements: [UInt8: [UInt8]] = [:]
        try walkOneByteElements(block) { elements[$0] = Array($1) }
        return elements
    }

    /// Calls `body` with each one-byte-form element's id and data, in order
    /// (`RTPHeader` walks them too, keeping nothing).
    static func walkOneByteElements(_ block: ArraySlice<UInt8>, _ body: (UInt8, ArraySlice<UInt8>) -> Void) throws(MediaError) {
        var r = ByteReader(block)
        while !r.isAtEnd {
            let head = try r.mediaRead8("RTP extension element")
            let id = head >> 4
            // Id 0 is padding: one byte, whatever its length bits say (as libwebrtc reads it).
            if id == 0 { continue }
            if id == MediaConstants.RTP.extensionStopID { break }
            let length = Int(head & 0x0F) + 1
            guard r.remaining >= length else { throw .malformed("RTP extension element longer than its block") }
            body(id, try r.mediaBytes(length, "RTP extension element"))
        }
    }

    /// RFC 8285 §4.3, two-byte form (profile 0x100 then 4 application bits):
    /// each element is an id byte, a length byte (0...255) and the data; a
    /// zero byte between elements is padding.
    private static func parseTwoByteElements(_ block: ArraySlice<UInt8>) throws(MediaError) -> [UInt8: [UInt8]] {
        var elements: [UInt8: [UInt8]] = [:]
        try walkTwoByteElements(block) { elements[$0] = Array($1) }
        return elements
    }

    /// Calls `body` with each two-byte-form element's id and data, in order.
    static func walkTwoByteElements(_ block: ArraySlice<UInt8>, _ body: (UInt8, ArraySlice<UInt8>) -> Void) throws(MediaError) {
        var r = ByteReader(block)
        while !r.isAtEnd {
            let id = try r.mediaRead8("RTP extension element")
            if id == 0 { continue }
            let length = Int(try r.mediaRead8("RTP extension element"))
            guard r.remaining >= length else { throw .malformed("RTP extension element longer than its block") }
            body(id, try r.mediaBytes(length, "RTP extension element"))
        }
    }

    private init(unchecked marker: Bool, _ pt: UInt8, _ seq: UInt16, _ ts: UInt32, _ ssrc: UInt32,
                 _ csrcs: [UInt32], _ payload: ArraySlice<UInt8>, _ padding: UInt8) {
        self.marker = marker
        self.payloadType = pt
        self.sequenceNumber = seq
        self.timestamp = ts
        self.ssrc = ssrc
        self.csrcs = csrcs
        self.extensions = [:]
        self.payload = payload
        self.paddingLength = padding
    }

    /// Bytes of `serialized()`.
    public var serializedLength: Int {
        var n = MediaConstants.RTP.fixedHeaderSize + 4 * csrcs.count + payload.count + Int(paddingLength)
        if !extensions.isEmpty {
            let elementHeader = fitsOneByteForm ? 1 : 2
            let block = extensions.values.reduce(0) { $0 + elementHeader + $1.count }
            n += 4 + (block + 3) / 4 * 4
        }
        return n
    }

    /// The packet on the wire. Extension elements go in id order, in one-byte
    /// form when all fit it, else two-byte form; padding octets are zero.
    public func serialized() -> [UInt8] {
        var w = ByteWriter(capacity: MediaConstants.RTP.fixedHeaderSize + 4 * csrcs.count + payload.count + 32)
        var b0 = MediaConstants.RTP.version << 6 | UInt8(csrcs.count)
        if paddingLength > 0 { b0 |= 0x20 }
        if !extensions.isEmpty { b0 |= 0x10 }
        w.write(b0)
        w.write((marker ? 0x80 : 0) | payloadType)
        w.write(sequenceNumber)
        w.write(timestamp)
        w.write(ssrc)
        for csrc in csrcs { w.write(csrc) }
        if !extensions.isEmpty {
            let oneByte = fitsOneByteForm
            var block: [UInt8] = []
            for id in extensions.keys.sorted() {
                let value = extensions[id] ?? []
                if oneByte {
                    block.append(id << 4 | UInt8(value.count - 1))
                } else {
                    block += [id, UInt8(value.count)]
                }
                block.append(contentsOf: value)
            }
            while block.count % 4 != 0 { block.append(0) }
            w.write(oneByte ? MediaConstants.RTP.oneByteProfile : MediaConstants.RTP.twoByteProfile)
            w.write(UInt16(block.count / 4))
            w.write(bytes: block)
        }
        w.write(bytes: payload)
        if paddingLength > 0 {
            w.writeZeros(Int(paddingLength) - 1)
            w.write(paddingLength)
        }
        return w.bytes
    }
}

/// Reads that report a shortfall as `MediaError.truncated(what)`.
extension ByteReader {
    mutating func mediaRead8(_ what: String) throws(MediaError) -> UInt8 {
        do { return try readUInt8() } catch { throw .truncated(what) }
    }

    mutating func mediaRead16(_ what: String) throws(MediaError) -> UInt16 {
        do { return try readUInt16() } catch { throw .truncated(what) }
    }

    mutating func mediaRead32(_ what: String) throws(MediaError) -> UInt32 {
        do { return try readUInt32() } catch { throw .truncated(what) }
    }

    mutating func mediaRead64(_ what: String) throws(MediaError) -> UInt64 {
        do { return try readUInt64() } catch { throw .truncated(what) }
    }

    mutating func mediaBytes(_ count: Int, _ what: String) throws(MediaError) -> ArraySlice<UInt8> {
        do { return try readBytes(count) } catch { throw .truncated(what) }
    }
}
