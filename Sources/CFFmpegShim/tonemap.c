// HDR to SDR tone mapping: one pass over each 2x2 block of a 10-bit BT.2020 YCbCr 4:2:0 picture
// (already scaled to the output size by swscale), writing 8-bit BT.709 limited-range YCbCr 4:2:0.
//
// For each pixel:
//  1. YCbCr (BT.2020 non-constant luminance, limited range) to non-linear R'G'B'.
//  2. Linear light. PQ (display-referred): the ST 2084 EOTF, from a table (interpolated), in units
//     of HDR reference white (203 cd/m2, ITU-R BT.2408). HLG (scene-referred): the inverse OETF of
//     BT.2100 (exact square below 0.5, a degree-7 polynomial above: within 2e-6 of the exponential).
//  3. HLG only: BT.2100's OOTF for a 1000 cd/m2 display, applied to the luminance, not to each
//     channel: gain = 1000/203 * Ys^(1.2 - 1), so the hue stays. Reference white (75 % HLG) lands
//     on 1.0, as BT.2408 says. (zimg's default, zscale agamma=1, applies the gamma to each channel
//     instead: an HLG file made that way shows saturated colours shifted here, red 250,0,0 as
//     229,56,37 and blue toward violet, as on any BT.2100 display; made with agamma=0 it does not.)
//  4. BT.2020 to BT.709 primaries (a 3x3 matrix on linear light; identity for BT.709 sources).
//  5. Gamut: a colour with a negative channel is moved toward the grey of the same luminance just
//     far enough to fit, which keeps its hue and luminance and gives up only the saturation BT.709
//     cannot show.
//  6. Highlights: the largest channel m rolls off above a knee so that the picture's peak lands on
//     SDR white; every channel is scaled by the same factor, so the hue stays. The curve is BT.2390's
//     EETF (the display mapping BT.2408 refers to: a Hermite spline in the PQ domain from the knee,
//     1.5 w - 0.5 of the peak's PQ value, w being reference white's, to the peak on SDR white),
//     except that it still rises with slope 0.2 at the peak instead of going flat, so a 0-1000
//     cd/m2 PQ ramp spreads 203-1000 cd/m2 over the 25 codes 211-235 with no clipped run (a fixed
//     Mobius from 85 % of reference white gave 8, 228-235, and clipped the last third flat). A
//     table over sqrt(m) holds the curve; above the peak, m is scaled to 1 (a hue-keeping clip).
//     The peak is the picture's own, measured (below), between reference white and the source's
//     declared peak (HLG: 1000 cd/m2): a picture with nothing brighter than reference white (SDR
//     content placed at it, as BT.2408 says) comes out as it was, and reference white lands lower
//     only when there are highlights to make room for (a 1000 cd/m2 peak: to code 211 of 235).
//  7. The inverse of BT.1886 (gamma 2.4), display-referred like BT.2408's convention and zimg's; the
//     BT.709 OETF would brighten mid-grey (126 -> 109 in tests).
// Powers (steps 3 and 7) are exp2(p log2 x) with short polynomials (relative error about 1e-5): on
// the AMD EPYC this was measured on, the table gathers they replace cost twice as much.
//  8. 4:2:0 out. Steps 1-7 run once per 2x2 block, on the block's mean luma with its chroma; each
//     pixel's luma then differs from the block's as the grey curve (steps 1-7 for neutral pixels, a
//     table over the 1024 10-bit codes) says its own luma differs from the block's mean. A quarter of
//     the evaluations of mapping every pixel, for no measured loss (720p testsrc2 against its SDR
//     original after x264 CRF 21: HLG 31.32 dB against 31.21, PQ 31.13 against 31.10).
//
// The peak of each picture: the 99.5th percentile, over about 4096 of its 2x2 blocks on an even grid
// (the last row and column included), of the light of the block's largest channel as steps 1-5 make
// it (HLG's OOTF and BT.709 primaries included), in a histogram over sqrt(light / declared peak).
// Not the maximum: 4:2:0 chroma at testsrc2's hard colour edges puts 0.4 % of its blocks up to 2.2x
// reference white, and a lone specular glint is better clipped than paid for by the whole picture.
// The peak is smoothed across pictures in that histogram's units, rising by a quarter and falling
// by a sixteenth of the difference per picture (about 0.5 s at 30 fps), so the mapping does not
// pump; the curve and the grey table are remade only when it moves by a quarter of a step (0.15 ms
// each time). Measuring costs under 0.1 ms a picture, whatever its size (720p: 2.35 -> 2.39-2.46 ms).
//
// An AVX2+FMA path (8 pixels at a time) is chosen at run time; a plain C path does the same maths
// elsewhere and for the last columns.
#include "tonemap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <libavutil/error.h>
#include <libavutil/pixfmt.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define REEL_HAVE_AVX2_PATH 1
#endif

