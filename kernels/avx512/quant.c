/* quant.c — avx512 activation quantizers (Q8_0, Q8_K) and the Q4_K/Q5_K weight quantizers,
 * bit-exact with ref's for every input: the same IEEE operations per element, only several
 * elements (activations) or several sub-blocks (weights: one per lane) at a time. The weight
 * quantizers run offline, but ref's Q4_K search was 93% of `plumb mkmodel`'s time on a
 * Qwen3-30B-A3B-shaped file. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "avx512.h"
#include "ref/ref.h"

#define NONFINITE 0x99 /* fpclass: QNaN | +Inf | -Inf | SNaN */

static int all_finite(const float *x, int n)
{
    for (int i = 0; i < n; i += 16)
        if (_mm512_fpclass_ps_mask(_mm512_loadu_ps(x + i), NONFINITE)) return 0;
    return 1;
}

/* ref's to_int8(roundf(v), -128, 127): round half away from zero, non-finite -> 0, clamp. */
static __m512i round_to_i8_range(__m512 v)
{
    const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m512 frac = _mm512_abs_ps(_mm512_sub_ps(v, t)); /* exact: |v| < 2^23 or frac 0 */
    const __mmask16 up = _mm512_cmp_ps_mask(frac, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
    const __m512 one = _mm512_castsi512_ps(_mm512_or_si512(
        _mm512_castps_si512(_mm512_set1_ps(1.0f)),
        _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32((int)0x80000000u))));
    __m512 r = _mm512_mask_add_ps(t, up, t, one);
    r = _mm512_maskz_mov_ps((__mmask16)~_mm512_fpclass_ps_mask(r, NONFINITE), r);
    r = _mm512_min_ps(_mm512_max_ps(r, _mm512_set1_ps(-128.0f)), _mm512_set1_ps(127.0f));
    return _mm512_cvttps_epi32(r);
}

void quantize_row_q8_0_avx512(void *restrict vy, const float *restrict x, int64_t n)
{
    pl_block_q8_0 *y = vy;
    for (int64_t i = 0; i < n / PL_QK8_0; i++, x += PL_QK8_0) {
        pl_block_q8_0 *b = &y[i];
        memset(b, 0, sizeof *b);
        if (!all_finite(x, PL_QK8_0)) {
            b->d = 0x7e00u;
            continue;
        }
        const __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16);
        const float amax =
            _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1)));
        const float d = amax / 127;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b->d = pl_f32_to_f16(d);
        const __m512 vid = _mm512_set1_ps(id);
        _mm_storeu_si128((__m128i *)b->qs,
                         _mm512_cvtsepi32_epi8(round_to_i8_range(_mm512_mul_ps(x0, vid))));
        _mm_storeu_si128((__m128i *)(b->qs + 16),
                         _mm512_cvtsepi32_epi8(round_to_i8_range(_mm512_mul_ps(x1, vid))));
    }
}

/* ref's signed_absmax: the first element of largest magnitude (0 if all are 0). */
static float signed_absmax(const float *x)
{
    __m512 m = _mm512_setzero_ps();
    for (int i = 0; i < PL_QK_K; i += 16)
        m = _mm512_max_ps(m, _mm512_abs_ps(_mm512_loadu_ps(x + i)));
    const float amax = _mm512_reduce_max_ps(m);
    if (amax == 0.0f) return 0.0f;
    const __m512 va = _mm512_set1_ps(amax);
    for (int i = 0; i < PL_QK_K; i += 16) {
        const __mmask16 hit =
            _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_loadu_ps(x + i)), va, _CMP_EQ_OQ);
        if (hit) return x[i + __builtin_ctz(hit)];
    }
    return 0.0f; /* unreachable: amax is one of the |x| */
}

