#ifndef LVB_COPUS_SHIM_H
#define LVB_COPUS_SHIM_H
#include <opus/opus.h>

/* opus_encoder_ctl / opus_decoder_ctl are variadic macros-over-varargs that
   Swift cannot call; each request the project uses gets a typed shim. */
static inline int lvb_opus_set_bitrate(OpusEncoder *e, opus_int32 v) { return opus_encoder_ctl(e, OPUS_SET_BITRATE(v)); }
static inline int lvb_opus_set_inband_fec(OpusEncoder *e, opus_int32 v) { return opus_encoder_ctl(e, OPUS_SET_INBAND_FEC(v)); }
static inline int lvb_opus_set_packet_loss_perc(OpusEncoder *e, opus_int32 v) { return opus_encoder_ctl(e, OPUS_SET_PACKET_LOSS_PERC(v)); }
static inline int lvb_opus_set_complexity(OpusEncoder *e, opus_int32 v) { return opus_encoder_ctl(e, OPUS_SET_COMPLEXITY(v)); }
static inline int lvb_opus_set_signal(OpusEncoder *e, opus_int32 v) { return opus_encoder_ctl(e, OPUS_SET_SIGNAL(v)); }
static inline int lvb_opus_set_dtx(OpusEncoder *e, opus_int32 v) { return opus_encoder_ctl(e, OPUS_SET_DTX(v)); }
static inline int lvb_opus_get_lookahead(OpusEncoder *e, opus_int32 *v) { return opus_encoder_ctl(e, OPUS_GET_LOOKAHEAD(v)); }
static inline int lvb_opus_decoder_get_last_packet_duration(OpusDecoder *d, opus_int32 *v) { return opus_decoder_ctl(d, OPUS_GET_LAST_PACKET_DURATION(v)); }
#endif
