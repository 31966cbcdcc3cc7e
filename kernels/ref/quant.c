/* quant.c — reference row quantizers and dequantizers for every weight and dot type:
 * ggml's `quantize_row_*_ref` algorithms and block layouts, bit for bit (MXFP4: ggml's layout,
 * plumb's own quantizer, at the end of the file). Not fast, not SIMD.
 *
 * Bit-exactness with ggml holds for every finite input (ggml built without FP contraction).
 * Where ggml's C is undefined we do, with defined arithmetic, what its x86 builds do, and
 * the one deliberate difference is non-finite input. Pinned by conformance/test_quant.c:
 *
 *  - Non-finite input. A block (a super-block of 256 for the K-quants) holding any NaN or
 *    +-Inf is stored as a "NaN block": every scale and min is NaN (f16 0x7e00, or a float
 *    NaN for Q8_K, e = 255 for MXFP4), every quant and bsum is 0. Dequantizing it gives
 *    NaN for every element, and a matmul over it gives NaN, so a poisoned weight or
 *    activation never turns into a plausible number. (ggml folds Inf into a scale and leaks
 *    garbage into the neighbours.)
 *    F32/F16/BF16 convert element by element (NaN stays NaN, Inf stays Inf; F16 overflows
 *    to Inf past 65504).
 *  - Float -> int8 casts. ggml writes `(int8_t)v`, UB when v is NaN or Inf, which happens
 *    when a denormal block scale has an infinite reciprocal. x86 converts those to 0, and
 *    so do we (to_int8); those blocks have a zero f16 scale, so the quants carry no value.
 *  - nearest_int is ggml's 1.5 * 2^23 trick, exact (half to even) for |v| <= 2^22 - 1. Past
 *    that it returns wrapped bits, not UB; we keep them for bit-exactness (every caller
 *    clamps the result to its range), as we keep ggml's modular int -> int8 stores.
 *  - A finite block whose scale overflows f16 stores an infinite scale, as ggml does.
 *  - Q8_K of an all-zero block: ggml leaves bsums unwritten; we store zeros.
 *
 * Round-trip error (conformance/test_quant.c enforces these): rms error over rms(x) on
 * N(0, 1) rows, and the largest error in a block over the block's largest |x| on any data
 * whose block scale is a normal f16. The 32-block and F16/BF16 max bounds follow from the
 * rounding rule; the K-quant ones are measured (worst of 400 seeds: 0.109, 0.056, 0.017), as
 * are Q2_K, Q3_K, IQ4_NL, IQ4_XS (worst of 120 seeds: rms 0.300, 0.152, 0.077, 0.077; max
 * 0.392, 0.246, 0.127, 0.123). For IQ4 the rule gives about half the widest level gap (24,
 * between 89 and 113) over the level the block maximum lands on (~113..127): ~0.1, plus
 * the fit moving d off max / 127.
 *     type  rms    max         type  rms    max         type    rms      max
 *     Q4_0  0.100  0.130       Q8_0  0.0062 0.0045      Q6_K    0.021    0.035
 *     Q4_1  0.090  0.070       Q4_K  0.082  0.150       Q8_K    0.0082   0.0040
 *     Q5_0  0.050  0.065       Q5_K  0.042  0.080       F16     2^-12    2^-11 (relative)
 *     Q5_1  0.045  0.035       Q2_K  0.34   0.50        BF16    2^-9     2^-8  (relative)
 *                              Q3_K  0.17   0.32        IQ4_NL  0.086    0.16
 *                                                       IQ4_XS  0.086    0.16
 *                                                       MXFP4   0.13     0.20 (proved)
 */
#include <math.h>
#include <string.h>

#include "ref.h"

#define F16_NAN   ((pl_f16)0x7e00u)
#define GROUP_EPS 1e-15f /* ggml's GROUP_MAX_EPS: below this a sub-block counts as zero */

