/// libjpeg-turbo without its SIMD code, for the size of the static binary.
///
/// Its SIMD dispatch (`jsimd.c`) is one object that references every SIMD
/// routine of the library, decompression's included: linking the compressor
/// the thumbnails need pulled in about 200 KB of x86 assembly (99 KB for
/// the SSE2 Huffman encoder alone) and took the binary over its 16 MiB
/// limit. These definitions stand in for that object: every `jsimd_can_*`
/// says no, so libjpeg takes its portable C paths, and the routines behind
/// them are never called. A 160-pixel thumbnail every 10 s does not miss the
/// speed. Should libjpeg reference a SIMD entry point not listed here, the
/// link fails with duplicate symbols rather than silently growing.
enum JPEGLinkage {}

@_cdecl("jsimd_can_rgb_ycc") public func lvb_jsimd_can_rgb_ycc() -> Int32 { 0 }
@_cdecl("jsimd_can_rgb_gray") public func lvb_jsimd_can_rgb_gray() -> Int32 { 0 }
@_cdecl("jsimd_can_h2v1_downsample") public func lvb_jsimd_can_h2v1_downsample() -> Int32 { 0 }
@_cdecl("jsimd_can_h2v2_downsample") public func lvb_jsimd_can_h2v2_downsample() -> Int32 { 0 }
@_cdecl("jsimd_can_convsamp") public func lvb_jsimd_can_convsamp() -> Int32 { 0 }
@_cdecl("jsimd_can_convsamp_float") public func lvb_jsimd_can_convsamp_float() -> Int32 { 0 }
@_cdecl("jsimd_can_fdct_islow") public func lvb_jsimd_can_fdct_islow() -> Int32 { 0 }
@_cdecl("jsimd_can_fdct_ifast") public func lvb_jsimd_can_fdct_ifast() -> Int32 { 0 }
@_cdecl("jsimd_can_fdct_float") public func lvb_jsimd_can_fdct_float() -> Int32 { 0 }
@_cdecl("jsimd_can_quantize") public func lvb_jsimd_can_quantize() -> Int32 { 0 }
@_cdecl("jsimd_can_quantize_float") public func lvb_jsimd_can_quantize_float() -> Int32 { 0 }
@_cdecl("jsimd_can_huff_encode_one_block") public func lvb_jsimd_can_huff_encode_one_block() -> Int32 { 0 }
// The progressive encoder's (linked by jcinit.c, unused: thumbnails are baseline).
@_cdecl("jsimd_can_encode_mcu_AC_first_prepare") public func lvb_jsimd_can_encode_mcu_AC_first_prepare() -> Int32 { 0 }
@_cdecl("jsimd_can_encode_mcu_AC_refine_prepare") public func lvb_jsimd_can_encode_mcu_AC_refine_prepare() -> Int32 { 0 }

// Never called (their `can` said no); defined so that nothing pulls in jsimd.c.
@_cdecl("jsimd_rgb_ycc_convert") public func lvb_jsimd_rgb_ycc_convert() {}
@_cdecl("jsimd_rgb_gray_convert") public func lvb_jsimd_rgb_gray_convert() {}
@_cdecl("jsimd_h2v1_downsample") public func lvb_jsimd_h2v1_downsample() {}
@_cdecl("jsimd_h2v2_downsample") public func lvb_jsimd_h2v2_downsample() {}
@_cdecl("jsimd_convsamp") public func lvb_jsimd_convsamp() {}
@_cdecl("jsimd_convsamp_float") public func lvb_jsimd_convsamp_float() {}
@_cdecl("jsimd_fdct_islow") public func lvb_jsimd_fdct_islow() {}
@_cdecl("jsimd_fdct_ifast") public func lvb_jsimd_fdct_ifast() {}
@_cdecl("jsimd_fdct_float") public func lvb_jsimd_fdct_float() {}
@_cdecl("jsimd_quantize") public func lvb_jsimd_quantize() {}
@_cdecl("jsimd_quantize_float") public func lvb_jsimd_quantize_float() {}
@_cdecl("jsimd_huff_encode_one_block") public func lvb_jsimd_huff_encode_one_block() -> UnsafeMutableRawPointer? { nil }
@_cdecl("jsimd_encode_mcu_AC_first_prepare") public func lvb_jsimd_encode_mcu_AC_first_prepare() {}
@_cdecl("jsimd_encode_mcu_AC_refine_prepare") public func lvb_jsimd_encode_mcu_AC_refine_prepare() -> Int32 { 0 }
