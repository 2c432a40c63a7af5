#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A moving test pattern whose frame number and capture time survive
/// compression: colour bars, a box that moves with the frame number, a
/// barcode strip at the top (the frame number) and, when given, one at the
/// bottom (the capture time in milliseconds, modulo 65536). The bottom strip
/// spans the middle half of the width only, so it survives a centre crop to
/// half the width: a PK's side-by-side halves show each host's whole.
public struct SyntheticVideo: Sendable {
    public let width: Int
    public let height: Int
    public let look: SyntheticLook

    /// Barcode layout: start bits 1,0 then 16 data bits (MSB first), an even
    /// parity bit and a stop bit 0, as cells of equal width in the top rows.
    static let barcodeCells = 20
    static let barcodeRows = 16
    static let dataBits = 16
    static let black: UInt8 = 16, white: UInt8 = 235

    /// The 75 % BT.601 colour bars (white, yellow, cyan, green, magenta, red, blue, black) as Y, U, V.
    static let bars: [(UInt8, UInt8, UInt8)] = [
        (180, 128, 128), (162, 44, 142), (131, 156, 44), (112, 72, 58),
        (84, 184, 198), (65, 100, 212), (35, 212, 114), (16, 128, 128),
    ]

    public init(width: Int, height: Int, look: SyntheticLook = .host) throws(MediaError) {
        _ = try I420Frame(width: width, height: height)  // same size rules as a frame
        self.width = width
        self.height = height
        self.look = look
    }

    /// The bars left to right: the host's in the usual order, a guest's reversed.
    private var palette: [(UInt8, UInt8, UInt8)] { look == .host ? Self.bars : Self.bars.reversed() }

    /// Frame `number` of the pattern; the top barcode carries `number` modulo
    /// 65536, the bottom one `captureMilliseconds` modulo 65536 when given.
    public func frame(number: Int, captureMilliseconds: UInt64? = nil) -> I420Frame {
        var f = I420Frame(uncheckedWidth: width, height: height)
        let cw = f.chromaStride
        let bars = palette
        // Colour bars.
        for row in 0..<height {
            for x in 0..<width { f.y[row * width + x] = bars[x * 8 / width].0 }
        }
        for row in 0..<f.chromaHeight {
            for x in 0..<cw {
                let bar = bars[min(7, x * 2 * 8 / width)]
                f.u[row * cw + x] = bar.1
                f.v[row * cw + x] = bar.2
            }
        }
        // Moving box, on even coordinates so it maps exactly onto chroma.
        let top = Self.barcodeRows
        let box = max(2, min(width, height - top) / 8) & ~1
        let spanX = max(1, width - box), spanY = max(1, height - 2 * top - box)  // clear of both strips
        let bx = (number * 6 % spanX) & ~1
        let by = (top + number * 4 % spanY) & ~1
        fill(&f, x: bx, y: max(top, by), w: box, h: box, yuv: look == .host ? (235, 90, 240) : (170, 166, 16))
        drawBarcode(&f, value: number, y: 0, x: 0, span: width)
        if let ms = captureMilliseconds, height >= 3 * top {
            let (x, span) = Self.captureSpan(width)
            drawBarcode(&f, value: Int(ms & 0xFFFF), y: (height - top) & ~1, x: x, span: span)
        }
        return f
    }

    /// Where the capture-time strip lies across a `width`-wide picture: its middle half.
    static func captureSpan(_ width: Int) -> (x: Int, span: Int) { ((width / 4) & ~1, (width / 2) & ~1) }

    private func drawBarcode(_ f: inout I420Frame, value: Int, y: Int, x: Int, span: Int) {
        let cell = span / Self.barcodeCells
        guard cell >= 2, height >= y + Self.barcodeRows else { return }
        fill(&f, x: x, y: y, w: span, h: Self.barcodeRows, yuv: (Self.black, 128, 128))
        for (i, bit) in Self.barcodeBits(value).enumerated() where bit {
            fill(&f, x: x + i * cell, y: y, w: cell, h: Self.barcodeRows, yuv: (Self.white, 128, 128))
        }
    }

    /// Reads back the capture time (ms modulo 65536) that `frame(number:captureMilliseconds:)` drew.
    public static func readCaptureMilliseconds(_ frame: I420Frame) -> Int? {
        let (x, span) = captureSpan(frame.width)
        return readCaptureMilliseconds(frame, x: x, span: span)
    }

