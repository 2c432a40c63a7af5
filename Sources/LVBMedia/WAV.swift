#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// RIFF/WAVE: "RIFF" size:LE32 "WAVE", then chunks of id:4 size:LE32 body (padded to
// an even length). "fmt " (WAVEFORMATEX, and WAVEFORMATEXTENSIBLE when the format
// code is 0xFFFE) must come before "data". All fields are little-endian.

/// Reads 48 kHz 16-bit PCM from a WAV file or, for "-", stdin, as mono blocks.
public final class WAVReader {
    static let supportedHint =
        "use 48000 Hz 16-bit PCM mono or stereo (ffmpeg -i IN -ar 48000 -ac 1 -c:a pcm_s16le OUT.wav)"
    /// The tail of KSDATAFORMAT_SUBTYPE_PCM (00000001-0000-0010-8000-00aa00389b71) after its LE16 format code.
    static let pcmSubformatTail: [UInt8] = [0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xAA, 0, 0x38, 0x9B, 0x71]
    /// Longest "fmt " chunk accepted (WAVEFORMATEXTENSIBLE is 40 bytes).
    static let maxFormatChunk: UInt32 = 1024

    /// Channels in the file; `read` returns mono either way.
    public let channels: Int
    public let sampleRate = 48000
    private let input: MediaInputFile
    private let loop: Bool
    private let dataStart: Int64
    /// Bytes in the data chunk; nil when it runs to the end of the stream (size 0 or 0xFFFFFFFF).
    private let dataSize: Int64?
    private var dataRead: Int64 = 0
    private var ended = false
    private var block: [UInt8] = []

    /// Opens `path` ("-" = stdin) and parses the header up to the data chunk; with `loop`,
    /// a regular file starts over at its first sample when it ends (stdin never loops).
    public init(path: String, loop: Bool = false) throws(MediaError) {
        let input = try MediaInputFile(path: path)
        let name = input.name
        let riff = try input.readBytes(12)
        guard riff.count == 12, riff[0..<4].elementsEqual("RIFF".utf8), riff[8..<12].elementsEqual("WAVE".utf8) else {
            throw .file("\(name): not a WAV (RIFF/WAVE) file; convert with "
                + "ffmpeg -i IN -ar 48000 -ac 1 -c:a pcm_s16le OUT.wav")
        }
        var channels: Int?
        while true {
            let header = try input.readBytes(8)
            guard header.count == 8 else { throw .file("\(name): WAV file has no data chunk") }
            let size = Self.le32(header, 4)
            switch String(decoding: header[0..<4], as: UTF8.self) {
            case "fmt ":
                guard size >= 16, size <= Self.maxFormatChunk else {
                    throw .file("\(name): WAV fmt chunk of \(size) bytes is malformed")
                }
                let body = try input.readBytes(Int(size))
                guard body.count == Int(size), try input.skip(Int64(size & 1)) else {
                    throw .file("\(name): WAV file ends inside its fmt chunk")
                }
                channels = try Self.checkFormat(body, name: name)
            case "data":
                guard let channels else { throw .file("\(name): WAV data chunk comes before its fmt chunk") }
                self.channels = channels
                dataSize = size == 0 || size == 0xFFFF_FFFF ? nil : Int64(size)
                dataStart = input.position
                self.input = input
                self.loop = loop && input.isRegularFile
                return
            default:
                guard try input.skip(Int64(size) + Int64(size & 1)) else {
                    throw .file("\(name): WAV file has no data chunk")
                }
            }
        }
    }

    /// WAVEFORMATEX: format:LE16 channels:LE16 rate:LE32 byteRate:LE32 blockAlign:LE16
    /// bits:LE16 [cbSize:LE16 validBits:LE16 channelMask:LE32 subFormat:GUID].
    private static func checkFormat(_ fmt: [UInt8], name: String) throws(MediaError) -> Int {
        let code = le16(fmt, 0), channels = Int(le16(fmt, 2)), rate = le32(fmt, 4), bits = le16(fmt, 14)
        var pcm = code == 1
        if code == 0xFFFE {
            guard fmt.count >= 40 else { throw .file("\(name): WAV extensible fmt chunk is shorter than 40 bytes") }
            pcm = le16(fmt, 24) == 1 && fmt[26..<40].elementsEqual(pcmSubformatTail)
        }
        var unsupported: [String] = []
        if rate != 48000 { unsupported.append("\(rate) Hz") }
        if bits != 16 { unsupported.append("\(bits)-bit") }
        if !(1...2).contains(channels) { unsupported.append("\(channels)-channel") }
        if !pcm {
            let names: [UInt16: String] = [3: "float", 6: "A-law", 7: "mu-law", 0xFFFE: "non-PCM extensible"]
            unsupported.append(names[code] ?? "format 0x\(String(code, radix: 16))")
        }
        guard unsupported.isEmpty else {
            throw .file("\(name): \(unsupported.joined(separator: " ")) audio is not supported; \(supportedHint)")
        }
        return channels
    }

