// HDR to SDR tone mapping: one pass over each 2x2 block of a 10-bit BT.2020 YCbCr 4:2:0 picture
// (already scaled to the output size by swscale), writing 8-bit BT.709 limited-range YCbCr 4:2:0.
//
// For each pixel:
//  1. YCbCr (BT.2020 non-constant luminance, limited range) to non-linear R'G'B'.
//  2. Linear light. PQ (display-referred): the ST 2084 EOTF, from a table (interpolated), in units
//     of HDR reference white (203 cd/m2, ITU-R BT.2408). HLG (scene-referred): the inverse OETF of
//     BT.2100 (exact square below 0.5, a degree-7 polynomial above: within 2e-6 of the exponential).
//  3. HLG only: BT.2100's OOTF for a 1000 cd/m2 display, applied to the luminance, not to each
//     channel: gain = 1000/203 * Ys^(1.2 - 1), so the hue stays (the gain comes from a table over
//     sqrt(Ys)). Reference white (75 % HLG) lands on 1.0, as BT.2408 says.
//  4. BT.2020 to BT.709 primaries (a 3x3 matrix on linear light; identity for BT.709 sources).
//  5. Gamut: a colour with a negative channel is moved toward the grey of the same luminance just
//     far enough to fit, which keeps its hue and luminance and gives up only the saturation BT.709
//     cannot show.
//  6. Highlights: above 85 % of reference white the largest channel rolls off (a Mobius curve, as
//     FFmpeg's tonemap=mobius) so that the source's peak lands on SDR white; every channel is
//     scaled by the same factor, so the hue stays. Below the knee nothing changes: content graded
//     around reference white comes out as it was.
//  7. The inverse of BT.1886 (gamma 2.4), display-referred like BT.2408's convention and zimg's; the
//     BT.709 OETF would brighten mid-grey (126 -> 109 in tests).
//  8. Luma from each pixel's R'G'B', chroma from the mean R'G'B' of the block (4:2:0).
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
// Where the highlight roll-off starts, in units of reference white.
#define KNEE 0.85

