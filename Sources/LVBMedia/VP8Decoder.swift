import CVPX

/// A VP8 decoder (libvpx); owns one `vpx_codec_ctx_t`.
public final class VP8Decoder {
    private let ctx: UnsafeMutablePointer<vpx_codec_ctx_t>

    public init() throws(MediaError) {
        let ctx = UnsafeMutablePointer<vpx_codec_ctx_t>.allocate(capacity: 1)
        ctx.initialize(to: vpx_codec_ctx_t())
        var cfg = vpx_codec_dec_cfg_t(threads: 1, w: 0, h: 0)
        let err = lvb_vpx_dec_init(ctx, &cfg, 0)
        guard err == VPX_CODEC_OK else {
            let message = VP8Encoder.message(ctx, err, "vpx_codec_dec_init")
            ctx.deallocate()
            throw .codec(message)
        }
        self.ctx = ctx
    }

    deinit {
        vpx_codec_destroy(ctx)
        ctx.deallocate()
    }

    /// Decodes one compressed frame. Returns nil when the frame produced no
    /// picture; throws `.codec` for data libvpx rejects.
    /// RFC 6386 §9.1: a keyframe states its size in its first 10 bytes.
    /// libvpx allocates for whatever size a stream claims (up to 16383²)
    /// before we could refuse the picture, so a hostile sender could exhaust
    /// memory: refuse oversized keyframes before libvpx sees them.
    static func checkKeyframeSize(_ data: [UInt8]) throws(MediaError) {
        guard data[0] & 1 == 0 else { return }  // interframes keep the keyframe's size
        guard data.count >= 10 else { throw .truncated("VP8 keyframe header") }
        guard data[3] == 0x9D, data[4] == 0x01, data[5] == 0x2A else { throw .malformed("VP8 keyframe start code") }
        let width = (Int(data[6]) | Int(data[7]) << 8) & 0x3FFF
        let height = (Int(data[8]) | Int(data[9]) << 8) & 0x3FFF
        guard I420Frame.sizeRange.contains(width), I420Frame.sizeRange.contains(height) else {
            throw .malformed("VP8 keyframe of \(width)x\(height) is outside \(I420Frame.sizeRange)")
        }
    }

    public func decode(_ data: [UInt8]) throws(MediaError) -> I420Frame? {
        guard !data.isEmpty else { throw .truncated("VP8 frame (0 bytes)") }
        guard data.count <= Int(UInt32.max) else { throw .malformed("VP8 frame over 4 GiB") }
        try Self.checkKeyframeSize(data)
        let err = data.withUnsafeBufferPointer {
            vpx_codec_decode(ctx, $0.baseAddress, UInt32($0.count), nil, 0)
        }
        guard err == VPX_CODEC_OK else { throw .codec(VP8Encoder.message(ctx, err, "vpx_codec_decode")) }

        var result: I420Frame? = nil
        var iter: vpx_codec_iter_t? = nil
        while let img = vpx_codec_get_frame(ctx, &iter) {
            result = try Self.copy(img.pointee)
        }
        return result
    }

    private static func copy(_ img: vpx_image_t) throws(MediaError) -> I420Frame {
        guard img.fmt == VPX_IMG_FMT_I420 else {
            throw .malformed("VP8 picture format \(img.fmt.rawValue), expected I420")
        }
        let w = Int(img.d_w), h = Int(img.d_h)
        // A bitstream may declare up to 16383x16383; the node never handles more than this.
        guard (1...I420Frame.sizeRange.upperBound).contains(w),
              (1...I420Frame.sizeRange.upperBound).contains(h) else {
            throw .malformed("VP8 picture size \(w)x\(h) outside 1...\(I420Frame.sizeRange.upperBound)")
        }
        guard let py = img.planes.0, let pu = img.planes.1, let pv = img.planes.2 else {
            throw .codec("vpx_codec_get_frame returned a picture without planes")
        }
        let cw = (w + 1) / 2, ch = (h + 1) / 2
        return I420Frame(uncheckedWidth: w, height: h,
                         y: plane(from: py, stride: Int(img.stride.0), width: w, height: h),
                         u: plane(from: pu, stride: Int(img.stride.1), width: cw, height: ch),
                         v: plane(from: pv, stride: Int(img.stride.2), width: cw, height: ch))
    }

    /// One plane, tightly packed, written once: no zero fill first (at 640x360,
    /// 30 fps that fill was about 10 MB/s of memset for nothing).
    private static func plane(from src: UnsafeMutablePointer<UInt8>, stride: Int, width: Int, height: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: width * height) { out, count in
            if let base = out.baseAddress {
                for row in 0..<height {
                    (base + row * width).initialize(from: src + row * stride, count: width)
                }
            }
            count = width * height
        }
    }
}