// Table entries minus one: tables cover [0, 1] of their argument in TABLE steps.
#define TABLE 4096
// Entries minus one of the roll-off table, over sqrt(m) from the knee to the peak.
#define ROLL 512
// The roll-off's knee, in PQ units normalised to the peak: KNEE_SLOPE w - (KNEE_SLOPE - 1), where w
// is reference white's (BT.2390's EETF: 1.5 w - 0.5).
#define KNEE_SLOPE 1.5
// The curve's slope at the peak (in normalised PQ units; BT.2390's is 0, which flattens the top).
#define END_SLOPE 0.2
// How far the smoothed peak moves toward a picture's own per picture, rising and falling.
#define RISE 0.25f
#define FALL 0.0625f
// The measured peak is the value this fraction of the sampled blocks lies above (99.5th percentile).
#define OUTLIERS 200
// About this many blocks are measured in each picture, and the histogram has this many codes + 1.
#define SAMPLES 4096
#define HISTOGRAM 1024

struct reel_tonemap {
    float eotf[TABLE + 1];    // PQ: signal -> light, reference white = 1
    float grey[1024];         // 10-bit luma code of a neutral pixel -> output luma (0...1)
    float rolloff[ROLL + 1];  // the factor m is scaled by, at sqrt(m) = root + i / inverse_step
    float gamut[9];           // linear source RGB -> linear BT.709 RGB, row-major
    float luminance[3];       // the source primaries' luminance weights (for the OOTF)
    float knee;               // m above this rolls off
    float root, inverse_step; // the roll-off table's origin (sqrt of the knee) and entries per unit
    float ceiling;            // the source's declared peak, reference white = 1
    float level;              // the smoothed measured peak, in codes of measure()'s histogram (-1: none yet)
    float curve_level;        // the level the curve and grey table were made for (-1: none yet)
    float peak;               // the peak the curve ends at, reference white = 1
    int hlg;
};

// BT.2020 non-constant-luminance YCbCr to R'G'B': R' = Y' + CR_R Cr, G' = Y' + CB_G Cb + CR_G Cr,
// B' = Y' + CB_B Cb (Kr 0.2627, Kb 0.0593).
#define CR_R 1.4746f
#define CB_G -0.16455f
#define CR_G -0.57135f
#define CB_B 1.8814f
// BT.709 luminance weights and the Cb/Cr divisors 2(1 - Kb), 2(1 - Kr).
#define KR 0.2126f
#define KG 0.7152f
#define KB 0.0722f
#define CB_DIV 1.8556f
#define CR_DIV 1.5748f
// HLG's OOTF for a 1000 cd/m2 display in reference-white units: 1000/203 * Ys^0.2.
#define OOTF_SCALE (1000.0f / 203)
#define OOTF_POWER 0.2f
// The inverse of BT.1886.
#define ENCODE_POWER (1 / 2.4f)
// Below this, powers treat their argument as this (2^-40: nothing an 8-bit output can show).
#define TINY 9.094947e-13f

// log2(1 + t) for t in [0, 1), degree 5 (error 1.4e-5), and 2^f for f in [0, 1), degree 4
// (relative error 3.6e-6): least-squares fits on Chebyshev nodes.
#define LOG2_C0 1.4354105897939648e-05f
#define LOG2_C1 1.441592706910919f
#define LOG2_C2 -0.7072563619643066f
#define LOG2_C3 0.41156680902000653f
#define LOG2_C4 -0.1898364064830238f
#define LOG2_C5 0.0439295708309116f
#define EXP2_C0 1.0000035900142754f
#define EXP2_C1 0.6929696206347647f
#define EXP2_C2 0.24162116305616038f
#define EXP2_C3 0.05171782650456755f
#define EXP2_C4 0.013683996547295761f

// SMPTE ST 2084, cd/m2 <-> signal.
#define PQ_M1 (2610.0 / 16384)
#define PQ_M2 (2523.0 / 4096 * 128)
#define PQ_C1 (3424.0 / 4096)
#define PQ_C2 (2413.0 / 4096 * 32)
#define PQ_C3 (2392.0 / 4096 * 32)

static double pq_eotf(double e) {
    if (e <= 0) return 0;
    double p = pow(e, 1 / PQ_M2);
    double n = p - PQ_C1;
    if (n < 0) n = 0;
    return 10000 * pow(n / (PQ_C2 - PQ_C3 * p), 1 / PQ_M1);
}

