import CJPEG
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A small JPEG of a picture, for a room list (lvbnode-protocol(7),
/// RENDEZVOUS, thumbnails): scaled with libyuv to `MediaConstants.thumbnailWidth`
/// wide keeping the aspect, compressed with libjpeg from the I420 planes as
/// raw YCbCr (no RGB round trip), at a lower quality when it would not fit.
public enum JPEGThumbnail {
    /// The thumbnail of `picture`, at most `maxBytes`; throws when even the
    /// lowest quality does not fit or libjpeg fails (with its message).
    public static func make(from picture: I420Frame, width: Int = MediaConstants.thumbnailWidth,
                            maxBytes: Int = MediaConstants.maxThumbnailBytes) throws(MediaError) -> [UInt8] {
        let size = thumbnailSize(of: picture, width: width)
        let small = fullRange(try picture.scaled(width: size.width, height: size.height))
        for quality in MediaConstants.thumbnailQualities {
            let jpeg = try encode(small, quality: quality)
            if jpeg.count <= maxBytes { return jpeg }
        }
        throw .codec("thumbnail over \(maxBytes) bytes even at quality \(MediaConstants.thumbnailQualities.last ?? 0)")
    }

    /// `width` wide (never wider than the picture) and as tall as keeps the
    /// aspect, both even and at least the smallest frame edge.
    public static func thumbnailSize(of picture: I420Frame, width: Int) -> (width: Int, height: Int) {
        let w = max(I420Frame.sizeRange.lowerBound, min(width, picture.width)) & ~1
        let h = (picture.height * w + picture.width / 2) / max(1, picture.width)
        return (w, max(I420Frame.sizeRange.lowerBound, h + (h & 1)))
    }

    /// The node's pictures are BT.601 limited range (Y′ 16–235, Cb and Cr
    /// 16–240) and JFIF's are full range (0–255, ITU-T T.871 §7): stretched,
    /// so that black is 0 and white 255 in any JPEG viewer.
    public static func fullRange(_ picture: I420Frame) -> I420Frame {
        var out = picture
        out.y = picture.y.map { lumaTable[Int($0)] }
        out.u = picture.u.map { chromaTable[Int($0)] }
        out.v = picture.v.map { chromaTable[Int($0)] }
        return out
    }

    private static let lumaTable: [UInt8] = (0..<256).map { UInt8(clamping: Int((Double($0 - 16) * 255 / 219).rounded())) }
    private static let chromaTable: [UInt8] = (0..<256).map { UInt8(clamping: Int((Double($0 - 128) * 255 / 224).rounded()) + 128) }

    /// `picture` as a baseline JFIF JPEG at `quality` (1–100), its planes taken as they are.
    public static func encode(_ picture: I420Frame, quality: Int) throws(MediaError) -> [UInt8] {
        var out: UnsafeMutablePointer<UInt8>?
        var outSize: UInt = 0
        var message = [CChar](repeating: 0, count: Int(JMSG_LENGTH_MAX))
        let result = picture.y.withUnsafeBufferPointer { y in picture.u.withUnsafeBufferPointer { u in picture.v.withUnsafeBufferPointer { v in
            message.withUnsafeMutableBufferPointer { m in
                lvb_jpeg_encode_i420(y.baseAddress, Int32(picture.lumaStride), u.baseAddress, v.baseAddress, Int32(picture.chromaStride),
                                     Int32(picture.width), Int32(picture.height), Int32(quality), &out, &outSize, m.baseAddress)
            }
        } } }
        defer { free(out) }
        guard result == 0, let out else {
            throw .codec("libjpeg: " + String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return Array(UnsafeBufferPointer(start: out, count: Int(outSize)))
    }
}
