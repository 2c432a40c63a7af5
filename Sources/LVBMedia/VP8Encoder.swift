import CVPX

/// One compressed VP8 frame as produced by `VP8Encoder`.
public struct EncodedFrame: Equatable, Sendable {
    public var data: [UInt8]
    public var isKeyframe: Bool
    public var pts: Int64

    public init(data: [UInt8], isKeyframe: Bool, pts: Int64) {
        self.data = data
        self.isKeyframe = isKeyframe
        self.pts = pts
    }
}

/// A real-time, constant-bitrate VP8 encoder (libvpx); owns one `vpx_codec_ctx_t`.
public final class VP8Encoder {
    public let width: Int
    public let height: Int
    private let ctx: UnsafeMutablePointer<vpx_codec_ctx_t>
    private let config: UnsafeMutablePointer<vpx_codec_enc_cfg_t>
    /// Header only; `encode` points its planes at the caller's buffers (no copy).
    private let image: UnsafeMutablePointer<vpx_image_t>

    /// - Parameter keyframeInterval: the longest gap between keyframes, in frames.
    public init(width: Int, height: Int, fps: Int, bitrateKbps: Int,
                keyframeInterval: Int) throws(MediaError) {
        guard I420Frame.sizeRange.contains(width), I420Frame.sizeRange.contains(height),
              width % 2 == 0, height % 2 == 0 else {
            throw .invalidParameter(
                "VP8 size \(width)x\(height): both edges must be even and in \(I420Frame.sizeRange)")
        }
        guard (1...240).contains(fps) else {
            throw .invalidParameter("VP8 frame rate \(fps): use 1...240 fps")
        }
        guard (1...100_000).contains(bitrateKbps) else {
            throw .invalidParameter("VP8 bitrate \(bitrateKbps) kbit/s: use 1...100000")
        }
        guard keyframeInterval >= 1 else {
            throw .invalidParameter("VP8 keyframe interval \(keyframeInterval): use at least 1 frame")
        }

        let config = UnsafeMutablePointer<vpx_codec_enc_cfg_t>.allocate(capacity: 1)
        config.initialize(to: vpx_codec_enc_cfg_t())
        var err = lvb_vpx_enc_config_default(config)
        guard err == VPX_CODEC_OK else {
            config.deallocate()
            throw .codec("vpx_codec_enc_config_default: \(Self.string(err))")
        }
        config.pointee.g_w = UInt32(width)
        config.pointee.g_h = UInt32(height)
        config.pointee.g_timebase = vpx_rational(num: 1, den: Int32(fps))
        config.pointee.g_threads = 1
        config.pointee.g_pass = VPX_RC_ONE_PASS
        config.pointee.g_lag_in_frames = 0
        config.pointee.g_error_resilient = vpx_codec_er_flags_t(VPX_ERROR_RESILIENT_DEFAULT)
        config.pointee.rc_end_usage = VPX_CBR
        config.pointee.rc_target_bitrate = UInt32(bitrateKbps)
        config.pointee.rc_min_quantizer = 2
        config.pointee.rc_max_quantizer = 56
        config.pointee.rc_undershoot_pct = 100
        config.pointee.rc_overshoot_pct = 15
        config.pointee.rc_buf_initial_sz = 500
        config.pointee.rc_buf_optimal_sz = 600
        config.pointee.rc_buf_sz = 1000
        config.pointee.rc_dropframe_thresh = 0
        config.pointee.kf_mode = VPX_KF_AUTO
        config.pointee.kf_min_dist = 0
        config.pointee.kf_max_dist = UInt32(keyframeInterval)

        let ctx = UnsafeMutablePointer<vpx_codec_ctx_t>.allocate(capacity: 1)
        ctx.initialize(to: vpx_codec_ctx_t())
        err = lvb_vpx_enc_init(ctx, config, 0)
        guard err == VPX_CODEC_OK else {
            let message = Self.message(ctx, err, "vpx_codec_enc_init")
            ctx.deallocate()
            config.deallocate()
            throw .codec(message)
        }
        // -6: fastest setting that still keeps quality acceptable for live video.
        // Max intra bitrate caps keyframe size so one keyframe does not stall the link.
        let controls: [(String, vpx_codec_err_t)] = [
            ("VP8E_SET_CPUUSED", lvb_vpx_set_cpuused(ctx, -6)),
            ("VP8E_SET_STATIC_THRESHOLD", lvb_vpx_set_static_threshold(ctx, 1)),
            ("VP8E_SET_NOISE_SENSITIVITY", lvb_vpx_set_noise_sensitivity(ctx, 0)),
            ("VP8E_SET_MAX_INTRA_BITRATE_PCT", lvb_vpx_set_max_intra_bitrate_pct(ctx, 900)),
        ]
        if let (name, failed) = controls.first(where: { $0.1 != VPX_CODEC_OK }) {
            let message = Self.message(ctx, failed, name)
            vpx_codec_destroy(ctx)
            ctx.deallocate()
            config.deallocate()
            throw .codec(message)
        }

        self.width = width
        self.height = height
        self.ctx = ctx
        self.config = config
        self.image = UnsafeMutablePointer<vpx_image_t>.allocate(capacity: 1)
        self.image.initialize(to: vpx_image_t())
    }