static double pq_inverse_eotf(double luminance) {
    double y = pow(fmax(luminance, 0) / 10000, PQ_M1);
    return pow((PQ_C1 + PQ_C2 * y) / (1 + PQ_C3 * y), PQ_M2);
}

// ---- plain C --------------------------------------------------------------------------------------

static inline int clamp_byte(float v) {
    int i = (int)(v + 0.5f);
    return i < 0 ? 0 : i > 255 ? 255 : i;
}

// x^p for x in [0, 1] (clamped), as exp2(p log2 x).
static inline float power(float x, float p) {
    x = x < TINY ? TINY : x > 1 ? 1 : x;
    uint32_t bits;
    memcpy(&bits, &x, 4);
    float exponent = (float)((int)(bits >> 23) - 127);
    bits = (bits & 0x007fffff) | 0x3f800000;
    float t;
    memcpy(&t, &bits, 4);
    t -= 1;
    float l = LOG2_C5;
    l = l * t + LOG2_C4;
    l = l * t + LOG2_C3;
    l = l * t + LOG2_C2;
    l = l * t + LOG2_C1;
    l = l * t + LOG2_C0;
    float y = p * (exponent + l);
    float n = floorf(y), f = y - n;
    float e = EXP2_C4;
    e = e * f + EXP2_C3;
    e = e * f + EXP2_C2;
    e = e * f + EXP2_C1;
    e = e * f + EXP2_C0;
    uint32_t scale = (uint32_t)((int)n + 127) << 23;
    float factor;
    memcpy(&factor, &scale, 4);
    return e * factor;
}

// Linear interpolation in a table of `size` + 1 entries, x in table units.
static inline float interpolate(const float *t, int size, float x) {
    x = x < 0 ? 0 : x > (float)size - 0.001f ? (float)size - 0.001f : x;
    int i = (int)x;
    float f = x - (float)i;
    return t[i] + f * (t[i + 1] - t[i]);
}

// BT.2100 HLG inverse OETF, e in signal units: e^2/3 up to 0.5, (exp((e - c)/a) + b)/12 above, as a
// polynomial in t = 4(e - 0.75).
static inline float hlg_linear(float e) {
    e = e < 0 ? 0 : e > 1 ? 1 : e;
    if (e <= 0.5f) return e * e * (1.0f / 3);
    float t = 4 * (e - 0.75f);
    float p = 0.000528882964817868f;
    p = p * t + 0.002668461487174766f;
    p = p * t + 0.010712490464410758f;
    p = p * t + 0.038291603928521184f;
    p = p * t + 0.10984953764021387f;
    p = p * t + 0.23574271571990987f;
    p = p * t + 0.3372422857363839f;
    p = p * t + 0.2649620632492723f;
    return p;
}

// Steps 2-5: non-linear source R'G'B' (signal units) to linear BT.709 RGB in the gamut, and the
// HLG OOTF's gain (1 for PQ), which the caller applies.
static inline float linear_pixel(const reel_tonemap *m, float r, float g, float b, float rgb[3]) {
    float gain = 1;
    if (m->hlg) {
        r = hlg_linear(r);
        g = hlg_linear(g);
        b = hlg_linear(b);
        float ys = m->luminance[0] * r + m->luminance[1] * g + m->luminance[2] * b;
        gain = OOTF_SCALE * power(ys, OOTF_POWER);
    } else {
        r = interpolate(m->eotf, TABLE, r * TABLE);
        g = interpolate(m->eotf, TABLE, g * TABLE);
        b = interpolate(m->eotf, TABLE, b * TABLE);
    }
    const float *k = m->gamut;
    float R = k[0] * r + k[1] * g + k[2] * b;
    float G = k[3] * r + k[4] * g + k[5] * b;
    float B = k[6] * r + k[7] * g + k[8] * b;
    float y = KR * R + KG * G + KB * B;
    float low = fminf(R, fminf(G, B));
    if (low < 0) {
        float t = y > 0 ? y / (y - low) : 0;
        R = y + t * (R - y);
        G = y + t * (G - y);
        B = y + t * (B - y);
    }
    rgb[0] = R;
    rgb[1] = G;
    rgb[2] = B;
    return gain;
}

// Non-linear source R'G'B' (signal units) to non-linear BT.709 R'G'B' (0...1).
static inline void map_pixel(const reel_tonemap *m, float r, float g, float b, float out[3]) {
    float rgb[3];
    float gain = linear_pixel(m, r, g, b, rgb);
    float high = fmaxf(rgb[0], fmaxf(rgb[1], rgb[2])) * gain;
    float scale = gain;
    if (high > m->knee) {
        float factor = interpolate(m->rolloff, ROLL, (sqrtf(high) - m->root) * m->inverse_step);
        scale = gain * fminf(factor, 1 / high);
    }
    out[0] = power(rgb[0] * scale, ENCODE_POWER);
    out[1] = power(rgb[1] * scale, ENCODE_POWER);
    out[2] = power(rgb[2] * scale, ENCODE_POWER);
}