void quantize_row_q8_k_avx512(void *restrict vy, const float *restrict x, int64_t n)
{
    pl_block_q8_k *y = vy;
    for (int64_t i = 0; i < n / PL_QK_K; i++, x += PL_QK_K) {
        pl_block_q8_k *b = &y[i];
        memset(b, 0, sizeof *b);
        if (!all_finite(x, PL_QK_K)) {
            b->d = NAN;
            continue;
        }
        const float max = signed_absmax(x);
        if (max == 0.0f) continue;
        const float iscale = -127.f / max;
        const __m512 vs = _mm512_set1_ps(iscale), magic = _mm512_set1_ps(12582912.f);
        for (int s = 0; s < PL_QK_K / 16; s++) {
            /* ref's nearest_int (the 1.5 * 2^23 trick), imin(127, .), wrap to int8 */
            const __m512 t = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(x + 16 * s), vs), magic);
            __m512i q = _mm512_sub_epi32(
                _mm512_and_si512(_mm512_castps_si512(t), _mm512_set1_epi32(0x007fffff)),
                _mm512_set1_epi32(0x00400000));
            q = _mm512_min_epi32(q, _mm512_set1_epi32(127));
            const __m128i q8 = _mm512_cvtepi32_epi8(q);
            _mm_storeu_si128((__m128i *)(b->qs + 16 * s), q8);
            b->bsums[s] = (int16_t)_mm512_reduce_add_epi32(_mm512_cvtepi8_epi32(q8));
        }
        b->d = 1 / iscale;
    }
}

/* ---- Q4_K / Q5_K: ref's fit_scale_min for 16 sub-blocks at once ----
 * Lane j holds sub-block j; xt[i] and wt[i] hold element i (and its weight) of every lane, so
 * each lane runs ref's loops in ref's order: the same sums, the same bits. */

/* ref's nearest_int (the 1.5 * 2^23 trick) clamped to [0, nmax], per lane. */
static __m512i nearest_clamped(__m512 v, __m512i nmax)
{
    const __m512i t = _mm512_castps_si512(_mm512_add_ps(v, _mm512_set1_ps(12582912.f)));
    const __m512i i = _mm512_sub_epi32(_mm512_and_si512(t, _mm512_set1_epi32(0x007fffff)),
                                       _mm512_set1_epi32(0x00400000));
    return _mm512_min_epi32(_mm512_max_epi32(i, _mm512_setzero_si512()), nmax);
}

/* sum over i of w[i] * (diff * diff), diff = scale * L[i] + min - x[i], in ref's order. */
static __m512 weighted_error(const __m512 xt[32], const __m512 wt[32], const __m512i L[32],
                             __m512 scale, __m512 min)
{
    __m512 e = _mm512_setzero_ps();
    for (int i = 0; i < 32; i++) {
        const __m512 diff = _mm512_sub_ps(
            _mm512_add_ps(_mm512_mul_ps(scale, _mm512_cvtepi32_ps(L[i])), min), xt[i]);
        e = _mm512_add_ps(e, _mm512_mul_ps(wt[i], _mm512_mul_ps(diff, diff)));
    }
    return e;
}

