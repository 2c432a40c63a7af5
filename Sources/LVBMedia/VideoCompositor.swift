import CYUV

/// Draws the host's picture and its guests' pictures into one frame of the
/// host's size, placed by a StageLayout (see StageRect.rects).
///
/// Each picture is centre-cropped to its rectangle's aspect and scaled by
/// libyuv straight from the source planes into the output planes: the crop is
/// a pointer offset, the rectangle is a pointer offset with the output's
/// strides, so nothing is copied at full size on the way.
public final class VideoCompositor {
    /// The last output, written again next time when the caller has let go of it.
    private var canvas: I420Frame?

    public init() {}

    /// Composes one frame. A nil guest (no picture yet) is a black tile; guests
    /// past the layout's capacity (MixConstants.maxGuests) are not drawn. The
    /// canvas is the host's size unless `canvas` says otherwise (a PK host's
    /// own half); its edges must be even and within I420Frame.sizeRange.
    public func compose(host: I420Frame, guests: [I420Frame?], layout: StageLayout,
                        canvas size: (width: Int, height: Int)? = nil) throws(MediaError) -> I420Frame {
        let (width, height) = size ?? (host.width, host.height)
        guard I420Frame.sizeRange.contains(width), I420Frame.sizeRange.contains(height),
              width % 2 == 0, height % 2 == 0 else {
            throw .invalidParameter("stage canvas \(width)x\(height): both edges must be even and in \(I420Frame.sizeRange)")
        }
        try Self.checkPlanes(host, role: "host")
        for case let guest? in guests { try Self.checkPlanes(guest, role: "guest") }

        // Taken out of `canvas` so that, when the caller dropped the last output,
        // this is the only reference and writing does not copy.
        var out: I420Frame
        if let last = canvas, last.width == width, last.height == height {
            out = last
        } else {
            out = try I420Frame(width: width, height: height)
        }
        canvas = nil

        let rects = StageRect.rects(for: layout, participants: 1 + guests.count, width: width, height: height)
        switch layout {
        case .pip where host.width != width || host.height != height:
            try Self.draw(host, into: rects[0], of: &out)
        case .pip:
            // The host's picture is the background as it is; tiles go over it.
            out.y.withUnsafeMutableBufferPointer { _ = $0.update(fromContentsOf: host.y) }
            out.u.withUnsafeMutableBufferPointer { _ = $0.update(fromContentsOf: host.u) }
            out.v.withUnsafeMutableBufferPointer { _ = $0.update(fromContentsOf: host.v) }
        case .split:
            try Self.draw(host, into: rects[0], of: &out)
        case .grid:
            try Self.draw(host, into: rects[0], of: &out)
            let cells = StageRect.rects(for: .grid, participants: 1 + MixConstants.maxGuests, width: width, height: height)
            for cell in cells.dropFirst(rects.count) { try Self.fillBlack(cell, of: &out) }
        }
        for (index, rect) in rects.enumerated().dropFirst() {
            if let guest = guests[index - 1] {
                try Self.draw(guest, into: rect, of: &out)
            } else {
                try Self.fillBlack(rect, of: &out)
            }
        }
        canvas = out
        return out
    }

    /// Planes must hold exactly what the size says before libyuv reads them.
    private static func checkPlanes(_ frame: I420Frame, role: String) throws(MediaError) {
        let chroma = frame.chromaStride * frame.chromaHeight
        guard frame.width > 0, frame.height > 0, frame.y.count == frame.width * frame.height,
              frame.u.count == chroma, frame.v.count == chroma else {
            throw .invalidParameter("\(role) frame \(frame.width)x\(frame.height) has planes of "
                + "\(frame.y.count)/\(frame.u.count)/\(frame.v.count) bytes")
        }
    }

    /// The centred part of a `width`×`height` picture with `rect`'s aspect;
    /// offsets and cropped edges are even so chroma stays aligned.
    private static func crop(width: Int, height: Int, to rect: StageRect) -> StageRect {
        let wide = width * rect.height, tall = height * rect.width
        if wide > tall {
            let w = min(width, max(2, (height * rect.width / rect.height) & ~1))
            return StageRect(x: ((width - w) / 2) & ~1, y: 0, width: w, height: height)
        } else if wide < tall {
            let h = min(height, max(2, (width * rect.height / rect.width) & ~1))
            return StageRect(x: 0, y: ((height - h) / 2) & ~1, width: width, height: h)
        }
        return StageRect(x: 0, y: 0, width: width, height: height)
    }

    /// Scales the centre crop of `source` into `rect` of `out`.
    private static func draw(_ source: I420Frame, into rect: StageRect, of out: inout I420Frame) throws(MediaError) {
        guard rect.width > 0, rect.height > 0 else { return }
        let c = crop(width: source.width, height: source.height, to: rect)
        let (sls, scs) = (source.lumaStride, source.chromaStride)
        let (dls, dcs) = (out.lumaStride, out.chromaStride)
        let sourceLuma = c.y * sls + c.x, sourceChroma = c.y / 2 * scs + c.x / 2
        let destLuma = rect.y * dls + rect.x, destChroma = rect.y / 2 * dcs + rect.x / 2
        let result = source.y.withUnsafeBufferPointer { sy in source.u.withUnsafeBufferPointer { su in source.v.withUnsafeBufferPointer { sv in
            out.y.withUnsafeMutableBufferPointer { dy in out.u.withUnsafeMutableBufferPointer { du in out.v.withUnsafeMutableBufferPointer { dv in
                guard let sy = sy.baseAddress, let su = su.baseAddress, let sv = sv.baseAddress,
                      let dy = dy.baseAddress, let du = du.baseAddress, let dv = dv.baseAddress else { return Int32(-1) }
                return I420Scale(sy + sourceLuma, Int32(sls), su + sourceChroma, Int32(scs), sv + sourceChroma, Int32(scs),
                                 Int32(c.width), Int32(c.height),
                                 dy + destLuma, Int32(dls), du + destChroma, Int32(dcs), dv + destChroma, Int32(dcs),
                                 Int32(rect.width), Int32(rect.height), kFilterBox)
            } } }
        } } }
        guard result == 0 else { throw .codec("I420Scale \(c.width)x\(c.height) to \(rect.width)x\(rect.height) failed (\(result))") }
    }

    /// Paints `rect` of `out` black: a guest without a picture, an empty grid cell.
    private static func fillBlack(_ rect: StageRect, of out: inout I420Frame) throws(MediaError) {
        guard rect.width > 0, rect.height > 0 else { return }
        let (ls, cs) = (Int32(out.lumaStride), Int32(out.chromaStride))
        let result = out.y.withUnsafeMutableBufferPointer { dy in out.u.withUnsafeMutableBufferPointer { du in
            out.v.withUnsafeMutableBufferPointer { dv in
                I420Rect(dy.baseAddress, ls, du.baseAddress, cs, dv.baseAddress, cs,
                         Int32(rect.x), Int32(rect.y), Int32(rect.width), Int32(rect.height),
                         Int32(MixConstants.blackLuma), Int32(MixConstants.neutralChroma), Int32(MixConstants.neutralChroma))
            }
        } }
        guard result == 0 else { throw .codec("I420Rect \(rect) failed (\(result))") }
    }
}