// Makes the roll-off for pictures whose peak is `peak` (reference white = 1) and the grey table.
static void make_curve(reel_tonemap *m, double peak) {
    m->peak = (float)peak;
    if (peak < 1.001) {
        // Nothing brighter than reference white: no roll-off; a brighter channel (a picture brighter
        // than the smoothed peak) is scaled back to 1 with the others.
        m->knee = 1;
        m->root = 1;
        m->inverse_step = ROLL;
        for (int i = 0; i <= ROLL; i++) m->rolloff[i] = 1;
    } else {
        // In PQ units normalised to the peak: reference white at w, the knee at ks; the Hermite
        // spline runs from (ks, ks) with slope 1 to (1, w) with slope END_SLOPE.
        double top = pq_inverse_eotf(peak * 203), w = pq_inverse_eotf(203) / top;
        double ks = KNEE_SLOPE * w - (KNEE_SLOPE - 1), span = 1 - ks;
        double knee = pq_eotf(ks * top) / 203, root = sqrt(knee), step = (sqrt(peak) - root) / ROLL;
        m->knee = (float)knee;
        m->root = (float)root;
        m->inverse_step = (float)(1 / step);
        for (int i = 0; i <= ROLL; i++) {
            double r = root + step * i, x = r * r, t = (pq_inverse_eotf(x * 203) / top - ks) / span;
            t = t < 0 ? 0 : t > 1 ? 1 : t;
            double t2 = t * t, t3 = t2 * t;
            double y = (2 * t3 - 3 * t2 + 1) * ks + (t3 - 2 * t2 + t) * span + (-2 * t3 + 3 * t2) * w
                       + (t3 - t2) * span * END_SLOPE;
            m->rolloff[i] = (float)(pq_eotf(y * top) / 203 / x);
        }
    }
    for (int code = 0; code < 1024; code++) {
        float signal = ((float)code - 64) / 876, out[3];
        map_pixel(m, signal, signal, signal, out);
        m->grey[code] = KR * out[0] + KG * out[1] + KB * out[2];
    }
}