static int all_finite(const float *x, int n)
{
    for (int i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

/* Round half to even: v + 1.5 * 2^23 leaves the rounded integer in the low mantissa bits
 * (ggml's nearest_int). Exact for |v| <= 2^22 - 1; beyond, and for NaN/Inf, a defined but
 * meaningless value in [-2^22, 2^22) that callers clamp, as in ggml. */
static int nearest_int(float v)
{
    float t = v + 12582912.f;
    int32_t i;
    memcpy(&i, &t, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

/* int -> int8 keeping the low 8 bits, what ggml's implicit narrowing stores do. */
static int wrap_i8(int v)
{
    const int b = v & 0xff;
    return b >= 128 ? b - 256 : b;
}

/* ggml's `(int8_t)v` for v = x / d + offset: in range it truncates; NaN and +-Inf (from an
 * infinite 1 / d) give 0, as on x86. Finite values never leave [lo, hi] by more than a
 * rounding, and are clamped there. */
static int to_int8(float v, int lo, int hi)
{
    if (!isfinite(v)) return 0;
    if (v <= (float)lo) return lo;
    if (v >= (float)hi) return hi;
    return (int)v;
}

static int imin(int a, int b)
{
    return a < b ? a : b;
}

static int iclamp(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static void put_u32le(uint8_t *p, uint32_t v)
{
    for (int k = 0; k < 4; k++) p[k] = (uint8_t)(v >> (8 * k));
}

static uint32_t get_u32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- F32, F16, BF16 ---------------------------------------------------------------- */

void quantize_row_f32_ref(void *restrict y, const float *restrict x, int64_t n)
{
    memcpy(y, x, (size_t)n * sizeof(float));
}

void dequantize_row_f32_ref(float *restrict y, const void *restrict x, int64_t n)
{
    memcpy(y, x, (size_t)n * sizeof(float));
}

void quantize_row_f16_ref(void *restrict vy, const float *restrict x, int64_t n)
{
    pl_f16 *y = vy;
    for (int64_t i = 0; i < n; i++) y[i] = pl_f32_to_f16(x[i]);
}

void dequantize_row_f16_ref(float *restrict y, const void *restrict vx, int64_t n)
{
    const pl_f16 *x = vx;
    for (int64_t i = 0; i < n; i++) y[i] = pl_f16_to_f32(x[i]);
}

void quantize_row_bf16_ref(void *restrict vy, const float *restrict x, int64_t n)
{
    pl_bf16 *y = vy;
    for (int64_t i = 0; i < n; i++) y[i] = pl_f32_to_bf16(x[i]);
}

void dequantize_row_bf16_ref(float *restrict y, const void *restrict vx, int64_t n)
{
    const pl_bf16 *x = vx;
    for (int64_t i = 0; i < n; i++) y[i] = pl_bf16_to_f32(x[i]);
}

/* ---- 32-element blocks ------------------------------------------------------------- */

/* Value of largest magnitude (the first one on ties), as ggml picks it. */
static float signed_absmax(const float *x, int n)
{
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; j++) {
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    }
    return max;
}

static void min_max(const float *x, int n, float *min, float *max)
{
    float lo = 3.402823466e38f, hi = -3.402823466e38f;
    for (int j = 0; j < n; j++) {
        if (x[j] < lo) lo = x[j];
        if (x[j] > hi) hi = x[j];
    }
    *min = lo;
    *max = hi;
}

/* q4_0: d = max / -8 so that the extreme value maps to q = 0; q = trunc(x/d + 8.5). */
void quantize_row_q4_0_ref(void *restrict vy, const float *restrict x, int64_t n)
{
    pl_block_q4_0 *y = vy;
    for (int64_t i = 0; i < n / PL_QK4_0; i++, x += PL_QK4_0) {
        pl_block_q4_0 *b = &y[i];
        memset(b, 0, sizeof *b);
        if (!all_finite(x, PL_QK4_0)) {
            b->d = F16_NAN;
            continue;
        }
        const float d = signed_absmax(x, PL_QK4_0) / -8;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b->d = pl_f32_to_f16(d);
        for (int j = 0; j < PL_QK4_0 / 2; j++) {
            const int q0 = to_int8(x[j] * id + 8.5f, 0, 15);
            const int q1 = to_int8(x[j + PL_QK4_0 / 2] * id + 8.5f, 0, 15);
            b->qs[j] = (uint8_t)(q0 | q1 << 4);
        }
    }
}

void dequantize_row_q4_0_ref(float *restrict y, const void *restrict vx, int64_t n)
{
    const pl_block_q4_0 *x = vx;
    for (int64_t i = 0; i < n / PL_QK4_0; i++, y += PL_QK4_0) {
        const float d = pl_f16_to_f32(x[i].d);
        for (int j = 0; j < PL_QK4_0 / 2; j++) {
            y[j] = (float)((x[i].qs[j] & 0x0f) - 8) * d;
            y[j + PL_QK4_0 / 2] = (float)((x[i].qs[j] >> 4) - 8) * d;
        }
    }
}

/* q4_1: x = d * q + m with m = min, d = (max - min) / 15, q = trunc((x - min)/d + 0.5). */
void quantize_row_q4_1_ref(void *restrict vy, const float *restrict x, int64_t n)
{
    pl_block_q4_1 *y = vy;
    for (int64_t i = 0; i < n / PL_QK4_1; i++, x += PL_QK4_1) {
        pl_block_q4_1 *b = &y[i];
        memset(b, 0, sizeof *b);
        if (!all_finite(x, PL_QK4_1)) {
            b->d = b->m = F16_NAN;
            continue;
        }
        float min, max;
        min_max(x, PL_QK4_1, &min, &max);
        const float d = (max - min) / 15;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b->d = pl_f32_to_f16(d);
        b->m = pl_f32_to_f16(min);
        for (int j = 0; j < PL_QK4_1 / 2; j++) {
            const int q0 = to_int8((x[j] - min) * id + 0.5f, 0, 15);
            const int q1 = to_int8((x[j + PL_QK4_1 / 2] - min) * id + 0.5f, 0, 15);
            b->qs[j] = (uint8_t)(q0 | q1 << 4);
        }
    }
}

void dequantize_row_q4_1_ref(float *restrict y, const void *restrict vx, int64_t n)
{
    const pl_block_q4_1 *x = vx;
    for (int64_t i = 0; i < n / PL_QK4_1; i++, y += PL_QK4_1) {
        const float d = pl_f16_to_f32(x[i].d);
        const float m = pl_f16_to_f32(x[i].m);
        for (int j = 0; j < PL_QK4_1 / 2; j++) {
            y[j] = (float)(x[i].qs[j] & 0x0f) * d + m;
            y[j + PL_QK4_1 / 2] = (float)(x[i].qs[j] >> 4) * d + m;
        }
    }
}

/* The fifth bit of element j (0..31) of a q5 block lives in bit j of the LE u32 qh. */
static void pack_q5(uint8_t qs[16], uint8_t qh[4], const int q[32])
{
    uint32_t h = 0;
    for (int j = 0; j < 16; j++) {
        qs[j] = (uint8_t)((q[j] & 0x0f) | (q[j + 16] & 0x0f) << 4);
        h |= (uint32_t)(q[j] >> 4 & 1) << j;
        h |= (uint32_t)(q[j + 16] >> 4 & 1) << (j + 16);
    }
    put_u32le(qh, h);
}

static void unpack_q5(int q[32], const uint8_t qs[16], const uint8_t qh[4])
{
    const uint32_t h = get_u32le(qh);
    for (int j = 0; j < 16; j++) {
        q[j] = (qs[j] & 0x0f) | (int)(h >> j & 1) << 4;
        q[j + 16] = (qs[j] >> 4) | (int)(h >> (j + 16) & 1) << 4;
    }
}

/* q5_0: d = max / -16, q = trunc(x/d + 16.5) in 0..31. */
void quantize_row_q5_0_ref(void *restrict vy, const float *restrict x, int64_t n)
{
    pl_block_q5_0 *y = vy;
    for (int64_t i = 0; i < n / PL_QK5_0; i++, x += PL_QK5_0) {
        pl_block_q5_0 *b = &y[i];
        memset(b, 0, sizeof *b);
        if (!all_finite(x, PL_QK5_0)) {
            b->d = F16_NAN;
            continue;
        }
        const float d = signed_absmax(x, PL_QK5_0) / -16;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b->d = pl_f32_to_f16(d);
        int q[PL_QK5_0];
        for (int j = 0; j < PL_QK5_0; j++) q[j] = to_int8(x[j] * id + 16.5f, 0, 31);
        pack_q5(b->qs, b->qh, q);
    }
}

void dequantize_row_q5_0_ref(float *restrict y, const void *restrict vx, int64_t n)
{
    const pl_block_q5_0 *x = vx;
    for (int64_t i = 0; i < n / PL_QK5_0; i++, y += PL_QK5_0) {
        const float d = pl_f16_to_f32(x[i].d);
        int q[PL_QK5_0];
        unpack_q5(q, x[i].qs, x[i].qh);
        for (int j = 0; j < PL_QK5_0; j++) y[j] = (float)(q[j] - 16) * d;
    }
}

/* q5_1: x = d * q + m, d = (max - min) / 31, q = trunc((x - min)/d + 0.5). */
void quantize_row_q5_1_ref(void *restrict vy, const float *restrict x, int64_t n)
{
    pl_block_q5_1 *y = vy;
    for (int64_t i = 0; i < n / PL_QK5_1; i++, x += PL_QK5_1) {
        pl_block_q5_1 *b = &y[i];
        memset(b, 0, sizeof *b);
        if (!all_finite(x, PL_QK5_1)) {
            b->d = b->m = F16_NAN;
            continue;
        }
        float min, max;
        min_max(x, PL_QK5_1, &min, &max);
        const float d = (max - min) / 31;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b->d = pl_f32_to_f16(d);
        b->m = pl_f32_to_f16(min);
        int q[PL_QK5_1];
        for (int j = 0; j < PL_QK5_1; j++) q[j] = to_int8((x[j] - min) * id + 0.5f, 0, 31);
        pack_q5(b->qs, b->qh, q);
    }
}

void dequantize_row_q5_1_ref(float *restrict y, const void *restrict vx, int64_t n)
{
    const pl_block_q5_1 *x = vx;
    for (int64_t i = 0; i < n / PL_QK5_1; i++, y += PL_QK5_1) {
        const float d = pl_f16_to_f32(x[i].d);
        const float m = pl_f16_to_f32(x[i].m);
        int q[PL_QK5_1];
        unpack_q5(q, x[i].qs, x[i].qh);
        for (int j = 0; j < PL_QK5_1; j++) y[j] = (float)q[j] * d + m;
    }
}

/* q8_0: d = amax / 127, q = roundf(x/d). Also the activation dot type of the 32-blocks. */
void quantize_row_q8_0_ref(void *restrict vy, const float *restrict x, int64_t n)
{
    pl_block_q8_0 *y = vy;
    for (int64_t i = 0; i < n / PL_QK8_0; i++, x += PL_QK8_0) {
        pl_block_q8_0 *b = &y[i];
        memset(b, 0, sizeof *b);
        if (!all_finite(x, PL_QK8_0)) {
            b->d = F16_NAN;
            continue;
        }
        float amax = 0.0f;
        for (int j = 0; j < PL_QK8_0; j++) amax = amax > fabsf(x[j]) ? amax : fabsf(x[j]);
        const float d = amax / 127;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b->d = pl_f32_to_f16(d);
        for (int j = 0; j < PL_QK8_0; j++) b->qs[j] = (int8_t)to_int8(roundf(x[j] * id), -128, 127);
    }
}

void dequantize_row_q8_0_ref(float *restrict y, const void *restrict vx, int64_t n)
{
    const pl_block_q8_0 *x = vx;
    for (int64_t i = 0; i < n / PL_QK8_0; i++, y += PL_QK8_0) {
        const float d = pl_f16_to_f32(x[i].d);
        for (int j = 0; j < PL_QK8_0; j++) y[j] = (float)x[i].qs[j] * d;
    }
}

/* ---- K-quants: super-blocks of 256 --------------------------------------------------- */

/* Fits x ~ scale * L + min (min <= 0) with L in 0..nmax, minimising the weighted squared
 * error (use_mad: the weighted absolute error) over nstep + 1 candidate grids
 * iscale = (nmax + rmin + rdelta * is) / (max - min) (ggml's make_qkx2_quants).
 * Returns scale; *neg_min = -min. */
static float fit_scale_min(int n, int nmax, const float *x, const float *w, uint8_t *L,
                           float *neg_min, float rmin, float rdelta, int nstep, int use_mad)
{
    uint8_t Laux[32];
    float min = x[0], max = x[0];
    float sum_w = w[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        memset(L, 0, (size_t)n);
        *neg_min = -min;
        return 0.0f;
    }
    float iscale = (float)nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t)iclamp(nearest_int(iscale * (x[i] - min)), 0, nmax);
        const float diff = scale * (float)L[i] + min - x[i];
        best_error += w[i] * (use_mad ? fabsf(diff) : diff * diff);
    }
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * (float)is + (float)nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            const int l = iclamp(nearest_int(iscale * (x[i] - min)), 0, nmax);
            Laux[i] = (uint8_t)l;
            sum_l += w[i] * (float)l;
            sum_l2 += w[i] * (float)l * (float)l;
            sum_xl += w[i] * (float)l * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; i++) {
                const float diff = this_scale * (float)Laux[i] + this_min - x[i];
                cur_error += w[i] * (use_mad ? fabsf(diff) : diff * diff);
            }
            if (cur_error < best_error) {
                memcpy(L, Laux, (size_t)n);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *neg_min = -min;
    return scale;
}

/* Fits x ~ scale * (L - nmax) with L in 0..2*nmax-1, weights x^2, trying 19 grids around
 * nmax / max (ggml's make_qx_quants with rmse_type = 1 and no importance weights). */
static float fit_scale_symmetric(int n, int nmax, const float *x, int8_t *L)
{
    float max = 0, amax = 0;
    for (int i = 0; i < n; i++) {
        const float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < GROUP_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = (float)-nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        const int l = iclamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)(l + nmax);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0) continue;
        iscale = -((float)nmax + 0.1f * (float)is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; i++) {
            const int l = iclamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
            const float w = x[i] * x[i];
            sumlx += w * x[i] * (float)l;
            suml2 += w * (float)l * (float)l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++)
                L[i] = (int8_t)(nmax + iclamp(nearest_int(iscale * x[i]), -nmax, nmax - 1));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

typedef float (*fit_fn)(int n, int nmax, const float *x, int8_t *L);

/* Q3_K and Q6_K: each of the 16 sub-blocks fitted on its own (scales[j], quants in L); returns
 * the scale of largest magnitude, signed (the first of equal ones), its magnitude in *amax. */
static float fit_sub_blocks(float scales[PL_QK_K / 16], int8_t L[PL_QK_K], const float *x,
                            fit_fn fit, int nmax, float *amax)
{
    float max_scale = 0;
    *amax = 0;
    for (int j = 0; j < PL_QK_K / 16; j++) {
        scales[j] = fit(16, nmax, x + 16 * j, L + 16 * j);
        if (fabsf(scales[j]) > *amax) {
            *amax = fabsf(scales[j]);
            max_scale = scales[j];
        }
    }
    return max_scale;
}

/* Every sub-block's quants again against its stored scale d * sc[j], as offset values in
 * [0, 2 nmax); a sub-block whose scale is 0 keeps the fit's L, as ggml does. */
static void requantize_sub_blocks(int8_t L[PL_QK_K], const float *x, float d,
                                  const int sc[PL_QK_K / 16], int nmax)
{
    for (int j = 0; j < PL_QK_K / 16; j++) {
        const float dj = d * (float)sc[j];
        if (dj == 0.0f) continue;
        for (int ii = 0; ii < 16; ii++)
            L[16 * j + ii] =
                (int8_t)(iclamp(nearest_int(x[16 * j + ii] / dj), -nmax, nmax - 1) + nmax);
    }
}

/* The 8 six-bit scales and mins of a Q4_K/Q5_K super-block, packed in 12 bytes:
 * j < 4:  sc = s[j] & 63,                     m = s[j + 4] & 63
 * j >= 4: sc = s[j + 4] & 15 | s[j - 4] >> 6 << 4,  m = s[j + 4] >> 4 | s[j] >> 6 << 4. */
static void get_scale_min_k4(int j, const uint8_t *s, int *sc, int *m)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0x0f) | (s[j - 4] >> 6) << 4;
        *m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

static void put_scale_min_k4(uint8_t s[PL_K_SCALE_SIZE], const uint8_t sc[8], const uint8_t m[8])
{
    for (int j = 0; j < 4; j++) {
        s[j] = (uint8_t)(sc[j] | (sc[j + 4] >> 4) << 6);
        s[j + 4] = (uint8_t)(m[j] | (m[j + 4] >> 4) << 6);
        s[j + 8] = (uint8_t)((sc[j + 4] & 0x0f) | (m[j + 4] & 0x0f) << 4);
    }
}

/* The fits of a Q4_K/Q5_K super-block's 8 sub-blocks: scales[j], mins[j] (the negated
 * offset) and the fit's quants in L. The fit's parameters: ggml's make_qkx2_quants as Q4_K
 * (nmax 15: rmin -1, rdelta 0.1, 20 steps) and Q5_K (nmax 31: -0.5, 0.1, 15) call it. */
static void fit_k_sub_blocks(const float *x, int nmax, float rmin, float rdelta, int nstep,
                             float scales[PL_QK_K / 32], float mins[PL_QK_K / 32],
                             uint8_t L[PL_QK_K])
{
    float weights[32];
    for (int j = 0; j < PL_QK_K / 32; j++) {
        const float *xs = x + 32 * j;
        float sum_x2 = 0;
        for (int l = 0; l < 32; l++) sum_x2 += xs[l] * xs[l];
        const float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; l++) weights[l] = av_x + fabsf(xs[l]);
        scales[j] =
            fit_scale_min(32, nmax, xs, weights, L + 32 * j, &mins[j], rmin, rdelta, nstep, 0);
    }
}