struct reel_tonemap {
    float eotf[TABLE + 1];    // PQ: signal -> light, reference white = 1
    float ootf[TABLE + 1];    // HLG: sqrt(Ys) -> OOTF gain
    float encode[TABLE + 1];  // sqrt(L) -> L^(1/2.4)
    float gamut[9];           // linear source RGB -> linear BT.709 RGB, row-major
    float luminance[3];       // the source primaries' luminance weights (for the OOTF)
    float knee;               // the roll-off starts above this (infinity: no roll-off)
    float a, b, c;            // above the knee, x -> c * (x + a) / (x + b)
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

static double pq_eotf(double e) {
    const double m1 = 2610.0 / 16384, m2 = 2523.0 / 4096 * 128;
    const double c1 = 3424.0 / 4096, c2 = 2413.0 / 4096 * 32, c3 = 2392.0 / 4096 * 32;
    if (e <= 0) return 0;
    double p = pow(e, 1 / m2);
    double n = p - c1;
    if (n < 0) n = 0;
    return 10000 * pow(n / (c2 - c3 * p), 1 / m1);
}

reel_tonemap *reel_tonemap_create(reel_tonemap_transfer transfer, double peak_luminance, int bt2020_primaries) {
    if (transfer != REEL_TONEMAP_HLG && transfer != REEL_TONEMAP_PQ) return NULL;
    reel_tonemap *m = aligned_alloc(64, (sizeof(reel_tonemap) + 63) / 64 * 64);
    if (!m) return NULL;
    memset(m, 0, sizeof *m);
    m->hlg = transfer == REEL_TONEMAP_HLG;
    if (!(peak_luminance >= 100)) peak_luminance = peak_luminance > 0 ? 100 : 1000;
    if (peak_luminance > 10000) peak_luminance = 10000;
    const double peak = peak_luminance / 203.0, knee = KNEE;
    if (peak > knee) {
        // FFmpeg's mobius (vf_tonemap.c): continuous with slope 1 at the knee, peak -> 1.
        double a = -knee * knee * (peak - 1) / (knee * knee - 2 * knee + peak);
        double b = (knee * knee - 2 * knee * peak + peak) / fmax(peak - 1, 1e-6);
        m->a = (float)a;
        m->b = (float)b;
        m->c = (float)((b * b + 2 * b * knee + knee * knee) / (b - a));
        m->knee = (float)knee;
    } else {
        // Nothing in the source is brighter than the knee: no roll-off (SDR white clips).
        m->knee = INFINITY;
    }
    for (int i = 0; i <= TABLE; i++) {
        double s = (double)i / TABLE;
        m->eotf[i] = (float)(pq_eotf(s) / 203.0);
        m->ootf[i] = (float)(1000.0 / 203.0 * pow(s * s, 1.2 - 1));
        m->encode[i] = (float)pow(s * s, 1 / 2.4);
    }
    static const float bt2020_to_bt709[9] = {
        1.6604910f, -0.5876411f, -0.0728499f, -0.1245505f, 1.1328999f, -0.0083494f, -0.0181508f, -0.1005789f, 1.1187297f,
    };
    static const float identity[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    memcpy(m->gamut, bt2020_primaries ? bt2020_to_bt709 : identity, sizeof m->gamut);
    static const float y2020[3] = {0.2627f, 0.6780f, 0.0593f}, y709[3] = {KR, KG, KB};
    memcpy(m->luminance, bt2020_primaries ? y2020 : y709, sizeof m->luminance);
    return m;
}

void reel_tonemap_free(reel_tonemap *map) { free(map); }

// ---- plain C --------------------------------------------------------------------------------------

static inline int clamp_byte(float v) {
    int i = (int)(v + 0.5f);
    return i < 0 ? 0 : i > 255 ? 255 : i;
}

// Nearest entry for x in table units.
static inline float lookup(const float *t, float x) {
    x = x < 0 ? 0 : x > TABLE ? TABLE : x;
    return t[(int)(x + 0.5f)];
}

// Linear interpolation for x in table units.
static inline float interpolate(const float *t, float x) {
    x = x < 0 ? 0 : x > TABLE - 0.001f ? TABLE - 0.001f : x;
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

// Non-linear source R'G'B' (signal units) to non-linear BT.709 R'G'B' (0...1).
static inline void map_pixel(const reel_tonemap *m, float r, float g, float b, float out[3]) {
    float gain = 1;
    if (m->hlg) {
        r = hlg_linear(r);
        g = hlg_linear(g);
        b = hlg_linear(b);
        float ys = m->luminance[0] * r + m->luminance[1] * g + m->luminance[2] * b;
        gain = lookup(m->ootf, sqrtf(fmaxf(ys, 0)) * TABLE);
    } else {
        r = interpolate(m->eotf, r * TABLE);
        g = interpolate(m->eotf, g * TABLE);
        b = interpolate(m->eotf, b * TABLE);
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
    float high = fmaxf(R, fmaxf(G, B)) * gain;
    float scale = gain;
    if (high > m->knee) scale = gain * (m->c * (high + m->a)) / ((high + m->b) * high);
    out[0] = lookup(m->encode, sqrtf(fmaxf(R * scale, 0)) * TABLE);
    out[1] = lookup(m->encode, sqrtf(fmaxf(G * scale, 0)) * TABLE);
    out[2] = lookup(m->encode, sqrtf(fmaxf(B * scale, 0)) * TABLE);
}

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
            float dr = CR_R * cr, dg = CB_G * cb + CR_G * cr, db = CB_B * cb;
            float sr = 0, sg = 0, sb = 0;
            for (int k = 0; k < 4; k++) {
                int x = 2 * cx + (k & 1), y = 2 * cy + (k >> 1);
                float luma = ((float)p->y[y * p->ys + x] - 64) * ky;
                float o[3];
                map_pixel(m, luma + dr, luma + dg, luma + db, o);
                p->oy[y * p->oys + x] = (uint8_t)clamp_byte(16 + 219 * (KR * o[0] + KG * o[1] + KB * o[2]));
                sr += o[0];
                sg += o[1];
                sb += o[2];
            }
            float luma = KR * sr + KG * sg + KB * sb;
            p->ou[cy * p->ous + cx] = (uint8_t)clamp_byte(128 + 224 * (sb - luma) / (4 * CB_DIV));
            p->ov[cy * p->ovs + cx] = (uint8_t)clamp_byte(128 + 224 * (sr - luma) / (4 * CR_DIV));
        }
    }
}

// ---- AVX2 + FMA -----------------------------------------------------------------------------------

#if REEL_HAVE_AVX2_PATH
#define AVX2 __attribute__((target("avx2,fma")))

// Linear interpolation in a table, x in table units.
AVX2 static inline __m256 interpolate8(const float *t, __m256 x) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_setzero_ps()), _mm256_set1_ps(TABLE - 0.001f));
    __m256 f = _mm256_floor_ps(x);
    __m256i i = _mm256_cvttps_epi32(f);
    __m256 a = _mm256_i32gather_ps(t, i, 4), b = _mm256_i32gather_ps(t + 1, i, 4);
    return _mm256_fmadd_ps(_mm256_sub_ps(x, f), _mm256_sub_ps(b, a), a);
}

