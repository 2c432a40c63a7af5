#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An uncompressed 8-bit 4:2:0 picture with tightly packed planes
/// (luma stride = width, chroma stride = (width + 1) / 2).
public struct I420Frame: Equatable, Sendable {
    /// Smallest and largest edge a caller may ask for.
    public static let sizeRange = 16...4096

    public let width: Int
    public let height: Int
    public var y: [UInt8]
    public var u: [UInt8]
    public var v: [UInt8]

    public var lumaStride: Int { width }
    public var chromaStride: Int { (width + 1) / 2 }
    public var chromaHeight: Int { (height + 1) / 2 }

    /// A mid-grey frame; both sizes must be even and within `sizeRange`.
    public init(width: Int, height: Int) throws(MediaError) {
        guard Self.sizeRange.contains(width), Self.sizeRange.contains(height),
              width % 2 == 0, height % 2 == 0 else {
            throw .invalidParameter(
                "frame size \(width)x\(height): both edges must be even and in \(Self.sizeRange)")
        }
        self.init(uncheckedWidth: width, height: height)
    }

    /// For decoded pictures: planes already filled, sized for `width` x `height`.
    init(uncheckedWidth width: Int, height: Int, y: [UInt8], u: [UInt8], v: [UInt8]) {
        self.width = width
        self.height = height
        self.y = y
        self.u = u
        self.v = v
    }

    /// For decoded pictures, whose size the bitstream chose (odd sizes allowed).
    init(uncheckedWidth width: Int, height: Int) {
        self.width = width
        self.height = height
        let cw = (width + 1) / 2, ch = (height + 1) / 2
        y = [UInt8](repeating: 128, count: width * height)
        u = [UInt8](repeating: 128, count: cw * ch)
        v = [UInt8](repeating: 128, count: cw * ch)
    }

    /// Luma PSNR in dB against `other` (peak 255); `.infinity` when identical,
    /// 0 when the sizes differ.
    public func psnr(to other: I420Frame) -> Double {
        guard width == other.width, height == other.height, !y.isEmpty else { return 0 }
        var sum: UInt64 = 0
        y.withUnsafeBufferPointer { a in
            other.y.withUnsafeBufferPointer { b in
                for i in 0..<a.count {
                    let d = Int(a[i]) - Int(b[i])
                    sum &+= UInt64(d * d)
                }
            }
        }
        if sum == 0 { return .infinity }
        let mse = Double(sum) / Double(y.count)
        return 10 * log10(255.0 * 255.0 / mse)
    }
}
