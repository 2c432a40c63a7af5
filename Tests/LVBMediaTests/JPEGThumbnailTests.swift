import LVBMedia
import Testing

@Suite("JPEG thumbnails")
struct JPEGThumbnailTests {
    @Test func aThumbnailIsASmallBaselineJPEGOfThePictureKeepingItsAspect() throws {
        let pattern = try SyntheticVideo(width: 640, height: 360)
        let jpeg = try JPEGThumbnail.make(from: pattern.frame(number: 7))
        #expect(jpeg.count <= MediaConstants.maxThumbnailBytes)
        #expect(Array(jpeg.prefix(2)) == [0xFF, 0xD8] && Array(jpeg.suffix(2)) == [0xFF, 0xD9])
        #expect(Self.size(of: jpeg)?.width == 160 && Self.size(of: jpeg)?.height == 90)
        // 4:2:0 YCbCr as the picture was: three components, luma sampled 2×2.
        #expect(Self.components(of: jpeg) == [0x22, 0x11, 0x11])
    }

    @Test func oddSizesAndSmallPicturesAreCoveredWithoutReadingPastThePlanes() throws {
        for (w, h) in [(16, 16), (50, 30), (1280, 720), (176, 144)] {
            let picture = try SyntheticVideo(width: w, height: h).frame(number: 1)
            let jpeg = try JPEGThumbnail.make(from: picture)
            let size = try #require(Self.size(of: jpeg))
            #expect(size.width == min(160, w), "\(w)x\(h)")
            #expect(size.height % 2 == 0 && abs(size.height * w - h * size.width) <= 2 * w, "\(w)x\(h) → \(size)")
        }
    }

    @Test func limitedRangeBecomesJFIFsFullRange() throws {
        var picture = try I420Frame(width: 16, height: 16)
        picture.y[0...5] = [16, 235, 126, 0, 255, 100]
        picture.u[0...1] = [16, 128]
        picture.v[0...1] = [240, 128]
        let full = JPEGThumbnail.fullRange(picture)
        #expect(Array(full.y[0...5]) == [0, 255, 128, 0, 255, 98])
        #expect(Array(full.u[0...1]) == [0, 128] && Array(full.v[0...1]) == [255, 128])
    }

    @Test func aThumbnailThatCannotFitIsRefusedWithTheReason() throws {
        let picture = try SyntheticVideo(width: 640, height: 360).frame(number: 3)
        #expect(throws: MediaError.self) { try JPEGThumbnail.make(from: picture, maxBytes: 100) }
        #expect(throws: MediaError.self) { try JPEGThumbnail.encode(picture, quality: 0) }
    }

    /// The frame size in the JPEG's SOF0 segment.
    static func size(of jpeg: [UInt8]) -> (width: Int, height: Int)? {
        guard let i = sof(jpeg) else { return nil }
        return (Int(jpeg[i + 7]) << 8 | Int(jpeg[i + 8]), Int(jpeg[i + 5]) << 8 | Int(jpeg[i + 6]))
    }

    /// Each component's sampling factors (h << 4 | v) in SOF0.
    static func components(of jpeg: [UInt8]) -> [UInt8] {
        guard let i = sof(jpeg) else { return [] }
        let n = Int(jpeg[i + 9])
        return (0..<n).map { jpeg[i + 10 + 3 * $0 + 1] }
    }

    private static func sof(_ jpeg: [UInt8]) -> Int? {
        var i = 2
        while i + 4 < jpeg.count, jpeg[i] == 0xFF {
            if jpeg[i + 1] == 0xC0 { return i }
            i += 2 + (Int(jpeg[i + 2]) << 8 | Int(jpeg[i + 3]))
        }
        return nil
    }
}