// Nearest entry, x in table units.
AVX2 static inline __m256 lookup8(const float *t, __m256 x) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_setzero_ps()), _mm256_set1_ps(TABLE));
    return _mm256_i32gather_ps(t, _mm256_cvtps_epi32(x), 4);
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
        gain = lookup8(m->ootf, _mm256_mul_ps(_mm256_sqrt_ps(_mm256_max_ps(ys, zero)), table));
    } else {
        r = interpolate8(m->eotf, _mm256_mul_ps(r, table));
        g = interpolate8(m->eotf, _mm256_mul_ps(g, table));
        b = interpolate8(m->eotf, _mm256_mul_ps(b, table));
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
        __m256 ratio = _mm256_div_ps(
            _mm256_mul_ps(_mm256_set1_ps(m->c), _mm256_add_ps(high, _mm256_set1_ps(m->a))),
            _mm256_mul_ps(_mm256_add_ps(high, _mm256_set1_ps(m->b)), high));
        scale = _mm256_blendv_ps(gain, _mm256_mul_ps(gain, ratio), over);
    }
    out[0] = lookup8(m->encode, _mm256_mul_ps(_mm256_sqrt_ps(_mm256_max_ps(_mm256_mul_ps(R, scale), zero)), table));
    out[1] = lookup8(m->encode, _mm256_mul_ps(_mm256_sqrt_ps(_mm256_max_ps(_mm256_mul_ps(G, scale), zero)), table));
    out[2] = lookup8(m->encode, _mm256_mul_ps(_mm256_sqrt_ps(_mm256_max_ps(_mm256_mul_ps(B, scale), zero)), table));
}