reel_tonemap *reel_tonemap_create(reel_tonemap_transfer transfer, double peak_luminance, int bt2020_primaries) {
    if (transfer != REEL_TONEMAP_HLG && transfer != REEL_TONEMAP_PQ) return NULL;
    reel_tonemap *m = aligned_alloc(64, (sizeof(reel_tonemap) + 63) / 64 * 64);
    if (!m) return NULL;
    memset(m, 0, sizeof *m);
    m->hlg = transfer == REEL_TONEMAP_HLG;
    if (!(peak_luminance >= 100)) peak_luminance = peak_luminance > 0 ? 100 : 1000;
    if (peak_luminance > 10000) peak_luminance = 10000;
    m->ceiling = (float)(peak_luminance / 203.0);
    for (int i = 0; i <= TABLE; i++) {
        double s = (double)i / TABLE;
        m->eotf[i] = (float)(pq_eotf(s) / 203.0);
    }
    static const float bt2020_to_bt709[9] = {
        1.6604910f, -0.5876411f, -0.0728499f, -0.1245505f, 1.1328999f, -0.0083494f, -0.0181508f, -0.1005789f, 1.1187297f,
    };
    static const float identity[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    memcpy(m->gamut, bt2020_primaries ? bt2020_to_bt709 : identity, sizeof m->gamut);
    static const float y2020[3] = {0.2627f, 0.6780f, 0.0593f}, y709[3] = {KR, KG, KB};
    memcpy(m->luminance, bt2020_primaries ? y2020 : y709, sizeof m->luminance);
    m->level = -1;
    m->curve_level = -1;
    make_curve(m, fmin(m->ceiling, 1));
    return m;
}

void reel_tonemap_free(reel_tonemap *map) { free(map); }

// Planes and strides (in samples) of a source and a destination picture.
typedef struct {
    const uint16_t *y, *u, *v;
    ptrdiff_t ys, us, vs;
    uint8_t *oy, *ou, *ov;
    ptrdiff_t oys, ous, ovs;
    int width, height;
} planes;

// Columns from x0 (even) to the end.
static void map_c(const reel_tonemap *m, const planes *p, int x0) {
    const float ky = 1.0f / 876, kc = 1.0f / 896;
    for (int cy = 0; cy < p->height / 2; cy++) {
        for (int cx = x0 / 2; cx < p->width / 2; cx++) {
            float cb = ((float)p->u[cy * p->us + cx] - 512) * kc, cr = ((float)p->v[cy * p->vs + cx] - 512) * kc;
            int codes[4], sum = 0;
            float grey = 0;
            for (int k = 0; k < 4; k++) {
                int code = p->y[(2 * cy + (k >> 1)) * p->ys + 2 * cx + (k & 1)] & 1023;
                codes[k] = code;
                sum += code;
                grey += m->grey[code];
            }
            float luma = ((float)sum * 0.25f - 64) * ky, out[3];
            map_pixel(m, luma + CR_R * cr, luma + CB_G * cb + CR_G * cr, luma + CB_B * cb, out);
            float block = KR * out[0] + KG * out[1] + KB * out[2] - grey * 0.25f;
            for (int k = 0; k < 4; k++) {
                uint8_t *o = p->oy + (2 * cy + (k >> 1)) * p->oys + 2 * cx + (k & 1);
                *o = (uint8_t)clamp_byte(16 + 219 * (block + m->grey[codes[k]]));
            }
            float y = KR * out[0] + KG * out[1] + KB * out[2];
            p->ou[cy * p->ous + cx] = (uint8_t)clamp_byte(128 + 224 * (out[2] - y) / CB_DIV);
            p->ov[cy * p->ovs + cx] = (uint8_t)clamp_byte(128 + 224 * (out[0] - y) / CR_DIV);
        }
    }
}

// The picture's peak: the 99.5th percentile of the largest channel's light (the display's, BT.709
// primaries, reference white = 1) over about SAMPLES blocks on an even grid (the last row and column
// included), each block's mean luma with its chroma; as a code of HISTOGRAM, sqrt(light / ceiling).
static int measure(const reel_tonemap *m, const planes *p) {
    uint32_t histogram[HISTOGRAM + 1] = {0};
    const float ky = 1.0f / 876, kc = 1.0f / 896, toCode = HISTOGRAM / sqrtf(m->ceiling);
    int blocksWide = p->width / 2, blocksHigh = p->height / 2, count = 0;
    int stride = (int)ceil(sqrt((double)blocksWide * blocksHigh / SAMPLES));
    for (int cy = (blocksHigh - 1) % stride; cy < blocksHigh; cy += stride) {
        const uint16_t *row0 = p->y + 2 * cy * p->ys, *row1 = row0 + p->ys;
        for (int cx = (blocksWide - 1) % stride; cx < blocksWide; cx += stride) {
            int sum = (row0[2 * cx] & 1023) + (row0[2 * cx + 1] & 1023);
            sum += (row1[2 * cx] & 1023) + (row1[2 * cx + 1] & 1023);
            float luma = ((float)sum * 0.25f - 64) * ky, rgb[3];
            float cb = ((float)p->u[cy * p->us + cx] - 512) * kc, cr = ((float)p->v[cy * p->vs + cx] - 512) * kc;
            float gain = linear_pixel(m, luma + CR_R * cr, luma + CB_G * cb + CR_G * cr, luma + CB_B * cb, rgb);
            float high = fmaxf(rgb[0], fmaxf(rgb[1], rgb[2])) * gain;
            int code = (int)(sqrtf(fmaxf(high, 0)) * toCode + 0.5f);
            histogram[code > HISTOGRAM ? HISTOGRAM : code]++;
            count++;
        }
    }
    int code = HISTOGRAM;
    for (int above = 0; code > 0; code--) {
        above += (int)histogram[code];
        if (above > count / OUTLIERS) break;
    }
    return code;
}

// Measures the picture, moves the smoothed peak toward it and remakes the curve when that moved.
static void follow(reel_tonemap *m, const planes *p) {
    float code = (float)measure(m, p);
    if (m->level < 0) {
        m->level = code;
    } else {
        m->level += (code - m->level) * (code > m->level ? RISE : FALL);
    }
    float level = roundf(m->level * 4) / 4;
    if (level == m->curve_level) return;
    m->curve_level = level;
    double root = level / HISTOGRAM;
    make_curve(m, fmax(1, root * root * m->ceiling));
}

// ---- AVX2 + FMA -----------------------------------------------------------------------------------

#if REEL_HAVE_AVX2_PATH
#define AVX2 __attribute__((target("avx2,fma")))

// Linear interpolation in a table of `size` + 1 entries, x in table units.
AVX2 static inline __m256 interpolate8(const float *t, int size, __m256 x) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_setzero_ps()), _mm256_set1_ps((float)size - 0.001f));
    __m256 f = _mm256_floor_ps(x);
    __m256i i = _mm256_cvttps_epi32(f);
    __m256 a = _mm256_i32gather_ps(t, i, 4), b = _mm256_i32gather_ps(t + 1, i, 4);
    return _mm256_fmadd_ps(_mm256_sub_ps(x, f), _mm256_sub_ps(b, a), a);
}

