// SSIM and MSE of two 4:2:0 pictures, as FFmpeg 5.1's `ssim` and `psnr` filters compute them.
//
// SSIM (vf_ssim.c, after x264): each plane is cut into 4x4 blocks; each block's sums (a, b, a*a +
// b*b, a*b) are kept for two block rows at a time; every 8x8 window made of 2x2 neighbouring blocks
// (a window every 4 samples, overlapping by half) scores
//     (2 s1 s2 + c1)(2 covar + c2) / ((s1^2 + s2^2 + c1)(vars + c2))
// with c1 = (0.01 max)^2 * 64 and c2 = (0.03 max)^2 * 64 * 63 in the sums' scale, and the plane's
// SSIM is the mean over its windows. 8-bit pictures score in int and float as the filter does,
// 10-bit ones in int64 and double with max = 1023 (the filter's 16-bit path). A plane smaller than
// two blocks either way has no window and scores 1 when identical (its MSE says how far it is).
// The filter's "All" is the planes' SSIM weighted by their share of the samples (4:1:1 for 4:2:0).
//
// MSE (vf_psnr.c): the mean of the squared differences of each plane; PSNR is 10 log10(max^2 /
// MSE), its "average" taken over the frames' plane-weighted MSEs.
//
// The 4x4 sums are built from column sums over the block row's four lines (plain loops the compiler
// vectorises): the same integers as the filter's block-by-block loop, in fewer operations.
#include "quality.h"

#include <libavutil/error.h>
#include <libavutil/pixfmt.h>
#include <string.h>

// Column sums over four lines, then 4x4 block sums into `sums` (w4 blocks, 4 ints each).
#define DEFINE_BLOCK_ROW(NAME, TYPE)                                                                   \
    static void NAME(const uint8_t *a_bytes, ptrdiff_t a_stride, const uint8_t *b_bytes,              \
                     ptrdiff_t b_stride, int w4, int32_t *columns, int32_t (*sums)[4]) {               \
        int width = w4 * 4;                                                                            \
        int32_t *c1 = columns, *c2 = columns + width, *css = columns + 2 * width,                      \
                *c12 = columns + 3 * width;                                                            \
        memset(columns, 0, sizeof(int32_t) * 4 * (size_t)width);                                       \
        for (int line = 0; line < 4; line++) {                                                         \
            const TYPE *a = (const TYPE *)(a_bytes + line * a_stride);                                 \
            const TYPE *b = (const TYPE *)(b_bytes + line * b_stride);                                 \
            for (int x = 0; x < width; x++) {                                                          \
                int32_t va = a[x], vb = b[x];                                                          \
                c1[x] += va;                                                                           \
                c2[x] += vb;                                                                           \
                css[x] += va * va + vb * vb;                                                           \
                c12[x] += va * vb;                                                                     \
            }                                                                                          \
        }                                                                                              \
        for (int z = 0; z < w4; z++) {                                                                 \
            int x = 4 * z;                                                                             \
            sums[z][0] = c1[x] + c1[x + 1] + c1[x + 2] + c1[x + 3];                                    \
            sums[z][1] = c2[x] + c2[x + 1] + c2[x + 2] + c2[x + 3];                                    \
            sums[z][2] = css[x] + css[x + 1] + css[x + 2] + css[x + 3];                                \
            sums[z][3] = c12[x] + c12[x + 1] + c12[x + 2] + c12[x + 3];                                \
        }                                                                                              \
    }

DEFINE_BLOCK_ROW(block_row_8, uint8_t)
DEFINE_BLOCK_ROW(block_row_16, uint16_t)

static float window_8(int s1, int s2, int ss, int s12) {
    static const int c1 = (int)(.01 * .01 * 255 * 255 * 64 + .5);
    static const int c2 = (int)(.03 * .03 * 255 * 255 * 64 * 63 + .5);
    int vars = ss * 64 - s1 * s1 - s2 * s2;
    int covar = s12 * 64 - s1 * s2;
    return (float)(2 * s1 * s2 + c1) * (float)(2 * covar + c2) /
           ((float)(s1 * s1 + s2 * s2 + c1) * (float)(vars + c2));
}

static double window_16(int64_t s1, int64_t s2, int64_t ss, int64_t s12, int max) {
    int64_t c1 = (int64_t)(.01 * .01 * max * max * 64 + .5);
    int64_t c2 = (int64_t)(.03 * .03 * max * max * 64 * 63 + .5);
    int64_t vars = ss * 64 - s1 * s1 - s2 * s2;
    int64_t covar = s12 * 64 - s1 * s2;
    return (double)(2 * s1 * s2 + c1) * (double)(2 * covar + c2) /
           ((double)(s1 * s1 + s2 * s2 + c1) * (double)(vars + c2));
}