// 8 columns (4 chroma sites) of two rows at a time, up to the last multiple of 8; map_c does the rest.
AVX2 static void map_avx2(const reel_tonemap *m, const planes *p) {
    const __m256 ky = _mm256_set1_ps(1.0f / 876), kc = _mm256_set1_ps(1.0f / 896);
    const __m256 y64 = _mm256_set1_ps(64), c512 = _mm256_set1_ps(512);
    const __m256 crR = _mm256_set1_ps(CR_R), cbG = _mm256_set1_ps(CB_G), crG = _mm256_set1_ps(CR_G);
    const __m256 cbB = _mm256_set1_ps(CB_B);
    const __m256i twice = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
    static const float bt709[3] = {KR, KG, KB};
    const int vectorWidth = p->width & ~7;
    for (int cy = 0; cy < p->height / 2; cy++) {
        const uint16_t *rows[2] = {p->y + 2 * cy * p->ys, p->y + (2 * cy + 1) * p->ys};
        uint8_t *outRows[2] = {p->oy + 2 * cy * p->oys, p->oy + (2 * cy + 1) * p->oys};
        for (int x = 0; x < vectorWidth; x += 8) {
            __m256i u = _mm256_cvtepu16_epi32(_mm_loadl_epi64((const void *)(p->u + cy * p->us + x / 2)));
            __m256i v = _mm256_cvtepu16_epi32(_mm_loadl_epi64((const void *)(p->v + cy * p->vs + x / 2)));
            __m256 cb = _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_permutevar8x32_epi32(u, twice)), c512), kc);
            __m256 cr = _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_permutevar8x32_epi32(v, twice)), c512), kc);
            __m256 dr = _mm256_mul_ps(cr, crR), dg = _mm256_fmadd_ps(cb, cbG, _mm256_mul_ps(cr, crG));
            __m256 db = _mm256_mul_ps(cb, cbB);
            __m256 sum[3] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
            __m256i luma[2];
            for (int r = 0; r < 2; r++) {
                __m256i raw = _mm256_cvtepu16_epi32(_mm_loadu_si128((const void *)(rows[r] + x)));
                __m256 y = _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(raw), y64), ky);
                __m256 o[3];
                map_pixel8(m, _mm256_add_ps(y, dr), _mm256_add_ps(y, dg), _mm256_add_ps(y, db), o);
                __m256 out = weigh8(bt709, o[0], o[1], o[2]);
                luma[r] = _mm256_cvtps_epi32(_mm256_fmadd_ps(out, _mm256_set1_ps(219), _mm256_set1_ps(16)));
                for (int c = 0; c < 3; c++) sum[c] = _mm256_add_ps(sum[c], o[c]);
            }
            // Two rows of 8 bytes: pack to 16 then 8 bits (per 128-bit lane), then gather the lanes.
            __m256i packed = _mm256_packus_epi16(_mm256_packus_epi32(luma[0], luma[1]), _mm256_setzero_si256());
            __m128i both = _mm_unpacklo_epi32(_mm256_castsi256_si128(packed), _mm256_extracti128_si256(packed, 1));
            _mm_storel_epi64((void *)(outRows[0] + x), both);
            _mm_storel_epi64((void *)(outRows[1] + x), _mm_srli_si128(both, 8));
            // Pairwise sums of the two rows' sums: the 4 blocks' totals.
            __m128 block[3];
            for (int c = 0; c < 3; c++) {
                __m256 pairs = _mm256_hadd_ps(sum[c], sum[c]);
                block[c] = _mm256_castps256_ps128(
                    _mm256_permutevar8x32_ps(pairs, _mm256_setr_epi32(0, 1, 4, 5, 0, 1, 4, 5)));
            }
            __m128 y = _mm_fmadd_ps(
                _mm_set1_ps(KR), block[0], _mm_fmadd_ps(_mm_set1_ps(KG), block[1], _mm_mul_ps(_mm_set1_ps(KB), block[2])));
            __m128i cbOut = _mm_cvtps_epi32(
                _mm_fmadd_ps(_mm_sub_ps(block[2], y), _mm_set1_ps(224 / (4 * CB_DIV)), _mm_set1_ps(128)));
            __m128i crOut = _mm_cvtps_epi32(
                _mm_fmadd_ps(_mm_sub_ps(block[0], y), _mm_set1_ps(224 / (4 * CR_DIV)), _mm_set1_ps(128)));
            __m128i chroma = _mm_packus_epi16(_mm_packus_epi32(cbOut, crOut), _mm_setzero_si128());
            int32_t cbBytes = _mm_cvtsi128_si32(chroma), crBytes = _mm_extract_epi32(chroma, 1);
            memcpy(p->ou + cy * p->ous + x / 2, &cbBytes, 4);
            memcpy(p->ov + cy * p->ovs + x / 2, &crBytes, 4);
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

int reel_tonemap_apply(const reel_tonemap *map, const AVFrame *source, AVFrame *destination, int vectorized) {
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