/* The rest of a Q4_K/Q5_K super-block from its sub-blocks' fits: 6-bit scale/min
 * quantization against the super-block maxima, then re-quantization of every element against
 * the stored (f16, 6-bit) scale and min. Writes d, dmin, scales and L[256]. */
static void finish_k_scale_min(const float *x, int nmax, const float scales[PL_QK_K / 32],
                               const float mins[PL_QK_K / 32], pl_f16 *d_out, pl_f16 *dmin_out,
                               uint8_t scales_out[12], uint8_t L[PL_QK_K])
{
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < PL_QK_K / 32; j++) {
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    uint8_t ls[8], lm[8];
    for (int j = 0; j < PL_QK_K / 32; j++) {
        /* ggml stores nearest_int() into a uint8_t (modular) before the MIN; so do we. */
        ls[j] = (uint8_t)imin(63, (uint8_t)nearest_int(inv_scale * scales[j]));
        lm[j] = (uint8_t)imin(63, (uint8_t)nearest_int(inv_min * mins[j]));
    }
    put_scale_min_k4(scales_out, ls, lm);
    *d_out = pl_f32_to_f16(max_scale / 63.f);
    *dmin_out = pl_f32_to_f16(max_min / 63.f);

    for (int j = 0; j < PL_QK_K / 32; j++) {
        int sc, m;
        get_scale_min_k4(j, scales_out, &sc, &m);
        const float d = pl_f16_to_f32(*d_out) * (float)sc;
        if (d == 0.0f) continue; /* keeps the fit's L, as ggml does */
        const float dm = pl_f16_to_f32(*dmin_out) * (float)m;
        for (int ii = 0; ii < 32; ii++)
            L[32 * j + ii] = (uint8_t)iclamp(nearest_int((x[32 * j + ii] + dm) / d), 0, nmax);
    }
}