    /// Exactly `n` mono samples (stereo is averaged); nil at the end when not looping.
    /// When looping, the data wraps to its start; otherwise a final short block is
    /// zero-padded once.
    public func read(samplesPerChannel n: Int) throws(MediaError) -> [Int16]? {
        guard (1...480_000).contains(n) else {
            throw .invalidParameter("WAV block of \(n) samples: use 1...480000")
        }
        guard !ended else { return nil }
        let need = n * channels * 2
        if block.count != need { block = [UInt8](repeating: 0, count: need) }
        var got = try readData(from: 0)
        while got < need, loop {
            try input.seek(to: dataStart)
            dataRead = 0
            let more = try readData(from: got)
            if more == 0 { break }  // an empty data chunk: nothing to loop
            got += more
        }
        if got == 0 {
            ended = true
            return nil
        }
        if got < need {
            for i in got..<need { block[i] = 0 }
            ended = true
        }
        var out = [Int16](repeating: 0, count: n)
        if channels == 1 {
            for i in 0..<n { out[i] = Int16(bitPattern: Self.le16(block, 2 * i)) }
        } else {
            for i in 0..<n {
                let l = Int32(Int16(bitPattern: Self.le16(block, 4 * i)))
                let r = Int32(Int16(bitPattern: Self.le16(block, 4 * i + 2)))
                out[i] = Int16((l + r) / 2)
            }
        }
        return out
    }

    private func readData(from offset: Int) throws(MediaError) -> Int {
        var want = block.count - offset
        if let dataSize { want = Int(min(Int64(want), dataSize - dataRead)) }
        guard want > 0 else { return 0 }
        let got = try input.read(into: &block, from: offset, count: want)
        dataRead += Int64(got)
        return got
    }

    static func le16(_ b: [UInt8], _ i: Int) -> UInt16 { UInt16(b[i]) | UInt16(b[i + 1]) << 8 }
    static func le32(_ b: [UInt8], _ i: Int) -> UInt32 {
        UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
    }
}

/// Writes 16-bit PCM as a WAV file or, for "-", stdout.
public final class WAVWriter {
    public let sampleRate: Int
    public let channels: Int
    private let output: MediaOutputFile
    private var dataBytes: Int64 = 0

    /// Creates `path` ("-" = stdout) and writes the 44-byte header. Its sizes start as
    /// 0xFFFFFFFF ("until the end", which ffmpeg accepts), so a file cut short by a
    /// kill still plays; `close` patches them when the output is seekable.
    public init(path: String, sampleRate: Int = 48000, channels: Int = 1) throws(MediaError) {
        guard (8000...192_000).contains(sampleRate) else {
            throw .invalidParameter("WAV sample rate \(sampleRate) Hz: use 8000...192000")
        }
        guard (1...8).contains(channels) else { throw .invalidParameter("WAV channel count \(channels): use 1...8") }
        self.sampleRate = sampleRate
        self.channels = channels
        output = try MediaOutputFile(path: path)
        var h: [UInt8] = []
        h += Array("RIFF".utf8); h += Self.le32(0xFFFF_FFFF); h += Array("WAVEfmt ".utf8)
        h += Self.le32(16)
        h += Self.le16(1)  // PCM
        h += Self.le16(UInt16(channels))
        h += Self.le32(UInt32(sampleRate))
        h += Self.le32(UInt32(sampleRate * channels * 2))  // byte rate
        h += Self.le16(UInt16(channels * 2))  // block align
        h += Self.le16(16)  // bits per sample
        h += Array("data".utf8); h += Self.le32(0xFFFF_FFFF)
        try output.write(h)
    }

    /// Appends interleaved samples (a whole number of frames of `channels` samples).
    public func write(_ samples: [Int16]) throws(MediaError) {
        guard samples.count % channels == 0 else {
            throw .invalidParameter("\(samples.count) samples is not a whole number of \(channels)-channel frames")
        }
        var bytes = [UInt8](repeating: 0, count: samples.count * 2)
        for (i, s) in samples.enumerated() {
            let u = UInt16(bitPattern: s)
            bytes[2 * i] = UInt8(truncatingIfNeeded: u)
            bytes[2 * i + 1] = UInt8(truncatingIfNeeded: u >> 8)
        }
        try output.write(bytes)
        dataBytes += Int64(bytes.count)
    }

    /// Patches the RIFF and data sizes (seekable outputs only) and closes the file. A failed
    /// patch leaves the "until the end" sizes, which readers still accept.
    public func close() {
        if output.isSeekable, dataBytes + 36 <= Int64(UInt32.max) {
            try? output.patch(Self.le32(UInt32(dataBytes + 36)), at: 4)
            try? output.patch(Self.le32(UInt32(dataBytes)), at: 40)
        }
        output.close()
    }

    deinit { close() }

    private static func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
    private static func le32(_ v: UInt32) -> [UInt8] {
        [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)]
    }
}
