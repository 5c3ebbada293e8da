// HDR to SDR tone mapping for ReelMedia: HLG or PQ pictures (BT.2020 or BT.709 primaries, 10-bit
// YCbCr 4:2:0) become BT.709 SDR (8-bit limited-range YCbCr 4:2:0) in one pass over each 2x2 block,
// following ITU-R BT.2100 and BT.2408. tonemap.c explains the maths. Only ReelMedia imports this.
#ifndef REEL_TONEMAP_H
#define REEL_TONEMAP_H

#include <libavutil/frame.h>

typedef enum {
    REEL_TONEMAP_HLG = 1,  // ARIB STD-B67 / BT.2100 HLG, scene-referred
    REEL_TONEMAP_PQ = 2,   // SMPTE ST 2084 / BT.2100 PQ, display-referred
} reel_tonemap_transfer;

// The tables of one mapping and the peak it follows from picture to picture: one thread at a time.
typedef struct reel_tonemap reel_tonemap;

// Makes a mapping for pictures in `transfer` whose brightest light is at most `peak_luminance` cd/m2
// (clamped to 100...10000), with BT.2020 primaries (`bt2020_primaries` 1) or BT.709's (0). Returns
// NULL when out of memory or `transfer` is unknown.
reel_tonemap *reel_tonemap_create(reel_tonemap_transfer transfer, double peak_luminance, int bt2020_primaries);

void reel_tonemap_free(reel_tonemap *map);

// Maps `source` (AV_PIX_FMT_YUV420P10LE, limited range) into `destination` (AV_PIX_FMT_YUV420P, same
// even size, buffers allocated and writable): reference white (203 cd/m2) to SDR white, highlights
// rolled off up to the picture's own peak (measured, smoothed over the pictures mapped before,
// never above `peak_luminance`). Pictures are to be given in order. `vectorized` 0 forces the plain
// C path even where the CPU has AVX2 and FMA. Returns 0, or AVERROR(EINVAL) when the frames are not
// as described.
int reel_tonemap_apply(reel_tonemap *map, const AVFrame *source, AVFrame *destination, int vectorized);

// The peak (cd/m2) the last picture's highlights were rolled off to; 203 or less: none were.
double reel_tonemap_peak(const reel_tonemap *map);

// Whether this CPU runs the AVX2+FMA path (x86-64 with both extensions).
int reel_tonemap_has_avx2(void);

#endif