/* q4_k: element 64p + l is the low nibble of qs[32p + l], element 64p + 32 + l the high. */
void pl_ref_q4_k_block(void *vb, const float *x, const float scales[8], const float mins[8],
                       uint8_t L[PL_QK_K])
{
    pl_block_q4_k *b = vb;
    memset(b, 0, sizeof *b);
    finish_k_scale_min(x, 15, scales, mins, &b->d, &b->dmin, b->scales, L);
    for (int p = 0; p < PL_QK_K / 64; p++)
        for (int l = 0; l < 32; l++)
            b->qs[32 * p + l] = (uint8_t)(L[64 * p + l] | L[64 * p + 32 + l] << 4);
}

void pl_ref_k_nonfinite_block(void *vb, size_t size)
{
    memset(vb, 0, size);
    pl_f16 *d = vb; /* d and dmin lead both Q4_K and Q5_K blocks */
    d[0] = d[1] = F16_NAN;
}

void quantize_row_q4_k_ref(void *restrict vy, const float *restrict x, int64_t n)
{
    pl_block_q4_k *y = vy;
    for (int64_t i = 0; i < n / PL_QK_K; i++, x += PL_QK_K) {
        if (!all_finite(x, PL_QK_K)) {
            pl_ref_k_nonfinite_block(&y[i], sizeof y[i]);
            continue;
        }
        float scales[PL_QK_K / 32], mins[PL_QK_K / 32];
        uint8_t L[PL_QK_K];
        fit_k_sub_blocks(x, 15, -1.0f, 0.1f, 20, scales, mins, L);
        pl_ref_q4_k_block(&y[i], x, scales, mins, L);
    }
}

void dequantize_row_q4_k_ref(float *restrict y, const void *restrict vx, int64_t n)
{
    const pl_block_q4_k *x = vx;
    for (int64_t i = 0; i < n / PL_QK_K; i++) {
        const float d = pl_f16_to_f32(x[i].d);
        const float dmin = pl_f16_to_f32(x[i].dmin);
        const uint8_t *q = x[i].qs;
        for (int p = 0; p < PL_QK_K / 64; p++, q += 32) {
            int sc, m;
            get_scale_min_k4(2 * p, x[i].scales, &sc, &m);
            const float d1 = d * (float)sc, m1 = dmin * (float)m;
            get_scale_min_k4(2 * p + 1, x[i].scales, &sc, &m);
            const float d2 = d * (float)sc, m2 = dmin * (float)m;
            for (int l = 0; l < 32; l++) *y++ = d1 * (float)(q[l] & 0x0f) - m1;
            for (int l = 0; l < 32; l++) *y++ = d2 * (float)(q[l] >> 4) - m2;
        }
    }
}

/* q5_k: low nibbles as q4_k; the fifth bit of element 64p + l is bit 2p of qh[l], of
 * element 64p + 32 + l bit 2p + 1 of qh[l]. */
void pl_ref_q5_k_block(void *vb, const float *x, const float scales[8], const float mins[8],
                       uint8_t L[PL_QK_K])
{
    pl_block_q5_k *b = vb;
    memset(b, 0, sizeof *b);
    finish_k_scale_min(x, 31, scales, mins, &b->d, &b->dmin, b->scales, L);
    for (int p = 0; p < PL_QK_K / 64; p++) {
        for (int l = 0; l < 32; l++) {
            const int lo = L[64 * p + l], hi = L[64 * p + 32 + l];
            b->qs[32 * p + l] = (uint8_t)((lo & 0x0f) | (hi & 0x0f) << 4);
            b->qh[l] |= (uint8_t)((lo >> 4) << (2 * p) | (hi >> 4) << (2 * p + 1));
        }
    }
}

void quantize_row_q5_k_ref(void *restrict vy, const float *restrict x, int64_t n)
{
    pl_block_q5_k *y = vy;
    for (int64_t i = 0; i < n / PL_QK_K; i++, x += PL_QK_K) {
        if (!all_finite(x, PL_QK_K)) {
            pl_ref_k_nonfinite_block(&y[i], sizeof y[i]);
            continue;
        }
        float scales[PL_QK_K / 32], mins[PL_QK_K / 32];
        uint8_t L[PL_QK_K];
        fit_k_sub_blocks(x, 31, -0.5f, 0.1f, 15, scales, mins, L);
        pl_ref_q5_k_block(&y[i], x, scales, mins, L);
    }
}

