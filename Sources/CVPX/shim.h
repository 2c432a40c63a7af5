#ifndef LVB_CVPX_SHIM_H
#define LVB_CVPX_SHIM_H
#include <vpx/vpx_encoder.h>
#include <vpx/vpx_decoder.h>
#include <vpx/vp8cx.h>
#include <vpx/vp8dx.h>

/* vpx_codec_enc_init / vpx_codec_dec_init are macros that pass the ABI version;
   vpx_codec_control is a macro over a variadic function. Swift sees these. */
static inline vpx_codec_err_t lvb_vpx_enc_init(vpx_codec_ctx_t *ctx, const vpx_codec_enc_cfg_t *cfg, vpx_codec_flags_t flags) {
    return vpx_codec_enc_init(ctx, vpx_codec_vp8_cx(), cfg, flags);
}
static inline vpx_codec_err_t lvb_vpx_enc_config_default(vpx_codec_enc_cfg_t *cfg) {
    return vpx_codec_enc_config_default(vpx_codec_vp8_cx(), cfg, 0);
}
static inline vpx_codec_err_t lvb_vpx_dec_init(vpx_codec_ctx_t *ctx, const vpx_codec_dec_cfg_t *cfg, vpx_codec_flags_t flags) {
    return vpx_codec_dec_init(ctx, vpx_codec_vp8_dx(), cfg, flags);
}
static inline vpx_codec_err_t lvb_vpx_set_cpuused(vpx_codec_ctx_t *ctx, int v) { return vpx_codec_control(ctx, VP8E_SET_CPUUSED, v); }
static inline vpx_codec_err_t lvb_vpx_set_static_threshold(vpx_codec_ctx_t *ctx, unsigned int v) { return vpx_codec_control(ctx, VP8E_SET_STATIC_THRESHOLD, v); }
static inline vpx_codec_err_t lvb_vpx_set_noise_sensitivity(vpx_codec_ctx_t *ctx, unsigned int v) { return vpx_codec_control(ctx, VP8E_SET_NOISE_SENSITIVITY, v); }
static inline vpx_codec_err_t lvb_vpx_set_token_partitions(vpx_codec_ctx_t *ctx, int v) { return vpx_codec_control(ctx, VP8E_SET_TOKEN_PARTITIONS, v); }
static inline vpx_codec_err_t lvb_vpx_set_max_intra_bitrate_pct(vpx_codec_ctx_t *ctx, unsigned int v) { return vpx_codec_control(ctx, VP8E_SET_MAX_INTRA_BITRATE_PCT, v); }
#endif