static void fit16(const __m512 xt[32], const __m512 wt[32], int nmax_i, float rmin, float rdelta,
                  int nstep, __m512 *scale_out, __m512 *neg_min_out, __m512i L[32])
{
    const __m512 zero = _mm512_setzero_ps();
    const __m512i nmax = _mm512_set1_epi32(nmax_i);
    __m512 min = xt[0], max = xt[0], sum_w = wt[0], sum_x = _mm512_mul_ps(wt[0], xt[0]);
    for (int i = 1; i < 32; i++) {
        min = _mm512_min_ps(xt[i], min); /* x < min ? x : min, as ref's if */
        max = _mm512_max_ps(xt[i], max);
        sum_w = _mm512_add_ps(sum_w, wt[i]);
        sum_x = _mm512_add_ps(sum_x, _mm512_mul_ps(wt[i], xt[i]));
    }
    min = _mm512_mask_mov_ps(min, _mm512_cmp_ps_mask(min, zero, _CMP_GT_OQ), zero);
    const __mmask16 flat = _mm512_cmp_ps_mask(max, min, _CMP_EQ_OQ);
    const __m512 flat_min = min;
    __m512 iscale = _mm512_div_ps(_mm512_set1_ps((float)nmax_i), _mm512_sub_ps(max, min));
    __m512 scale = _mm512_div_ps(_mm512_set1_ps(1.0f), iscale);
    for (int i = 0; i < 32; i++)
        L[i] = nearest_clamped(_mm512_mul_ps(iscale, _mm512_sub_ps(xt[i], min)), nmax);
    __m512 best = weighted_error(xt, wt, L, scale, min);
    __m512i Laux[32];
    for (int is = 0; is <= nstep; is++) {
        const float num = rmin + rdelta * (float)is + (float)nmax_i;
        iscale = _mm512_div_ps(_mm512_set1_ps(num), _mm512_sub_ps(max, min));
        __m512 sum_l = zero, sum_l2 = zero, sum_xl = zero;
        for (int i = 0; i < 32; i++) {
            Laux[i] = nearest_clamped(_mm512_mul_ps(iscale, _mm512_sub_ps(xt[i], min)), nmax);
            const __m512 l = _mm512_cvtepi32_ps(Laux[i]);
            const __m512 wl = _mm512_mul_ps(wt[i], l);
            sum_l = _mm512_add_ps(sum_l, wl);
            sum_l2 = _mm512_add_ps(sum_l2, _mm512_mul_ps(wl, l));
            sum_xl = _mm512_add_ps(sum_xl, _mm512_mul_ps(wl, xt[i]));
        }
        const __m512 D = _mm512_sub_ps(_mm512_mul_ps(sum_w, sum_l2), _mm512_mul_ps(sum_l, sum_l));
        const __mmask16 solvable = _mm512_cmp_ps_mask(D, zero, _CMP_GT_OQ) & (__mmask16)~flat;
        if (!solvable) continue;
        __m512 this_scale = _mm512_div_ps(
            _mm512_sub_ps(_mm512_mul_ps(sum_w, sum_xl), _mm512_mul_ps(sum_x, sum_l)), D);
        __m512 this_min = _mm512_div_ps(
            _mm512_sub_ps(_mm512_mul_ps(sum_l2, sum_x), _mm512_mul_ps(sum_l, sum_xl)), D);
        const __mmask16 pos = _mm512_cmp_ps_mask(this_min, zero, _CMP_GT_OQ);
        this_min = _mm512_mask_mov_ps(this_min, pos, zero);
        this_scale = _mm512_mask_div_ps(this_scale, pos, sum_xl, sum_l2);
        const __m512 cur = weighted_error(xt, wt, Laux, this_scale, this_min);
        const __mmask16 better = solvable & _mm512_cmp_ps_mask(cur, best, _CMP_LT_OQ);
        if (!better) continue;
        for (int i = 0; i < 32; i++) L[i] = _mm512_mask_mov_epi32(L[i], better, Laux[i]);
        best = _mm512_mask_mov_ps(best, better, cur);
        scale = _mm512_mask_mov_ps(scale, better, this_scale);
        min = _mm512_mask_mov_ps(min, better, this_min);
    }
    /* max == min: scale 0, quants 0, the (clamped) min */
    for (int i = 0; i < 32; i++) L[i] = _mm512_mask_mov_epi32(L[i], flat, _mm512_setzero_si512());
    *scale_out = _mm512_mask_mov_ps(scale, flat, zero);
    min = _mm512_mask_mov_ps(min, flat, flat_min);
    *neg_min_out = _mm512_xor_ps(min, _mm512_set1_ps(-0.0f));
}

typedef void (*k_block_fn)(void *b, const float *x, const float scales[8], const float mins[8],
                           uint8_t L[PL_QK_K]);

