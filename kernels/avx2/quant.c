/* quant.c — avx2 activation quantizers (Q8_0, Q8_K), bit-exact with ref's for every
 * input: the same IEEE operations per element, only several elements at a time.
 * Not the weight quantizers: those run once, offline, and stay ref's. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "avx2.h"

/* |v|: the sign bit cleared (exact, also for -0). */
static inline __m256 abs8(__m256 v)
{
    return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
}

/* 1 if none of x[0..n) is NaN or +-Inf (exponent bits all ones); n is a multiple of 8. */
static int all_finite(const float *x, int n)
{
    const __m256i e = _mm256_set1_epi32(0x7f800000);
    __m256i bad = _mm256_setzero_si256();
    for (int i = 0; i < n; i += 8) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(x + i));
        bad = _mm256_or_si256(bad, _mm256_cmpeq_epi32(_mm256_and_si256(v, e), e));
    }
    return _mm256_testz_si256(bad, bad);
}

/* The largest of the 8 lanes; exact and order-free (no NaN reaches here). */
static inline float hmax8(__m256 v)
{
    __m128 a = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    a = _mm_max_ps(a, _mm_movehl_ps(a, a));
    a = _mm_max_ss(a, _mm_movehdup_ps(a));
    return _mm_cvtss_f32(a);
}

/* ref's to_int8(roundf(v), -128, 127): round half away from zero, non-finite -> 0, clamp. */
static inline __m256i round_to_i8_range(__m256 v)
{
    const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 frac = abs8(_mm256_sub_ps(v, t)); /* exact: |v| < 2^23 or frac 0 */
    const __m256 up = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    const __m256 one =
        _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(v, _mm256_set1_ps(-0.0f))); /* +-1 as v */
    __m256 r = _mm256_blendv_ps(t, _mm256_add_ps(t, one), up); /* t +- 1 exact: |t| < 2^23 */
    r = _mm256_and_ps(r, _mm256_cmp_ps(abs8(r), _mm256_set1_ps(INFINITY), _CMP_LT_OQ));
    r = _mm256_min_ps(_mm256_max_ps(r, _mm256_set1_ps(-128.0f)), _mm256_set1_ps(127.0f));
    return _mm256_cvttps_epi32(r);
}

/* 32 int32 in [-128, 127] (a holds elements 0..7, b 8..15, ...) stored as 32 int8. */
static inline void store_i8x32(int8_t *dst, __m256i a, __m256i b, __m256i c, __m256i d)
{
    /* packs work within 128-bit halves: [a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 c4-7 d4-7] */
    const __m256i v = _mm256_packs_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
    _mm256_storeu_si256((__m256i *)dst,
                        _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

void quantize_row_q8_0_avx2(void *restrict vy, const float *restrict x, int64_t n)
{
    pl_block_q8_0 *y = vy;
    for (int64_t i = 0; i < n / PL_QK8_0; i++, x += PL_QK8_0) {
        pl_block_q8_0 *b = &y[i];
        memset(b, 0, sizeof *b);
        if (!all_finite(x, PL_QK8_0)) {
            b->d = 0x7e00u;
            continue;
        }
        __m256 v[4];
        for (int j = 0; j < 4; j++) v[j] = _mm256_loadu_ps(x + 8 * j);
        const float amax = hmax8(_mm256_max_ps(_mm256_max_ps(abs8(v[0]), abs8(v[1])),
                                               _mm256_max_ps(abs8(v[2]), abs8(v[3]))));
        const float d = amax / 127;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b->d = pl_f32_to_f16(d);
        const __m256 vid = _mm256_set1_ps(id);
        __m256i q[4];
        for (int j = 0; j < 4; j++) q[j] = round_to_i8_range(_mm256_mul_ps(v[j], vid));
        store_i8x32(b->qs, q[0], q[1], q[2], q[3]);
    }
}

/* ref's signed_absmax: the first element of largest magnitude (0 if all are 0). */
static float signed_absmax(const float *x)
{
    __m256 m = _mm256_setzero_ps();
    for (int i = 0; i < PL_QK_K; i += 8) m = _mm256_max_ps(m, abs8(_mm256_loadu_ps(x + i)));
    const float amax = hmax8(m);
    if (amax == 0.0f) return 0.0f;
    const __m256 va = _mm256_set1_ps(amax);
    for (int i = 0; i < PL_QK_K; i += 8) {
        const int hit =
            _mm256_movemask_ps(_mm256_cmp_ps(abs8(_mm256_loadu_ps(x + i)), va, _CMP_EQ_OQ));
        if (hit) return x[i + __builtin_ctz((unsigned)hit)];
    }
    return 0.0f; /* unreachable: amax is one of the |x| */
}

void quantize_row_q8_k_avx2(void *restrict vy, const float *restrict x, int64_t n)
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
        const __m256 vs = _mm256_set1_ps(iscale), magic = _mm256_set1_ps(12582912.f);
        for (int s = 0; s < PL_QK_K / 32; s++) {
            __m256i q[4];
            for (int j = 0; j < 4; j++) {
                /* ref's nearest_int (the 1.5 * 2^23 trick, mul then add), imin(127, .) */
                const __m256 t =
                    _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 32 * s + 8 * j), vs), magic);
                const __m256i v = _mm256_sub_epi32(
                    _mm256_and_si256(_mm256_castps_si256(t), _mm256_set1_epi32(0x007fffff)),
                    _mm256_set1_epi32(0x00400000));
                /* wrap to int8 (ref's modular store): the low byte, which the unsigned packs
                 * then carry through unchanged (0..255 never saturates) */
                q[j] = _mm256_and_si256(_mm256_min_epi32(v, _mm256_set1_epi32(127)),
                                        _mm256_set1_epi32(0xff));
            }
            const __m256i u = _mm256_packus_epi16(_mm256_packus_epi32(q[0], q[1]),
                                                  _mm256_packus_epi32(q[2], q[3]));
            _mm256_storeu_si256(
                (__m256i *)(b->qs + 32 * s),
                _mm256_permutevar8x32_epi32(u, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
        }
        for (int s = 0; s < PL_QK_K / 16; s++) {
            /* exact: 16 int8 sum within int16 */
            const __m256i w =
                _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(b->qs + 16 * s)));
            __m128i a = _mm_add_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
            a = _mm_add_epi16(a, _mm_unpackhi_epi64(a, a));
            a = _mm_add_epi16(a, _mm_shufflelo_epi16(a, 0x4e));
            a = _mm_add_epi16(a, _mm_shufflelo_epi16(a, 0xb1));
            b->bsums[s] = (int16_t)_mm_extract_epi16(a, 0);
        }
        b->d = 1 / iscale;
    }
}
