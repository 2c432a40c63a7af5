#ifndef LVB_CJPEG_SHIM_H
#define LVB_CJPEG_SHIM_H
/* jpeglib.h uses FILE and size_t without including their headers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <jpeglib.h>

/* libjpeg reports errors by calling error_exit, whose default exits the
 * process; the only way back is longjmp, which Swift cannot call, so the whole
 * compression runs here in one static inline function (the handle lives and
 * dies inside it). */
struct lvb_jpeg_error {
    struct jpeg_error_mgr mgr;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
};

static void lvb_jpeg_error_exit(j_common_ptr cinfo) {
    struct lvb_jpeg_error *e = (struct lvb_jpeg_error *)cinfo->err;
    e->mgr.format_message(cinfo, e->message);
    longjmp(e->jump, 1);
}

static void lvb_jpeg_quiet(j_common_ptr cinfo, int level) { (void)cinfo; (void)level; }

/* Compresses an I420 picture (planes with their strides, 4:2:0, even or odd
 * sizes) as a baseline JFIF JPEG at `quality` (1-100), fed as raw YCbCr
 * (no RGB round trip). On success returns 0 and a malloc'd buffer in *out
 * (free it) of *out_size bytes; on failure returns -1 and libjpeg's message
 * in `message` (at least JMSG_LENGTH_MAX bytes). */
static inline int lvb_jpeg_encode_i420(const unsigned char *y, int y_stride,
                                       const unsigned char *u, const unsigned char *v, int c_stride,
                                       int width, int height, int quality,
                                       unsigned char **out, unsigned long *out_size, char *message) {
    struct jpeg_compress_struct cinfo;
    struct lvb_jpeg_error err;
    /* Rows of one MCU band: 16 of luma, 8 of each chroma, padded to whole blocks. */
    JSAMPROW rows_y[16], rows_u[8], rows_v[8];
    JSAMPARRAY planes[3] = { rows_y, rows_u, rows_v };
    unsigned char *band = NULL;
    *out = NULL;
    *out_size = 0;
    message[0] = 0;
    if (width < 1 || height < 1 || quality < 1 || quality > 100) {
        strcpy(message, "invalid picture size or quality");
        return -1;
    }
    int cw = (width + 1) / 2, ch = (height + 1) / 2;
    /* Buffers as wide as whole blocks (libjpeg reads width_in_blocks * 8 samples of each row). */
    int py = (width + 15) / 16 * 16, pc = py / 2;
    band = (unsigned char *)malloc((size_t)py * 16 + (size_t)pc * 16);
    if (!band) {
        strcpy(message, "out of memory");
        return -1;
    }
    cinfo.err = jpeg_std_error(&err.mgr);
    err.mgr.error_exit = lvb_jpeg_error_exit;
    err.mgr.emit_message = lvb_jpeg_quiet;
    if (setjmp(err.jump)) {
        strncpy(message, err.message, JMSG_LENGTH_MAX - 1);
        message[JMSG_LENGTH_MAX - 1] = 0;
        jpeg_destroy_compress(&cinfo);
        free(band);
        if (*out) free(*out);
        *out = NULL;
        *out_size = 0;
        return -1;
    }
    jpeg_create_compress(&cinfo);
    jpeg_mem_dest(&cinfo, out, out_size);
    cinfo.image_width = (JDIMENSION)width;
    cinfo.image_height = (JDIMENSION)height;
    cinfo.input_components = 3;
    cinfo.in_color_space = JCS_YCbCr;
    jpeg_set_defaults(&cinfo);
    jpeg_set_colorspace(&cinfo, JCS_YCbCr);
    jpeg_set_quality(&cinfo, quality, TRUE);
    cinfo.raw_data_in = TRUE;
    cinfo.dct_method = JDCT_ISLOW;
    cinfo.comp_info[0].h_samp_factor = 2;
    cinfo.comp_info[0].v_samp_factor = 2;
    cinfo.comp_info[1].h_samp_factor = 1;
    cinfo.comp_info[1].v_samp_factor = 1;
    cinfo.comp_info[2].h_samp_factor = 1;
    cinfo.comp_info[2].v_samp_factor = 1;
    jpeg_start_compress(&cinfo, TRUE);
    unsigned char *by = band, *bu = band + (size_t)py * 16, *bv = bu + (size_t)pc * 8;
    for (int i = 0; i < 16; i++) rows_y[i] = by + (size_t)i * py;
    for (int i = 0; i < 8; i++) {
        rows_u[i] = bu + (size_t)i * pc;
        rows_v[i] = bv + (size_t)i * pc;
    }
    while (cinfo.next_scanline < cinfo.image_height) {
        int top = (int)cinfo.next_scanline;
        /* Copy the band, repeating the last column and row into the padding. */
        for (int i = 0; i < 16; i++) {
            int r = top + i < height ? top + i : height - 1;
            memcpy(rows_y[i], y + (size_t)r * y_stride, (size_t)width);
            memset(rows_y[i] + width, rows_y[i][width - 1], (size_t)(py - width));
        }
        for (int i = 0; i < 8; i++) {
            int r = top / 2 + i < ch ? top / 2 + i : ch - 1;
            memcpy(rows_u[i], u + (size_t)r * c_stride, (size_t)cw);
            memset(rows_u[i] + cw, rows_u[i][cw - 1], (size_t)(pc - cw));
            memcpy(rows_v[i], v + (size_t)r * c_stride, (size_t)cw);
            memset(rows_v[i] + cw, rows_v[i][cw - 1], (size_t)(pc - cw));
        }
        jpeg_write_raw_data(&cinfo, planes, 16);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    free(band);
    return 0;
}
#endif