/* Two super-blocks (16 sub-blocks of 32) per pass; a lone or non-finite block goes to ref. */
static void quantize_row_k(void *vy, size_t block_bytes, const float *x, int64_t n, int nmax,
                           float rmin, float rdelta, int nstep, k_block_fn finish,
                           pl_quantize_row_fn ref)
{
    unsigned char *y = vy;
    const int64_t nb = n / PL_QK_K;
    const __m512i sub =
        _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                           _mm512_set1_epi32(32));
    int64_t i = 0;
    while (i < nb) {
        const float *xb = x + i * PL_QK_K;
        if (i + 1 >= nb || !all_finite(xb, 2 * PL_QK_K)) {
            ref(y + i * block_bytes, xb, PL_QK_K);
            i++;
            continue;
        }
        __m512 xt[32], wt[32];
        __m512 sum_x2 = _mm512_setzero_ps();
        for (int e = 0; e < 32; e++) {
            xt[e] = _mm512_i32gather_ps(sub, xb + e, 4);
            sum_x2 = _mm512_add_ps(sum_x2, _mm512_mul_ps(xt[e], xt[e]));
        }
        const __m512 av_x = _mm512_sqrt_ps(_mm512_div_ps(sum_x2, _mm512_set1_ps(32.0f)));
        for (int e = 0; e < 32; e++) wt[e] = _mm512_add_ps(av_x, _mm512_abs_ps(xt[e]));
        __m512 scale, neg_min;
        __m512i Lt[32];
        fit16(xt, wt, nmax, rmin, rdelta, nstep, &scale, &neg_min, Lt);
        float scales[16], mins[16];
        int32_t lt[32][16];
        _mm512_storeu_ps(scales, scale);
        _mm512_storeu_ps(mins, neg_min);
        for (int e = 0; e < 32; e++) _mm512_storeu_si512(lt[e], Lt[e]);
        for (int b = 0; b < 2; b++) {
            uint8_t L[PL_QK_K];
            for (int j = 0; j < 8; j++)
                for (int e = 0; e < 32; e++) L[32 * j + e] = (uint8_t)lt[e][8 * b + j];
            finish(y + (i + b) * block_bytes, xb + b * PL_QK_K, scales + 8 * b, mins + 8 * b, L);
        }
        i += 2;
    }
}

void quantize_row_q4_k_avx512(void *restrict y, const float *restrict x, int64_t n)
{
    quantize_row_k(y, sizeof(pl_block_q4_k), x, n, 15, -1.0f, 0.1f, 20, pl_ref_q4_k_block,
                   quantize_row_q4_k_ref);
}

void quantize_row_q5_k_avx512(void *restrict y, const float *restrict x, int64_t n)
{
    quantize_row_k(y, sizeof(pl_block_q5_k), x, n, 31, -0.5f, 0.1f, 15, pl_ref_q5_k_block,
                   quantize_row_q5_k_ref);
}

/* ---- Q6_K: ref's fit_scale_symmetric (nmax 32) for the 16 sub-blocks of a super-block ----
 * Lane j holds sub-block j (16 elements); xt[i] holds element i of every lane. */

static __m512i nearest_clamped_signed(__m512 v, int lo, int hi)
{
    const __m512i t = _mm512_castps_si512(_mm512_add_ps(v, _mm512_set1_ps(12582912.f)));
    const __m512i i = _mm512_sub_epi32(_mm512_and_si512(t, _mm512_set1_epi32(0x007fffff)),
                                       _mm512_set1_epi32(0x00400000));
    return _mm512_min_epi32(_mm512_max_epi32(i, _mm512_set1_epi32(lo)), _mm512_set1_epi32(hi));
}