void dequantize_row_q5_k_ref(float *restrict y, const void *restrict vx, int64_t n)
{
    const pl_block_q5_k *x = vx;
    for (int64_t i = 0; i < n / PL_QK_K; i++) {
        const float d = pl_f16_to_f32(x[i].d);
        const float dmin = pl_f16_to_f32(x[i].dmin);
        const uint8_t *q = x[i].qs, *qh = x[i].qh;
        for (int p = 0; p < PL_QK_K / 64; p++, q += 32) {
            int sc, m;
            get_scale_min_k4(2 * p, x[i].scales, &sc, &m);
            const float d1 = d * (float)sc, m1 = dmin * (float)m;
            get_scale_min_k4(2 * p + 1, x[i].scales, &sc, &m);
            const float d2 = d * (float)sc, m2 = dmin * (float)m;
            for (int l = 0; l < 32; l++)
                *y++ = d1 * (float)((q[l] & 0x0f) | (qh[l] >> (2 * p) & 1) << 4) - m1;
            for (int l = 0; l < 32; l++)
                *y++ = d2 * (float)((q[l] >> 4) | (qh[l] >> (2 * p + 1) & 1) << 4) - m2;
        }
    }
}

/* q6_k: 16 sub-blocks of 16, x = d * scales[s] * (q - 32). In each half h (128 elements),
 * element 128h + 32g + l (g = 0..3) has its low 4 bits in ql[64h + l + 32 * (g & 1)]
 * (low nibble for g < 2, high for g >= 2) and its top 2 bits at bit 2g of qh[32h + l]. */
/* q6_k from its 16 sub-blocks' fits (scales[s], the fit's offset quants L): the super-block
 * scale from the fit of largest magnitude (the first of equal ones), 8-bit sub-block scales,
 * every element re-quantized against its stored scale, then packed. */
void pl_ref_q6_k_block(void *vb, const float *x, const float scales[PL_QK_K / 16],
                       int8_t L[PL_QK_K])
{
    pl_block_q6_k *b = vb;
    memset(b, 0, sizeof *b);
    float max_scale = 0, max_abs_scale = 0;
    for (int j = 0; j < PL_QK_K / 16; j++)
        if (fabsf(scales[j]) > max_abs_scale) {
            max_abs_scale = fabsf(scales[j]);
            max_scale = scales[j];
        }
    if (max_abs_scale < GROUP_EPS) return; /* all zero: d = 0, nothing else */
    const float iscale = -128.f / max_scale;
    b->d = pl_f32_to_f16(1 / iscale);
    for (int s = 0; s < PL_QK_K / 16; s++)
        b->scales[s] = (int8_t)wrap_i8(imin(127, nearest_int(iscale * scales[s])));
    int sc[PL_QK_K / 16];
    for (int s = 0; s < PL_QK_K / 16; s++) sc[s] = b->scales[s];
    requantize_sub_blocks(L, x, pl_f16_to_f32(b->d), sc, 32);
    for (int h = 0; h < PL_QK_K / 128; h++) {
        const int8_t *Lh = L + 128 * h;
        for (int l = 0; l < 32; l++) {
            b->ql[64 * h + l] = (uint8_t)((Lh[l] & 0x0f) | (Lh[l + 64] & 0x0f) << 4);
            b->ql[64 * h + l + 32] = (uint8_t)((Lh[l + 32] & 0x0f) | (Lh[l + 96] & 0x0f) << 4);
            b->qh[32 * h + l] = (uint8_t)(Lh[l] >> 4 | (Lh[l + 32] >> 4) << 2 |
                                          (Lh[l + 64] >> 4) << 4 | (Lh[l + 96] >> 4) << 6);
        }
    }
}

void quantize_row_q6_k_ref(void *restrict vy, const float *restrict x, int64_t n)
{
    pl_block_q6_k *y = vy;
    for (int64_t i = 0; i < n / PL_QK_K; i++, x += PL_QK_K) {
        if (!all_finite(x, PL_QK_K)) {
            memset(&y[i], 0, sizeof y[i]);
            y[i].d = F16_NAN;
            continue;
        }
        int8_t L[PL_QK_K];
        float scales[PL_QK_K / 16];
        for (int j = 0; j < PL_QK_K / 16; j++)
            scales[j] = fit_scale_symmetric(16, 32, x + 16 * j, L + 16 * j);
        pl_ref_q6_k_block(&y[i], x, scales, L);
    }
}

void dequantize_row_q6_k_ref(float *restrict y, const void *restrict vx, int64_t n)
{
    const pl_block_q6_k *x = vx;
    for (int64_t i = 0; i < n / PL_QK_K; i++, y += PL_QK_K) {
        const float d = pl_f16_to_f32(x[i].d);
        for (int h = 0; h < PL_QK_K / 128; h++) {
            const uint8_t *ql = x[i].ql + 64 * h, *qh = x[i].qh + 32 * h;
            const int8_t *sc = x[i].scales + 8 * h;
            float *yh = y + 128 * h;
            for (int l = 0; l < 32; l++) {
                const int s = l / 16;
                const int q1 = ((ql[l] & 0x0f) | (qh[l] >> 0 & 3) << 4) - 32;
                const int q2 = ((ql[l + 32] & 0x0f) | (qh[l] >> 2 & 3) << 4) - 32;
                const int q3 = ((ql[l] >> 4) | (qh[l] >> 4 & 3) << 4) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (qh[l] >> 6 & 3) << 4) - 32;
                yh[l] = d * (float)sc[s] * (float)q1;
                yh[l + 32] = d * (float)sc[s + 2] * (float)q2;
                yh[l + 64] = d * (float)sc[s + 4] * (float)q3;
                yh[l + 96] = d * (float)sc[s + 6] * (float)q4;
            }
        }
    }
}

/* q8_k: float d = max / -127, q = nearest_int(x/d) (half to even), bsums[s] = sum of
 * q[16s .. 16s + 15]. The activation dot type of the K-quants. */
void quantize_row_q8_k_ref(void *restrict vy, const float *restrict x, int64_t n)
{
    pl_block_q8_k *y = vy;
    for (int64_t i = 0; i < n / PL_QK_K; i++, x += PL_QK_K) {
        pl_block_q8_k *b = &y[i];
        memset(b, 0, sizeof *b);
        if (!all_finite(x, PL_QK_K)) {
            b->d = NAN;
            continue;
        }
        const float max = signed_absmax(x, PL_QK_K);
        if (max == 0.0f) continue; /* d = 0, q = 0, bsums = 0 */
        const float iscale = -127.f / max;
        for (int j = 0; j < PL_QK_K; j++)
            b->qs[j] = (int8_t)wrap_i8(imin(127, nearest_int(iscale * x[j])));
        for (int s = 0; s < PL_QK_K / 16; s++) {
            int sum = 0;
            for (int l = 0; l < 16; l++) sum += b->qs[16 * s + l];
            b->bsums[s] = (int16_t)sum;
        }
        b->d = 1 / iscale;
    }
}

void dequantize_row_q8_k_ref(float *restrict y, const void *restrict vx, int64_t n)
{
    const pl_block_q8_k *x = vx;
    for (int64_t i = 0; i < n / PL_QK_K; i++, y += PL_QK_K)
        for (int j = 0; j < PL_QK_K; j++) y[j] = x[i].d * (float)x[i].qs[j];
}

/* ---- Q2_K, Q3_K: 16 sub-blocks of 16, 2-bit planes --------------------------------------- */

/* Element e of a Q2_K/Q3_K super-block keeps its 2 low bits in qs[32 (e / 128) + e % 32] at
 * bit 2 ((e / 32) % 4); Q3_K keeps its third bit in hmask[e % 32] at bit e / 32. */