    deinit {
        vpx_codec_destroy(ctx)
        ctx.deallocate()
        config.deallocate()
        image.deallocate()
    }

    /// Encodes one frame; returns the frames libvpx emitted (normally one,
    /// none when rate control drops the frame).
    public func encode(_ frame: I420Frame, pts: Int64,
                       forceKeyframe: Bool = false) throws(MediaError) -> [EncodedFrame] {
        guard frame.width == width, frame.height == height else {
            throw .invalidParameter(
                "frame is \(frame.width)x\(frame.height), encoder expects \(width)x\(height)")
        }
        guard frame.y.count >= frame.lumaStride * frame.height,
              frame.u.count >= frame.chromaStride * frame.chromaHeight,
              frame.v.count >= frame.chromaStride * frame.chromaHeight else {
            throw .invalidParameter("frame planes are smaller than \(width)x\(height) needs")
        }
        let flags: vpx_enc_frame_flags_t = forceKeyframe ? vpx_enc_frame_flags_t(VPX_EFLAG_FORCE_KF) : 0
        let err: vpx_codec_err_t = frame.y.withUnsafeBufferPointer { y in
            frame.u.withUnsafeBufferPointer { u in
                frame.v.withUnsafeBufferPointer { v in
                    // Planes are non-empty (checked above). libvpx only reads them;
                    // the mutable casts satisfy its C types.
                    let yp = UnsafeMutablePointer(mutating: y.baseAddress!)
                    guard vpx_img_wrap(image, VPX_IMG_FMT_I420, UInt32(width), UInt32(height), 1, yp) != nil else {
                        return VPX_CODEC_INVALID_PARAM
                    }
                    image.pointee.planes.1 = UnsafeMutablePointer(mutating: u.baseAddress!)
                    image.pointee.planes.2 = UnsafeMutablePointer(mutating: v.baseAddress!)
                    image.pointee.stride.0 = Int32(frame.lumaStride)
                    image.pointee.stride.1 = Int32(frame.chromaStride)
                    image.pointee.stride.2 = Int32(frame.chromaStride)
                    let result = vpx_codec_encode(ctx, image, vpx_codec_pts_t(pts), 1, flags,
                                                  UInt(VPX_DL_REALTIME))
                    image.pointee.planes = (nil, nil, nil, nil)
                    return result
                }
            }
        }
        guard err == VPX_CODEC_OK else { throw .codec(Self.message(ctx, err, "vpx_codec_encode")) }

        var out: [EncodedFrame] = []
        var iter: vpx_codec_iter_t? = nil
        while let pkt = vpx_codec_get_cx_data(ctx, &iter) {
            guard pkt.pointee.kind == VPX_CODEC_CX_FRAME_PKT else { continue }
            let f = pkt.pointee.data.frame
            guard let buf = f.buf, f.sz > 0 else { continue }
            let bytes = [UInt8](UnsafeRawBufferPointer(start: buf, count: Int(f.sz)))
            out.append(EncodedFrame(
                data: bytes,
                isKeyframe: f.flags & vpx_codec_frame_flags_t(VPX_FRAME_IS_KEY) != 0,
                pts: Int64(f.pts)))
        }
        return out
    }

    /// Changes the target bitrate from the next frame on.
    public func setBitrate(kbps: Int) throws(MediaError) {
        guard (1...100_000).contains(kbps) else {
            throw .invalidParameter("VP8 bitrate \(kbps) kbit/s: use 1...100000")
        }
        let old = config.pointee.rc_target_bitrate
        config.pointee.rc_target_bitrate = UInt32(kbps)
        let err = vpx_codec_enc_config_set(ctx, config)
        guard err == VPX_CODEC_OK else {
            config.pointee.rc_target_bitrate = old
            throw .codec(Self.message(ctx, err, "vpx_codec_enc_config_set"))
        }
    }

    static func string(_ err: vpx_codec_err_t) -> String {
        vpx_codec_err_to_string(err).map { String(cString: $0) } ?? "error \(err.rawValue)"
    }

    /// The library's error string plus its detail line when it has one.
    static func message(_ ctx: UnsafeMutablePointer<vpx_codec_ctx_t>, _ err: vpx_codec_err_t,
                        _ call: String) -> String {
        var text = "\(call): \(string(err))"
        if let detail = vpx_codec_error_detail(ctx) { text += " (\(String(cString: detail)))" }
        return text
    }
}
