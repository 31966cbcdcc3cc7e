/* quant.c — avx512 activation quantizers (Q8_0, Q8_K), bit-exact with ref's for every
 * input: the same IEEE operations per element, only several elements at a time.
 * Not the weight quantizers: those run once, offline, and stay ref's. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "avx512.h"

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