// power() for 8 values.
AVX2 static inline __m256 power8(__m256 x, float p) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(TINY)), _mm256_set1_ps(1));
    __m256i bits = _mm256_castps_si256(x);
    __m256 exponent = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(bits, 23), _mm256_set1_epi32(127)));
    __m256 t = _mm256_sub_ps(
        _mm256_castsi256_ps(
            _mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi32(0x007fffff)), _mm256_set1_epi32(0x3f800000))),
        _mm256_set1_ps(1));
    __m256 l = _mm256_set1_ps(LOG2_C5);
    l = _mm256_fmadd_ps(l, t, _mm256_set1_ps(LOG2_C4));
    l = _mm256_fmadd_ps(l, t, _mm256_set1_ps(LOG2_C3));
    l = _mm256_fmadd_ps(l, t, _mm256_set1_ps(LOG2_C2));
    l = _mm256_fmadd_ps(l, t, _mm256_set1_ps(LOG2_C1));
    l = _mm256_fmadd_ps(l, t, _mm256_set1_ps(LOG2_C0));
    __m256 y = _mm256_mul_ps(_mm256_set1_ps(p), _mm256_add_ps(exponent, l));
    __m256 n = _mm256_floor_ps(y), f = _mm256_sub_ps(y, n);
    __m256 e = _mm256_set1_ps(EXP2_C4);
    e = _mm256_fmadd_ps(e, f, _mm256_set1_ps(EXP2_C3));
    e = _mm256_fmadd_ps(e, f, _mm256_set1_ps(EXP2_C2));
    e = _mm256_fmadd_ps(e, f, _mm256_set1_ps(EXP2_C1));
    e = _mm256_fmadd_ps(e, f, _mm256_set1_ps(EXP2_C0));
    __m256i scale = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(e, _mm256_castsi256_ps(scale));
}

AVX2 static inline __m256 hlg_linear8(__m256 e) {
    e = _mm256_min_ps(_mm256_max_ps(e, _mm256_setzero_ps()), _mm256_set1_ps(1));
    __m256 low = _mm256_mul_ps(_mm256_mul_ps(e, e), _mm256_set1_ps(1.0f / 3));
    __m256 t = _mm256_mul_ps(_mm256_sub_ps(e, _mm256_set1_ps(0.75f)), _mm256_set1_ps(4));
    __m256 p = _mm256_set1_ps(0.000528882964817868f);
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.002668461487174766f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.010712490464410758f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.038291603928521184f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.10984953764021387f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.23574271571990987f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.3372422857363839f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.2649620632492723f));
    return _mm256_blendv_ps(low, p, _mm256_cmp_ps(e, _mm256_set1_ps(0.5f), _CMP_GT_OQ));
}

AVX2 static inline __m256 weigh8(const float *w, __m256 r, __m256 g, __m256 b) {
    return _mm256_fmadd_ps(
        _mm256_set1_ps(w[0]), r, _mm256_fmadd_ps(_mm256_set1_ps(w[1]), g, _mm256_mul_ps(_mm256_set1_ps(w[2]), b)));
}