static int q2_bits(const uint8_t qs[PL_QK_K / 4], int e)
{
    return qs[32 * (e / 128) + e % 32] >> (2 * ((e / 32) % 4)) & 3;
}

static void pack_q2_bits(uint8_t qs[PL_QK_K / 4], const uint8_t L[PL_QK_K])
{
    for (int h = 0; h < PL_QK_K / 128; h++) {
        const uint8_t *Lh = L + 128 * h;
        for (int l = 0; l < 32; l++)
            qs[32 * h + l] = (uint8_t)(Lh[l] | Lh[l + 32] << 2 | Lh[l + 64] << 4 | Lh[l + 96] << 6);
    }
}

/* q2_k: per sub-block an asymmetric 2-bit fit with weights |x| and absolute error
 * (make_qkx2_quants, use_mad), then 4-bit scales and mins against the super-block maxima
 * (as stored: the low nibble of scales[j] the scale, the high nibble the min), then every
 * element re-quantized against the stored scale and min. */
void quantize_row_q2_k_ref(void *restrict vy, const float *restrict x, int64_t n)
{
    pl_block_q2_k *y = vy;
    for (int64_t i = 0; i < n / PL_QK_K; i++, x += PL_QK_K) {
        pl_block_q2_k *b = &y[i];
        memset(b, 0, sizeof *b);
        if (!all_finite(x, PL_QK_K)) {
            b->d = b->dmin = F16_NAN;
            continue;
        }
        uint8_t L[PL_QK_K];
        float scales[PL_QK_K / 16], mins[PL_QK_K / 16], weights[16];
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < PL_QK_K / 16; j++) {
            for (int l = 0; l < 16; l++) weights[l] = fabsf(x[16 * j + l]);
            scales[j] =
                fit_scale_min(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], -0.5f, 0.1f, 15, 1);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        if (max_scale > 0) {
            const float iscale = 15.f / max_scale;
            /* ggml stores the int into a uint8_t (modular), then ORs the min in above it */
            for (int j = 0; j < PL_QK_K / 16; j++)
                b->scales[j] = (uint8_t)nearest_int(iscale * scales[j]);
            b->d = pl_f32_to_f16(max_scale / 15.f);
        }
        if (max_min > 0) {
            const float iscale = 15.f / max_min;
            for (int j = 0; j < PL_QK_K / 16; j++)
                b->scales[j] =
                    (uint8_t)(b->scales[j] | (unsigned)nearest_int(iscale * mins[j]) << 4);
            b->dmin = pl_f32_to_f16(max_min / 15.f);
        }
        for (int j = 0; j < PL_QK_K / 16; j++) {
            const float d = pl_f16_to_f32(b->d) * (float)(b->scales[j] & 0x0f);
            if (d == 0.0f) continue; /* keeps the fit's L, as ggml does */
            const float dm = pl_f16_to_f32(b->dmin) * (float)(b->scales[j] >> 4);
            for (int ii = 0; ii < 16; ii++)
                L[16 * j + ii] = (uint8_t)iclamp(nearest_int((x[16 * j + ii] + dm) / d), 0, 3);
        }
        pack_q2_bits(b->qs, L);
    }
}

void dequantize_row_q2_k_ref(float *restrict y, const void *restrict vx, int64_t n)
{
    const pl_block_q2_k *x = vx;
    for (int64_t i = 0; i < n / PL_QK_K; i++, y += PL_QK_K) {
        const float d = pl_f16_to_f32(x[i].d);
        const float dmin = pl_f16_to_f32(x[i].dmin);
        for (int j = 0; j < PL_QK_K / 16; j++) {
            const float dl = d * (float)(x[i].scales[j] & 0x0f);
            const float ml = dmin * (float)(x[i].scales[j] >> 4);
            for (int l = 0; l < 16; l++)
                y[16 * j + l] = dl * (float)q2_bits(x[i].qs, 16 * j + l) - ml;
        }
    }
}

/* Fits x ~ scale * L with L in -nmax..nmax-1, weights x^2: start from the grid nmax / max,
 * then up to 5 passes that move single elements to the level the others' fit implies while
 * that improves sumlx^2 / suml2 (ggml's make_q3_quants with do_rmse). L is returned + nmax. */