    /// The same, from a strip drawn across `span` columns from `x` (the
    /// whole width of one half of a PK's picture, where a host's pattern
    /// shows centre-cropped).
    public static func readCaptureMilliseconds(_ frame: I420Frame, x: Int, span: Int) -> Int? {
        guard frame.height >= 3 * barcodeRows, x >= 0, span > 0, x + span <= frame.width else { return nil }
        return readBarcode(frame, y: (frame.height - barcodeRows) & ~1, x: x, span: span)
    }

    /// Reads back the number `frame(number:)` drew, after a lossy round trip;
    /// nil when the strip is missing, unclear, or fails its parity check.
    public static func readFrameNumber(_ frame: I420Frame) -> Int? { readBarcode(frame, y: 0, x: 0, span: frame.width) }

    static func readBarcode(_ frame: I420Frame, y: Int, x start: Int, span: Int) -> Int? {
        let cell = span / barcodeCells
        guard cell >= 2, frame.height >= y + barcodeRows else { return nil }
        var bits: [Bool] = []
        for i in 0..<barcodeCells {
            // Sample the cell's middle, away from edges where ringing lives.
            let x0 = start + i * cell + cell / 4, x1 = start + i * cell + cell - cell / 4
            var sum = 0, count = 0
            for row in (barcodeRows / 4)..<(barcodeRows * 3 / 4) {
                for x in x0..<max(x0 + 1, x1) { sum += Int(frame.y[(y + row) * frame.width + x]); count += 1 }
            }
            let mean = sum / count
            if mean > 170 { bits.append(true) } else if mean < 80 { bits.append(false) } else { return nil }
        }
        guard bits == barcodeBits(bits[2..<(2 + dataBits)].reduce(0) { $0 << 1 | ($1 ? 1 : 0) }) else {
            return nil
        }
        return bits[2..<(2 + dataBits)].reduce(0) { $0 << 1 | ($1 ? 1 : 0) }
    }

    static func barcodeBits(_ number: Int) -> [Bool] {
        let value = number & 0xFFFF
        let data = (0..<dataBits).map { value >> (dataBits - 1 - $0) & 1 == 1 }
        let parity = data.filter { $0 }.count % 2 == 1
        return [true, false] + data + [parity, false]
    }

    private func fill(_ f: inout I420Frame, x: Int, y: Int, w: Int, h: Int,
                      yuv: (UInt8, UInt8, UInt8)) {
        let x1 = min(width, x + w), y1 = min(height, y + h)
        guard x < x1, y < y1 else { return }
        for row in y..<y1 { for col in x..<x1 { f.y[row * width + col] = yuv.0 } }
        let cw = f.chromaStride
        for row in (y / 2)..<((y1 + 1) / 2) {
            for col in (x / 2)..<((x1 + 1) / 2) {
                f.u[row * cw + col] = yuv.1
                f.v[row * cw + col] = yuv.2
            }
        }
    }
}

/// Which test pattern and tone: the host's, or a co-host's (reversed bars, a
/// green box, 660 Hz with a 1.5 kHz beep), so a person tells them apart in a mix.
public enum SyntheticLook: Sendable {
    case host, guest
}

/// A test tone: 440 Hz with a 50 ms 1 kHz beep at the start of each second
/// (a guest's: 660 Hz and 1.5 kHz), delivered in 20 ms frames of interleaved Int16.
public struct SyntheticAudio: Sendable {
    public let sampleRate: Int
    public let channels: Int
    /// The tone and the beep, in Hz.
    public let tone: Double
    public let beep: Double
    /// Samples per channel emitted so far.
    public private(set) var position = 0

    public init(sampleRate: Int = 48000, channels: Int = 1, look: SyntheticLook = .host) throws(MediaError) {
        guard sampleRate >= 8000, sampleRate % 50 == 0, sampleRate <= 192_000 else {
            throw .invalidParameter("sample rate \(sampleRate) Hz: use 8000...192000, a multiple of 50")
        }
        guard (1...8).contains(channels) else {
            throw .invalidParameter("channel count \(channels): use 1...8")
        }
        self.sampleRate = sampleRate
        self.channels = channels
        (tone, beep) = look == .host ? (440, 1000) : (660, 1500)
    }

    public mutating func next20ms() -> [Int16] {
        let n = sampleRate / 50
        var out = [Int16](repeating: 0, count: n * channels)
        let beepLength = sampleRate / 20
        for i in 0..<n {
            let s = position + i
            let t = Double(s) / Double(sampleRate)
            let inBeep = s % sampleRate < beepLength
            let value = 0.3 * sin(2 * .pi * (inBeep ? beep : tone) * t)
            let sample = Int16(value * 32767)
            for c in 0..<channels { out[i * channels + c] = sample }
        }
        position += n
        return out
    }
}