// map_pixel for 8 pixels.
AVX2 static inline void map_pixel8(const reel_tonemap *m, __m256 r, __m256 g, __m256 b, __m256 out[3]) {
    const __m256 zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1), table = _mm256_set1_ps(TABLE);
    __m256 gain = one;
    if (m->hlg) {
        r = hlg_linear8(r);
        g = hlg_linear8(g);
        b = hlg_linear8(b);
        __m256 ys = weigh8(m->luminance, r, g, b);
        gain = _mm256_mul_ps(_mm256_set1_ps(OOTF_SCALE), power8(ys, OOTF_POWER));
    } else {
        r = interpolate8(m->eotf, TABLE, _mm256_mul_ps(r, table));
        g = interpolate8(m->eotf, TABLE, _mm256_mul_ps(g, table));
        b = interpolate8(m->eotf, TABLE, _mm256_mul_ps(b, table));
    }
    static const float bt709[3] = {KR, KG, KB};
    __m256 R = weigh8(m->gamut, r, g, b), G = weigh8(m->gamut + 3, r, g, b), B = weigh8(m->gamut + 6, r, g, b);
    __m256 y = weigh8(bt709, R, G, B);
    __m256 low = _mm256_min_ps(R, _mm256_min_ps(G, B));
    __m256 negative = _mm256_cmp_ps(low, zero, _CMP_LT_OQ);
    if (_mm256_movemask_ps(negative)) {
        __m256 t = _mm256_div_ps(y, _mm256_sub_ps(y, low));
        t = _mm256_and_ps(t, _mm256_cmp_ps(y, zero, _CMP_GT_OQ));
        t = _mm256_blendv_ps(one, t, negative);
        R = _mm256_fmadd_ps(t, _mm256_sub_ps(R, y), y);
        G = _mm256_fmadd_ps(t, _mm256_sub_ps(G, y), y);
        B = _mm256_fmadd_ps(t, _mm256_sub_ps(B, y), y);
    }
    __m256 high = _mm256_mul_ps(_mm256_max_ps(R, _mm256_max_ps(G, B)), gain);
    __m256 over = _mm256_cmp_ps(high, _mm256_set1_ps(m->knee), _CMP_GT_OQ);
    __m256 scale = gain;
    if (_mm256_movemask_ps(over)) {
        __m256 at = _mm256_mul_ps(
            _mm256_sub_ps(_mm256_sqrt_ps(high), _mm256_set1_ps(m->root)), _mm256_set1_ps(m->inverse_step));
        __m256 factor = _mm256_min_ps(interpolate8(m->rolloff, ROLL, at), _mm256_div_ps(one, high));
        scale = _mm256_blendv_ps(gain, _mm256_mul_ps(gain, factor), over);
    }
    out[0] = power8(_mm256_mul_ps(R, scale), ENCODE_POWER);
    out[1] = power8(_mm256_mul_ps(G, scale), ENCODE_POWER);
    out[2] = power8(_mm256_mul_ps(B, scale), ENCODE_POWER);
}