static float fit_scale_q3(int n, int nmax, const float *x, int8_t *L)
{
    float max = 0, amax = 0;
    for (int i = 0; i < n; i++) {
        const float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < GROUP_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    const float iscale = (float)-nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        const int l = iclamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)l;
        const float w = x[i] * x[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    for (int itry = 0; itry < 5; itry++) {
        int n_changed = 0;
        for (int i = 0; i < n; i++) {
            const float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * (float)L[i];
            if (slx > 0) {
                float sl2 = suml2 - w * (float)L[i] * (float)L[i];
                const int new_l = iclamp(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
                if (new_l != L[i]) {
                    slx += w * x[i] * (float)new_l;
                    sl2 += w * (float)new_l * (float)new_l;
                    if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (int8_t)new_l;
                        sumlx = slx;
                        suml2 = sl2;
                        n_changed++;
                    }
                }
            }
        }
        if (!n_changed) break;
    }
    for (int i = 0; i < n; i++) L[i] = (int8_t)(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* The 6-bit scale of sub-block j (0..15) of a Q3_K super-block, unbiased (-32..31). */
static int q3_scale(const uint8_t s[12], int j)
{
    const int lo = j < 8 ? s[j] & 0x0f : s[j - 8] >> 4;
    return (lo | (s[8 + j % 4] >> (2 * (j / 4)) & 3) << 4) - 32;
}

/* q3_k: per sub-block a symmetric 3-bit fit (make_q3_quants), 6-bit scales against the
 * largest |scale|, then every element re-quantized against the stored scale. */
void quantize_row_q3_k_ref(void *restrict vy, const float *restrict x, int64_t n)
{
    pl_block_q3_k *y = vy;
    for (int64_t i = 0; i < n / PL_QK_K; i++, x += PL_QK_K) {
        pl_block_q3_k *b = &y[i];
        memset(b, 0, sizeof *b);
        if (!all_finite(x, PL_QK_K)) {
            b->d = F16_NAN;
            continue;
        }
        int8_t L[PL_QK_K];
        float scales[PL_QK_K / 16], amax;
        const float max_scale = fit_sub_blocks(scales, L, x, fit_scale_q3, 4, &amax);
        if (max_scale != 0.0f) {
            const float iscale = -32.f / max_scale;
            for (int j = 0; j < PL_QK_K / 16; j++) {
                /* ggml narrows to int8_t (modular) before clamping */
                const int l = iclamp(wrap_i8(nearest_int(iscale * scales[j])), -32, 31) + 32;
                if (j < 8)
                    b->scales[j] = (uint8_t)(l & 0x0f);
                else
                    b->scales[j - 8] |= (uint8_t)((l & 0x0f) << 4);
                b->scales[j % 4 + 8] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
            }
            b->d = pl_f32_to_f16(1 / iscale);
        }
        int sc[PL_QK_K / 16];
        for (int j = 0; j < PL_QK_K / 16; j++) sc[j] = q3_scale(b->scales, j);
        requantize_sub_blocks(L, x, pl_f16_to_f32(b->d), sc, 4);
        uint8_t L2[PL_QK_K];
        for (int e = 0; e < PL_QK_K; e++) {
            const int hi = L[e] > 3;
            if (hi) b->hmask[e % 32] |= (uint8_t)(1u << (e / 32));
            L2[e] = (uint8_t)(L[e] - 4 * hi);
        }
        pack_q2_bits(b->qs, L2);
    }
}

void dequantize_row_q3_k_ref(float *restrict y, const void *restrict vx, int64_t n)
{
    const pl_block_q3_k *x = vx;
    for (int64_t i = 0; i < n / PL_QK_K; i++, y += PL_QK_K) {
        const float d = pl_f16_to_f32(x[i].d);
        for (int j = 0; j < PL_QK_K / 16; j++) {
            const float dl = d * (float)q3_scale(x[i].scales, j);
            for (int l = 0; l < 16; l++) {
                const int e = 16 * j + l;
                const int q = q2_bits(x[i].qs, e) - (x[i].hmask[e % 32] >> (e / 32) & 1 ? 0 : 4);
                y[e] = dl * (float)q;
            }
        }
    }
}

/* ---- IQ4_NL, IQ4_XS: non-linear 4-bit levels ---------------------------------------------- */

/* L[j] = the index of the level nearest to id * x[j], j < 32: ggml's best_index_int8 over the
 * 16 sorted IQ4_NL levels (the upper one on a tie; the top one for NaN). Its binary search ends
 * at the pair val[m] <= v < val[m + 1] with m the number of levels 1..14 at or below v (0 and
 * 14 past either end, where the comparison below then picks the end level); counted here for
 * the 32 values at once, without branches (the search's data-dependent branches were a quarter
 * of building an IQ4 test file). */
static void iq4_indices(uint8_t L[32], const float *x, float id)
{
    const int8_t *val = pl_iq4nl_values;
    float v[32];
    int m[32];
    for (int j = 0; j < 32; j++) {
        v[j] = id * x[j];
        m[j] = 0;
    }
    for (int k = 1; k < 15; k++) {
        const float t = (float)val[k];
        for (int j = 0; j < 32; j++) m[j] += t <= v[j];
    }
    for (int j = 0; j < 32; j++) {
        const int lo = m[j];
        const int pick = v[j] - (float)val[lo] < (float)val[lo + 1] - v[j] ? lo : lo + 1;
        L[j] = (uint8_t)(v[j] != v[j] ? 15 : pick);
    }
}

/* ggml's quantize_row_iq4_nl_impl as quantize_iq4_nl / quantize_iq4_xs run it without an
 * importance matrix (weights x^2, ntry = 7), over one block of sbs = 32 (IQ4_NL: one scale,
 * the f16 d) or 256 (IQ4_XS: eight 6-bit scales under d = -max_scale / 32). Per 32: start
 * from d = max / 127, fit d to the levels that grid picks, and keep the best of the 15 grids
 * (itry - 127) / max; then re-pick every level against the stored scale. */
static void iq4_quantize_block(const float *x, int sbs, pl_f16 *dh, uint8_t *q4, uint16_t *scales_h,
                               uint8_t *scales_l)
{
    const int8_t *values = pl_iq4nl_values;
    const int ntry = 7;
    uint8_t L[PL_QK_K];
    float scales[PL_QK_K / 32];
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < sbs / 32; ib++) {
        const float *xb = x + 32 * ib;
        uint8_t *Lb = L + 32 * ib;
        float weight[32];
        for (int j = 0; j < 32; j++) weight[j] = xb[j] * xb[j];
        float amax = 0, max = 0;
        for (int j = 0; j < 32; j++) {
            const float ax = fabsf(xb[j]);
            if (ax > amax) {
                amax = ax;
                max = xb[j];
            }
        }
        if (amax < GROUP_EPS) {
            scales[ib] = 0;
            memset(Lb, 0, 32);
            continue;
        }
        float d = -max / (float)values[0];
        float id = 1 / d;
        float sumqx = 0, sumq2 = 0;
        iq4_indices(Lb, xb, id);
        for (int j = 0; j < 32; j++) {
            const float q = (float)values[Lb[j]];
            sumqx += weight[j] * q * xb[j];
            sumq2 += weight[j] * q * q;
        }
        d = sumq2 > 0 ? sumqx / sumq2 : 0.0f;
        float best = d * sumqx;
        for (int itry = -ntry; itry <= ntry; itry++) {
            id = (float)(itry + values[0]) / max;
            sumqx = sumq2 = 0;
            uint8_t Lt[32];
            iq4_indices(Lt, xb, id);
            for (int j = 0; j < 32; j++) {
                const float q = (float)values[Lt[j]];
                sumqx += weight[j] * q * xb[j];
                sumq2 += weight[j] * q * q;
            }
            if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                d = sumqx / sumq2;
                best = d * sumqx;
            }
        }
        scales[ib] = d;
        if (fabsf(d) > amax_scale) {
            amax_scale = fabsf(d);
            max_scale = d;
        }
    }
    if (sbs > 32) {
        *scales_h = 0;
        const float d = -max_scale / 32;
        *dh = pl_f32_to_f16(d);
        const float id = d != 0.0f ? 1 / d : 0.0f;
        for (int ib = 0; ib < sbs / 32; ib++) {
            int l = iclamp(nearest_int(id * scales[ib]), -32, 31);
            const float dl = d * (float)l;
            const float idl = dl != 0.0f ? 1 / dl : 0.0f;
            iq4_indices(L + 32 * ib, x + 32 * ib, idl);
            l += 32;
            if (ib % 2 == 0)
                scales_l[ib / 2] = (uint8_t)(l & 0x0f);
            else
                scales_l[ib / 2] |= (uint8_t)((l & 0x0f) << 4);
            *scales_h = (uint16_t)(*scales_h | (unsigned)(l >> 4) << (2 * (ib % 8)));
        }
    } else {
        *dh = pl_f32_to_f16(scales[0]);
        const float id = scales[0] != 0.0f ? 1 / scales[0] : 0.0f;
        iq4_indices(L, x, id);
    }
    for (int i = 0; i < sbs / 32; i++)
        for (int j = 0; j < 16; j++)
            q4[16 * i + j] = (uint8_t)(L[32 * i + j] | L[32 * i + 16 + j] << 4);
}

/* iq4_nl: x = d * pl_iq4nl_values[q]; ggml's quantize_iq4_nl (not its _ref, which skips the
 * grid search: llama-quantize runs the former). */
void quantize_row_iq4_nl_ref(void *restrict vy, const float *restrict x, int64_t n)
{
    pl_block_iq4_nl *y = vy;
    for (int64_t i = 0; i < n / PL_QK4_NL; i++, x += PL_QK4_NL) {
        pl_block_iq4_nl *b = &y[i];
        memset(b, 0, sizeof *b);
        if (!all_finite(x, PL_QK4_NL)) {
            b->d = F16_NAN;
            continue;
        }
        uint16_t unused_h;
        iq4_quantize_block(x, PL_QK4_NL, &b->d, b->qs, &unused_h, NULL);
    }
}

void dequantize_row_iq4_nl_ref(float *restrict y, const void *restrict vx, int64_t n)
{
    const pl_block_iq4_nl *x = vx;
    for (int64_t i = 0; i < n / PL_QK4_NL; i++, y += PL_QK4_NL) {
        const float d = pl_f16_to_f32(x[i].d);
        for (int j = 0; j < PL_QK4_NL / 2; j++) {
            y[j] = d * (float)pl_iq4nl_values[x[i].qs[j] & 0x0f];
            y[j + PL_QK4_NL / 2] = d * (float)pl_iq4nl_values[x[i].qs[j] >> 4];
        }
    }
}

void quantize_row_iq4_xs_ref(void *restrict vy, const float *restrict x, int64_t n)
{
    pl_block_iq4_xs *y = vy;
    for (int64_t i = 0; i < n / PL_QK_K; i++, x += PL_QK_K) {
        pl_block_iq4_xs *b = &y[i];
        memset(b, 0, sizeof *b);
        if (!all_finite(x, PL_QK_K)) {
            b->d = F16_NAN;
            continue;
        }
        iq4_quantize_block(x, PL_QK_K, &b->d, b->qs, &b->scales_h, b->scales_l);
    }
}

/* The 6-bit scale of sub-block ib (0..7) of an IQ4_XS super-block, unbiased (-32..31). */
static int iq4_xs_scale(const pl_block_iq4_xs *b, int ib)
{
    return ((b->scales_l[ib / 2] >> (4 * (ib % 2)) & 0x0f) | (b->scales_h >> (2 * ib) & 3) << 4) -
           32;
}

void dequantize_row_iq4_xs_ref(float *restrict y, const void *restrict vx, int64_t n)
{
    const pl_block_iq4_xs *x = vx;
    for (int64_t i = 0; i < n / PL_QK_K; i++) {
        const float d = pl_f16_to_f32(x[i].d);
        for (int ib = 0; ib < PL_QK_K / 32; ib++, y += 32) {
            const float dl = d * (float)iq4_xs_scale(&x[i], ib);
            const uint8_t *qs = x[i].qs + 16 * ib;
            for (int j = 0; j < 16; j++) {
                y[j] = dl * (float)pl_iq4nl_values[qs[j] & 0x0f];
                y[j + 16] = dl * (float)pl_iq4nl_values[qs[j] >> 4];
            }
        }
    }
}

/* ---- MXFP4: E2M1 codes, one E8M0 scale per 32 ---------------------------------------------- */
/* Not ggml's quantizer (whose exponent is floor(log2(amax)) - 2 and whose bytes no test here
 * pins): plumb's own, a search over the two scales worth trying. For a block with largest
 * |x| amax, e0 is the smallest exponent whose top level 12 h (h = 2^(e0 - 128): E2M1's 6 at
 * E8M0's 2^(e0 - 127)) reaches amax, so nothing clips; any e > e0 only coarsens the levels that
 * matter. e0 - 1 halves the steps below 2 h but clips everything past 6 h to 6 h; it is tried
 * only when amax <= 7.5 h, so the clipped error is at most amax / 5. The largest error in a
 * block is then at most amax / 5 either way (at e0 half the widest gap used, 2 h between 8 h
 * and 12 h, over an amax of at least 10 h; at e0 - 1 the clip, or 1 h over amax > 6 h). Each
 * candidate rounds every |x| to the nearest E2M1 level, a tie to the even code (OCP's round half to
 * even: 0.25 -> 0, 0.75 -> 1, 1.25 -> 1, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4 in E2M1 units),
 * the sign in bit 3 unless the code is 0 (no -0 is written); the candidate with the smaller
 * sum of squared errors (in double) is stored, e0 on a tie. e stays in 0..252: 12 * 2^(e - 128)
 * is finite there (the largest level any float block can use is 1.5 * 2^127, so a block
 * past it clips). A block holding NaN or +-Inf is the NaN block: e = 255 (E8M0's NaN), qs 0. */

/* The code 0..7 of the doubled E2M1 magnitude {0, 1, 2, 3, 4, 6, 8, 12} nearest v >= 0, a tie
 * to the even code. mid[c] is halfway between the levels of codes c and c + 1. */
static int e2m1_code(double v)
{
    static const double mid[7] = {0.5, 1.5, 2.5, 3.5, 5.0, 7.0, 10.0};
    int c = 0;
    while (c < 7 && (v > mid[c] || (v == mid[c] && (c + 1) % 2 == 0))) c++;
    return c;
}

/* Codes of the 32 values at scale 2^(e - 128), packed as the block stores them; returns the
 * sum of squared errors (every step exact in double but the squares' sum). */
static double mxfp4_fit(const float *x, int e, uint8_t qs[PL_QK_MXFP4 / 2])
{
    double err = 0.0;
    int q[PL_QK_MXFP4];
    for (int j = 0; j < PL_QK_MXFP4; j++) {
        const double a = fabs((double)x[j]);
        const int c = e2m1_code(ldexp(a, 128 - e));
        const double diff = a - ldexp(pl_mxfp4_values[c], e - 128);
        err += diff * diff;
        q[j] = c != 0 && signbit(x[j]) ? c | 8 : c;
    }
    for (int j = 0; j < PL_QK_MXFP4 / 2; j++) qs[j] = (uint8_t)(q[j] | q[j + PL_QK_MXFP4 / 2] << 4);
    return err;
}

void quantize_row_mxfp4_ref(void *restrict vy, const float *restrict x, int64_t n)
{
    pl_block_mxfp4 *y = vy;
    for (int64_t i = 0; i < n / PL_QK_MXFP4; i++, x += PL_QK_MXFP4) {
        pl_block_mxfp4 *b = &y[i];
        memset(b, 0, sizeof *b);
        if (!all_finite(x, PL_QK_MXFP4)) {
            b->e = 255;
            continue;
        }
        double amax = 0.0;
        for (int j = 0; j < PL_QK_MXFP4; j++) amax = fmax(amax, fabs((double)x[j]));
        int e0 = 128; /* then the smallest e in 0..252 with 12 * 2^(e - 128) >= amax */
        while (e0 < 252 && ldexp(12.0, e0 - 128) < amax) e0++;
        while (e0 > 0 && ldexp(12.0, e0 - 129) >= amax) e0--;
        const double err0 = mxfp4_fit(x, e0, b->qs);
        b->e = (uint8_t)e0;
        if (e0 > 0 && amax <= ldexp(7.5, e0 - 128)) { /* e0 - 1 clips amax by <= amax / 5 */
            uint8_t qs[PL_QK_MXFP4 / 2];
            if (mxfp4_fit(x, e0 - 1, qs) < err0) {
                b->e = (uint8_t)(e0 - 1);
                memcpy(b->qs, qs, sizeof qs);
            }
        }
    }
}

void dequantize_row_mxfp4_ref(float *restrict y, const void *restrict vx, int64_t n)
{
    const pl_block_mxfp4 *x = vx;
    for (int64_t i = 0; i < n / PL_QK_MXFP4; i++, y += PL_QK_MXFP4) {
        const float d = pl_e8m0_half(x[i].e); /* every product exact, or +-Inf past the range */
        for (int j = 0; j < PL_QK_MXFP4 / 2; j++) {
            y[j] = d * (float)pl_mxfp4_values[x[i].qs[j] & 0x0f];
            y[j + PL_QK_MXFP4 / 2] = d * (float)pl_mxfp4_values[x[i].qs[j] >> 4];
        }
    }
}
