/// Builds EBML elements (RFC 8794) in memory for the WebM muxer: each element is
/// its ID, its size as a VINT, then its data; masters hold child elements.
struct EBMLBuffer {
    private(set) var bytes: [UInt8] = []

    var count: Int { bytes.count }

    /// RFC 8794 §4.4: an 8-byte VINT with every VINT_DATA bit set means "unknown size".
    static let unknownSize8: [UInt8] = [0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]

    /// RFC 8794 §4: VINT_WIDTH zero bits, the VINT_MARKER bit, then the value big-endian
    /// in 7 × width bits, using the shortest width whose all-ones pattern (reserved) is
    /// not the value. Values from 2^56 − 1 up cannot be written.
    static func vint(_ value: UInt64) -> [UInt8] {
        var width = 1
        while width < 8, value >= (UInt64(1) << (7 * UInt64(width))) - 1 { width += 1 }
        return vint(value, width: width)
    }

    /// `value` as a VINT of exactly `width` bytes (so it can be patched in place later).
    static func vint(_ value: UInt64, width: Int) -> [UInt8] {
        var out = bigEndian(value, width: width)
        out[0] |= 0x80 >> UInt8(width - 1)
        return out
    }

    /// The low `width` bytes of `value`, most significant first.
    static func bigEndian(_ value: UInt64, width: Int) -> [UInt8] {
        (0..<width).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64(width - 1 - $0))) }
    }

    /// RFC 8794 §5: an Element ID keeps its VINT_MARKER, so the ID's bytes go out as
    /// they are (1 to 4 bytes, big-endian).
    mutating func id(_ id: UInt32) {
        let width = id > 0xFF_FFFF ? 4 : id > 0xFFFF ? 3 : id > 0xFF ? 2 : 1
        bytes += Self.bigEndian(UInt64(id), width: width)
    }

    mutating func append(_ raw: [UInt8]) { bytes += raw }

    /// RFC 8794 §7.2: an unsigned integer, big-endian in as few bytes as hold it (at least one).
    mutating func uint(_ id: UInt32, _ value: UInt64) {
        let width = max(1, (64 - value.leadingZeroBitCount + 7) / 8)
        binary(id, Self.bigEndian(value, width: width))
    }

    /// RFC 8794 §7.3: a float, here always the 8-byte IEEE 754 binary64 form, big-endian.
    mutating func float(_ id: UInt32, _ value: Double) { binary(id, Self.float64(value)) }

    static func float64(_ value: Double) -> [UInt8] { bigEndian(value.bitPattern, width: 8) }

    /// RFC 8794 §7.4/§7.5: String (ASCII) and UTF-8 elements are their bytes, no terminator.
    mutating func string(_ id: UInt32, _ value: String) { binary(id, Array(value.utf8)) }

    /// RFC 8794 §7.8: Binary data as is.
    mutating func binary(_ id: UInt32, _ data: [UInt8]) {
        self.id(id)
        bytes += Self.vint(UInt64(data.count))
        bytes += data
    }

    /// RFC 8794 §7.6: a Master element whose data is the children `body` writes.
    mutating func master(_ id: UInt32, _ body: (inout EBMLBuffer) -> Void) {
        var child = EBMLBuffer()
        body(&child)
        binary(id, child.bytes)
    }
}

/// Element IDs of the EBML header (RFC 8794 §11.2) and the Matroska/WebM elements the
/// muxer writes (Matroska specification, "Matroska Schema").
enum MatroskaID {
    static let ebml: UInt32 = 0x1A45_DFA3
    static let ebmlVersion: UInt32 = 0x4286
    static let ebmlReadVersion: UInt32 = 0x42F7
    static let ebmlMaxIDLength: UInt32 = 0x42F2
    static let ebmlMaxSizeLength: UInt32 = 0x42F3
    static let docType: UInt32 = 0x4282
    static let docTypeVersion: UInt32 = 0x4287
    static let docTypeReadVersion: UInt32 = 0x4285

    static let segment: UInt32 = 0x1853_8067
    static let info: UInt32 = 0x1549_A966
    static let timestampScale: UInt32 = 0x2A_D7B1
    static let duration: UInt32 = 0x4489
    static let muxingApp: UInt32 = 0x4D80
    static let writingApp: UInt32 = 0x5741

    static let tracks: UInt32 = 0x1654_AE6B
    static let trackEntry: UInt32 = 0xAE
    static let trackNumber: UInt32 = 0xD7
    static let trackUID: UInt32 = 0x73C5
    static let trackType: UInt32 = 0x83
    static let codecID: UInt32 = 0x86
    static let codecPrivate: UInt32 = 0x63A2
    static let codecDelay: UInt32 = 0x56AA
    static let seekPreRoll: UInt32 = 0x56BB
    static let video: UInt32 = 0xE0
    static let pixelWidth: UInt32 = 0xB0
    static let pixelHeight: UInt32 = 0xBA
    static let audio: UInt32 = 0xE1
    static let samplingFrequency: UInt32 = 0xB5
    static let channels: UInt32 = 0x9F

    static let seekHead: UInt32 = 0x114D_9B74
    static let seek: UInt32 = 0x4DBB
    static let seekID: UInt32 = 0x53AB
    static let seekPosition: UInt32 = 0x53AC
    static let void: UInt32 = 0xEC

    static let cues: UInt32 = 0x1C53_BB6B
    static let cuePoint: UInt32 = 0xBB
    static let cueTime: UInt32 = 0xB3
    static let cueTrackPositions: UInt32 = 0xB7
    static let cueTrack: UInt32 = 0xF7
    static let cueClusterPosition: UInt32 = 0xF1

    static let cluster: UInt32 = 0x1F43_B675
    static let timestamp: UInt32 = 0xE7
    static let simpleBlock: UInt32 = 0xA3
}