// 16 columns (8 blocks) of two rows at a time, up to the last multiple of 16; map_c does the rest.
AVX2 static void map_avx2(const reel_tonemap *m, const planes *p) {
    const __m256 ky = _mm256_set1_ps(1.0f / 876), kc = _mm256_set1_ps(1.0f / 896);
    const __m256 c512 = _mm256_set1_ps(512);
    const __m256i low16 = _mm256_set1_epi32(0xffff), codeMask = _mm256_set1_epi32(1023);
    const __m256i zero = _mm256_setzero_si256(), top = _mm256_set1_epi32(255);
    static const float bt709[3] = {KR, KG, KB};
    const int vectorWidth = p->width & ~15;
    for (int cy = 0; cy < p->height / 2; cy++) {
        const uint16_t *rows[2] = {p->y + 2 * cy * p->ys, p->y + (2 * cy + 1) * p->ys};
        uint8_t *outRows[2] = {p->oy + 2 * cy * p->oys, p->oy + (2 * cy + 1) * p->oys};
        for (int x = 0; x < vectorWidth; x += 16) {
            // Lane j is block j: columns 2j and 2j+1 of both rows, chroma site j.
            __m256i codes[4];
            for (int r = 0; r < 2; r++) {
                __m256i pairs = _mm256_loadu_si256((const void *)(rows[r] + x));
                codes[2 * r] = _mm256_and_si256(_mm256_and_si256(pairs, low16), codeMask);
                codes[2 * r + 1] = _mm256_and_si256(_mm256_srli_epi32(pairs, 16), codeMask);
            }
            __m256i sum = _mm256_add_epi32(_mm256_add_epi32(codes[0], codes[1]), _mm256_add_epi32(codes[2], codes[3]));
            __m256 grey[4], greySum = _mm256_setzero_ps();
            for (int k = 0; k < 4; k++) {
                grey[k] = _mm256_i32gather_ps(m->grey, codes[k], 4);
                greySum = _mm256_add_ps(greySum, grey[k]);
            }
            __m256 luma = _mm256_mul_ps(
                _mm256_fmsub_ps(_mm256_cvtepi32_ps(sum), _mm256_set1_ps(0.25f), _mm256_set1_ps(64)), ky);
            __m256 cb = _mm256_mul_ps(
                _mm256_sub_ps(
                    _mm256_cvtepi32_ps(_mm256_cvtepu16_epi32(_mm_loadu_si128((const void *)(p->u + cy * p->us + x / 2)))),
                    c512),
                kc);
            __m256 cr = _mm256_mul_ps(
                _mm256_sub_ps(
                    _mm256_cvtepi32_ps(_mm256_cvtepu16_epi32(_mm_loadu_si128((const void *)(p->v + cy * p->vs + x / 2)))),
                    c512),
                kc);
            __m256 out[3];
            map_pixel8(
                m, _mm256_fmadd_ps(cr, _mm256_set1_ps(CR_R), luma),
                _mm256_fmadd_ps(cb, _mm256_set1_ps(CB_G), _mm256_fmadd_ps(cr, _mm256_set1_ps(CR_G), luma)),
                _mm256_fmadd_ps(cb, _mm256_set1_ps(CB_B), luma), out);
            __m256 y = weigh8(bt709, out[0], out[1], out[2]);
            __m256 block = _mm256_fnmadd_ps(greySum, _mm256_set1_ps(0.25f), y);
            __m256i pixel[4];
            for (int k = 0; k < 4; k++) {
                __m256 value = _mm256_fmadd_ps(_mm256_add_ps(block, grey[k]), _mm256_set1_ps(219), _mm256_set1_ps(16));
                pixel[k] = _mm256_min_epi32(_mm256_max_epi32(_mm256_cvtps_epi32(value), zero), top);
            }
            for (int r = 0; r < 2; r++) {
                // Even and odd columns back into one row of 16 bytes.
                __m256i pairs = _mm256_or_si256(pixel[2 * r], _mm256_slli_epi32(pixel[2 * r + 1], 16));
                __m256i bytes = _mm256_permute4x64_epi64(_mm256_packus_epi16(pairs, zero), 0xd8);
                _mm_storeu_si128((void *)(outRows[r] + x), _mm256_castsi256_si128(bytes));
            }
            __m256i cbOut = _mm256_cvtps_epi32(
                _mm256_fmadd_ps(_mm256_sub_ps(out[2], y), _mm256_set1_ps(224 / CB_DIV), _mm256_set1_ps(128)));
            __m256i crOut = _mm256_cvtps_epi32(
                _mm256_fmadd_ps(_mm256_sub_ps(out[0], y), _mm256_set1_ps(224 / CR_DIV), _mm256_set1_ps(128)));
            // [cb0-3 cr0-3 | cb4-7 cr4-7] as bytes in the low words of each lane, then cb and cr apart.
            __m256i chroma = _mm256_packus_epi16(_mm256_packus_epi32(cbOut, crOut), zero);
            chroma = _mm256_permutevar8x32_epi32(chroma, _mm256_setr_epi32(0, 4, 1, 5, 2, 3, 6, 7));
            _mm_storel_epi64((void *)(p->ou + cy * p->ous + x / 2), _mm256_castsi256_si128(chroma));
            _mm_storel_epi64((void *)(p->ov + cy * p->ovs + x / 2), _mm_srli_si128(_mm256_castsi256_si128(chroma), 8));
        }
    }
    if (vectorWidth < p->width) map_c(m, p, vectorWidth);
}
#endif

int reel_tonemap_has_avx2(void) {
#if REEL_HAVE_AVX2_PATH
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

int reel_tonemap_apply(reel_tonemap *map, const AVFrame *source, AVFrame *destination, int vectorized) {
    if (!map || !source || !destination) return AVERROR(EINVAL);
    if (source->format != AV_PIX_FMT_YUV420P10LE || destination->format != AV_PIX_FMT_YUV420P) return AVERROR(EINVAL);
    if (source->width != destination->width || source->height != destination->height) return AVERROR(EINVAL);
    if (source->width <= 0 || source->height <= 0 || source->width % 2 || source->height % 2) return AVERROR(EINVAL);
    for (int i = 0; i < 3; i++) {
        if (!source->data[i] || !destination->data[i]) return AVERROR(EINVAL);
        if (source->linesize[i] % 2) return AVERROR(EINVAL);
    }
    planes p = {
        .y = (const uint16_t *)source->data[0],
        .u = (const uint16_t *)source->data[1],
        .v = (const uint16_t *)source->data[2],
        .ys = source->linesize[0] / 2,
        .us = source->linesize[1] / 2,
        .vs = source->linesize[2] / 2,
        .oy = destination->data[0],
        .ou = destination->data[1],
        .ov = destination->data[2],
        .oys = destination->linesize[0],
        .ous = destination->linesize[1],
        .ovs = destination->linesize[2],
        .width = source->width,
        .height = source->height,
    };
    follow(map, &p);
#if REEL_HAVE_AVX2_PATH
    if (vectorized && reel_tonemap_has_avx2()) {
        map_avx2(map, &p);
        return 0;
    }
#else
    (void)vectorized;
#endif
    map_c(map, &p, 0);
    return 0;
}

double reel_tonemap_peak(const reel_tonemap *map) { return map ? map->peak * 203.0 : 0; }
