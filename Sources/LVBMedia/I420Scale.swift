import CYUV

extension I420Frame {
    /// This picture scaled to `width`×`height` with libyuv's box filter (a Y4M
    /// source of another size than `--size`).
    public func scaled(width: Int, height: Int) throws(MediaError) -> I420Frame {
        if width == self.width && height == self.height { return self }
        var out = try I420Frame(width: width, height: height)
        let (sw, sh, scs) = (Int32(self.width), Int32(self.height), Int32(chromaStride))
        let (dw, dh, dcs) = (Int32(width), Int32(height), Int32(out.chromaStride))
        let result = y.withUnsafeBufferPointer { sy in u.withUnsafeBufferPointer { su in v.withUnsafeBufferPointer { sv in
            out.y.withUnsafeMutableBufferPointer { dy in out.u.withUnsafeMutableBufferPointer { du in out.v.withUnsafeMutableBufferPointer { dv in
                I420Scale(sy.baseAddress, sw, su.baseAddress, scs, sv.baseAddress, scs, sw, sh,
                          dy.baseAddress, dw, du.baseAddress, dcs, dv.baseAddress, dcs, dw, dh, kFilterBox)
            } } }
        } } }
        guard result == 0 else { throw .codec("I420Scale failed (\(result))") }
        return out
    }
}