/* sumlx and suml2 of ref's loops (w = x * x, l the clamped grid value) at iscale. */
static void symmetric_sums(const __m512 xt[16], __m512 iscale, int nmax, __m512i l[16],
                           __m512 *sumlx, __m512 *suml2)
{
    __m512 lx = _mm512_setzero_ps(), l2 = _mm512_setzero_ps();
    for (int i = 0; i < 16; i++) {
        l[i] = nearest_clamped_signed(_mm512_mul_ps(iscale, xt[i]), -nmax, nmax - 1);
        const __m512 lf = _mm512_cvtepi32_ps(l[i]);
        const __m512 w = _mm512_mul_ps(xt[i], xt[i]);
        lx = _mm512_add_ps(lx, _mm512_mul_ps(_mm512_mul_ps(w, xt[i]), lf));
        l2 = _mm512_add_ps(l2, _mm512_mul_ps(_mm512_mul_ps(w, lf), lf));
    }
    *sumlx = lx;
    *suml2 = l2;
}

void quantize_row_q6_k_avx512(void *restrict vy, const float *restrict x, int64_t n)
{
    pl_block_q6_k *y = vy;
    const int nmax = 32;
    const __m512i sub =
        _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                           _mm512_set1_epi32(16));
    const __m512 zero = _mm512_setzero_ps();
    for (int64_t b = 0; b < n / PL_QK_K; b++, x += PL_QK_K) {
        if (!all_finite(x, PL_QK_K)) {
            quantize_row_q6_k_ref(&y[b], x, PL_QK_K);
            continue;
        }
        __m512 xt[16];
        __m512 amax = zero, max = zero;
        for (int i = 0; i < 16; i++) {
            xt[i] = _mm512_i32gather_ps(sub, x + i, 4);
            const __m512 ax = _mm512_abs_ps(xt[i]);
            const __mmask16 gt = _mm512_cmp_ps_mask(ax, amax, _CMP_GT_OQ);
            amax = _mm512_mask_mov_ps(amax, gt, ax);
            max = _mm512_mask_mov_ps(max, gt, xt[i]);
        }
        const __mmask16 flat = _mm512_cmp_ps_mask(amax, _mm512_set1_ps(1e-15f), _CMP_LT_OQ);
        __m512i L[16], l[16];
        __m512 sumlx, suml2;
        symmetric_sums(xt, _mm512_div_ps(_mm512_set1_ps((float)-nmax), max), nmax, L, &sumlx,
                       &suml2);
        __m512 scale =
            _mm512_maskz_div_ps(_mm512_cmp_ps_mask(suml2, zero, _CMP_NEQ_UQ), sumlx, suml2);
        __m512 best = _mm512_mul_ps(scale, sumlx);
        for (int is = -9; is <= 9; is++) {
            if (is == 0) continue;
            const float num = -((float)nmax + 0.1f * (float)is);
            symmetric_sums(xt, _mm512_div_ps(_mm512_set1_ps(num), max), nmax, l, &sumlx, &suml2);
            const __mmask16 better = _mm512_cmp_ps_mask(suml2, zero, _CMP_GT_OQ) &
                                     _mm512_cmp_ps_mask(_mm512_mul_ps(sumlx, sumlx),
                                                        _mm512_mul_ps(best, suml2), _CMP_GT_OQ) &
                                     (__mmask16)~flat;
            if (!better) continue;
            for (int i = 0; i < 16; i++) L[i] = _mm512_mask_mov_epi32(L[i], better, l[i]);
            scale = _mm512_mask_div_ps(scale, better, sumlx, suml2);
            best = _mm512_mask_mov_ps(best, better, _mm512_mul_ps(scale, sumlx));
        }
        scale = _mm512_mask_mov_ps(scale, flat, zero);
        float scales[16];
        int32_t lt[16][16];
        _mm512_storeu_ps(scales, scale);
        for (int i = 0; i < 16; i++)
            _mm512_storeu_si512(
                lt[i], _mm512_mask_mov_epi32(_mm512_add_epi32(L[i], _mm512_set1_epi32(nmax)), flat,
                                             _mm512_setzero_si512()));
        int8_t Lb[PL_QK_K];
        for (int j = 0; j < 16; j++)
            for (int i = 0; i < 16; i++) Lb[16 * j + i] = (int8_t)lt[i][j];
        pl_ref_q6_k_block(&y[b], x, scales, Lb);
    }
}
