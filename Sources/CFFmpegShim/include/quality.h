// Picture quality of an encode against its reference, for ReelMedia's quality target: SSIM and MSE
// of each plane of two 4:2:0 pictures of one size, computed as FFmpeg's `ssim` and `psnr` filters
// compute them (quality.c says how), so Reel's figures and a check with ffmpeg's filters agree.
// Only ReelMedia imports this.
#ifndef REEL_QUALITY_H
#define REEL_QUALITY_H

#include <libavutil/frame.h>

// One picture's scores: per plane (Y, Cb, Cr) the mean SSIM over its 8x8 windows and the mean
// squared error per sample (in the samples' own scale: 0...255 or 0...1023), and each plane's share
// of the samples (the weights FFmpeg's filters give the planes in their "All" figures).
typedef struct {
    double ssim[3];
    double mse[3];
    double weight[3];
} reel_quality_score;

// Compares `a` with `b`: both AV_PIX_FMT_YUV420P or both AV_PIX_FMT_YUV420P10LE, of the same
// size. `scratch` holds at least reel_quality_scratch_size(width) bytes (one thread at a time).
// Returns 0, or AVERROR(EINVAL) when the frames are not as described.
int reel_quality_compare(const AVFrame *a, const AVFrame *b, void *scratch, reel_quality_score *score);

// The bytes of scratch memory reel_quality_compare needs for pictures `width` samples wide.
size_t reel_quality_scratch_size(int width);

#endif