// The plane's SSIM and MSE. `scratch`: 4 * width column sums and two rows of w4 + 3 block sums.
static void plane_score(const uint8_t *a, ptrdiff_t a_stride, const uint8_t *b, ptrdiff_t b_stride,
                        int width, int height, int deep, void *scratch, double *ssim_out,
                        double *mse_out) {
    // MSE over every sample.
    uint64_t squared = 0;
    for (int y = 0; y < height; y++) {
        if (deep) {
            const uint16_t *pa = (const uint16_t *)(a + y * a_stride);
            const uint16_t *pb = (const uint16_t *)(b + y * b_stride);
            uint64_t line = 0;
            for (int x = 0; x < width; x++) {
                int64_t d = (int64_t)pa[x] - pb[x];
                line += (uint64_t)(d * d);
            }
            squared += line;
        } else {
            const uint8_t *pa = a + y * a_stride;
            const uint8_t *pb = b + y * b_stride;
            uint32_t line = 0;
            for (int x = 0; x < width; x++) {
                int d = (int)pa[x] - pb[x];
                line += (uint32_t)(d * d);
            }
            squared += line;
        }
    }
    *mse_out = width > 0 && height > 0 ? (double)squared / ((double)width * height) : 0;

    int w4 = width >> 2, h4 = height >> 2;
    if (w4 < 2 || h4 < 2) {
        *ssim_out = squared == 0 ? 1 : 0;
        return;
    }
    int32_t *columns = scratch;
    int32_t (*rows)[4] = (int32_t (*)[4])(columns + 4 * (w4 * 4));
    int32_t (*sum0)[4] = rows;
    int32_t (*sum1)[4] = rows + w4 + 3;
    double total = 0;
    int z = 0;
    for (int y = 1; y < h4; y++) {
        for (; z <= y; z++) {
            int32_t (*swap)[4] = sum0;
            sum0 = sum1;
            sum1 = swap;
            if (deep) {
                block_row_16(a + 4 * z * a_stride, a_stride, b + 4 * z * b_stride, b_stride, w4, columns,
                             sum0);
            } else {
                block_row_8(a + 4 * z * a_stride, a_stride, b + 4 * z * b_stride, b_stride, w4, columns,
                            sum0);
            }
        }
        if (deep) {
            double line = 0;
            for (int i = 0; i < w4 - 1; i++) {
                line += window_16((int64_t)sum0[i][0] + sum0[i + 1][0] + sum1[i][0] + sum1[i + 1][0],
                                  (int64_t)sum0[i][1] + sum0[i + 1][1] + sum1[i][1] + sum1[i + 1][1],
                                  (int64_t)sum0[i][2] + sum0[i + 1][2] + sum1[i][2] + sum1[i + 1][2],
                                  (int64_t)sum0[i][3] + sum0[i + 1][3] + sum1[i][3] + sum1[i + 1][3],
                                  1023);
            }
            total += line;
        } else {
            float line = 0;
            for (int i = 0; i < w4 - 1; i++) {
                line += window_8(sum0[i][0] + sum0[i + 1][0] + sum1[i][0] + sum1[i + 1][0],
                                 sum0[i][1] + sum0[i + 1][1] + sum1[i][1] + sum1[i + 1][1],
                                 sum0[i][2] + sum0[i + 1][2] + sum1[i][2] + sum1[i + 1][2],
                                 sum0[i][3] + sum0[i + 1][3] + sum1[i][3] + sum1[i + 1][3]);
            }
            total += line;
        }
    }
    *ssim_out = total / ((double)(h4 - 1) * (w4 - 1));
}

size_t reel_quality_scratch_size(int width) {
    size_t w4 = width > 0 ? (size_t)width >> 2 : 0;
    return sizeof(int32_t) * (4 * 4 * w4 + 2 * 4 * (w4 + 3));
}

int reel_quality_compare(const AVFrame *a, const AVFrame *b, void *scratch, reel_quality_score *score) {
    if (!a || !b || !scratch || !score) return AVERROR(EINVAL);
    if (a->format != b->format || a->width != b->width || a->height != b->height) return AVERROR(EINVAL);
    int deep;
    if (a->format == AV_PIX_FMT_YUV420P) {
        deep = 0;
    } else if (a->format == AV_PIX_FMT_YUV420P10LE) {
        deep = 1;
    } else {
        return AVERROR(EINVAL);
    }
    if (a->width <= 0 || a->height <= 0) return AVERROR(EINVAL);
    double total = 0;
    for (int plane = 0; plane < 3; plane++) {
        int width = plane == 0 ? a->width : (a->width + 1) >> 1;
        int height = plane == 0 ? a->height : (a->height + 1) >> 1;
        if (!a->data[plane] || !b->data[plane]) return AVERROR(EINVAL);
        plane_score(a->data[plane], a->linesize[plane], b->data[plane], b->linesize[plane], width, height,
                    deep, scratch, &score->ssim[plane], &score->mse[plane]);
        score->weight[plane] = (double)width * height;
        total += score->weight[plane];
    }
    for (int plane = 0; plane < 3; plane++) score->weight[plane] /= total;
    return 0;
}
