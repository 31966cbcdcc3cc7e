/* matmul_f.c — avx2 matmul of F32, F16 and BF16 weights against f32 activations (FMA).
 * Not ref: the sum over k runs in 2 x 8 lanes, then a fixed tree.
 *
 * Order, the same for every (r, t): chunk c of 8 elements (the last one zero-padded) goes
 * into accumulator c % 2 as one fma; then a0 + a1, and the 8 lanes are summed as
 * ((0 + 4) + (2 + 6)) + ((1 + 5) + (3 + 7)). F16 and BF16 widen exactly. Tiles of up to
 * 2 rows x 3 tokens share loads, never an accumulator.
 * Bound: ref's gamma(K) (c = 1.01): every product is rounded at most once (fused with its
 * add) and no term passes through more than K - 1 additions with a nonzero operand. */
#include <immintrin.h>

#include "avx2.h"

/* Tiles of at most NR rows x NT tokens: 12 accumulators, 2 weight chunks and one activation
 * chunk fit the 16 ymm registers. */
#define NR     2
#define NT     3
#define INLINE static inline __attribute__((always_inline))

INLINE float hsum8(__m256 v)
{
    __m128 a = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    a = _mm_add_ps(a, _mm_movehl_ps(a, a));
    a = _mm_add_ss(a, _mm_movehdup_ps(a));
    return _mm_cvtss_f32(a);
}

/* 8 weights from element k, widened to f32. */
INLINE __m256 load_w(pl_type type, const void *w, int64_t k)
{
    switch (type) {
    case PL_TYPE_F16:
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const pl_f16 *)w + k)));
    case PL_TYPE_BF16: {
        const __m128i h = _mm_loadu_si128((const __m128i *)((const pl_bf16 *)w + k));
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
    default:
        return _mm256_loadu_ps((const float *)w + k);
    }
}

/* The n < 8 weights from element k, widened, the other lanes 0 (no read past the row). */
static inline __m256 load_w_part(pl_type type, const void *w, int64_t k, int n, __m256i m)
{
    if (type == PL_TYPE_F32) return _mm256_maskload_ps((const float *)w + k, m);
    const pl_f16 *h = (const pl_f16 *)w + k; /* pl_bf16 is the same 16-bit storage */
    uint16_t v[8] = {0};
    for (int i = 0; i < n; i++) v[i] = h[i];
    const __m128i q = _mm_loadu_si128((const __m128i *)v);
    if (type == PL_TYPE_F16) return _mm256_cvtph_ps(q);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(q), 16));
}

/* nr weight rows (w_row_bytes apart) against nt tokens; nr and nt are constants at every
 * call (registers, not memory). Each (row, token) has its own 2 accumulators. */
INLINE void tile_f(pl_type type, float *restrict y, int64_t ldy, const uint8_t *restrict w,
                   size_t wrb, const float *restrict x, size_t xrow, int64_t K, const int nr,
                   const int nt)
{
    __m256 acc[NR][NT][2];
    for (int r = 0; r < nr; r++)
        for (int t = 0; t < nt; t++) acc[r][t][0] = acc[r][t][1] = _mm256_setzero_ps();
    const int64_t full = K / 16 * 16;
    for (int64_t k = 0; k < full; k += 16)
        for (int a = 0; a < 2; a++) {
            __m256 wv[NR];
            for (int r = 0; r < nr; r++) wv[r] = load_w(type, w + (size_t)r * wrb, k + 8 * a);
            for (int t = 0; t < nt; t++) {
                __m256 xv = _mm256_loadu_ps(x + (size_t)t * xrow + k + 8 * a);
                if (nr > 1) __asm__("" : "+x"(xv)); /* one load for all nr rows, not nr */
                for (int r = 0; r < nr; r++)
                    acc[r][t][a] = _mm256_fmadd_ps(wv[r], xv, acc[r][t][a]);
            }
        }
    /* the rest: a full chunk and a zero-padded one, or one of them, into accumulators 0, 1 */
    static const int32_t mask_tbl[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    for (int a = 0; a < 2; a++) {
        const int64_t k = full + 8 * a;
        if (k >= K) break;
        const int n = K - k >= 8 ? 8 : (int)(K - k);
        const __m256i m = _mm256_loadu_si256((const __m256i *)(mask_tbl + 8 - n));
        __m256 wv[NR];
        for (int r = 0; r < nr; r++)
            wv[r] = n == 8 ? load_w(type, w + (size_t)r * wrb, k)
                           : load_w_part(type, w + (size_t)r * wrb, k, n, m);
        for (int t = 0; t < nt; t++) {
            const float *xt = x + (size_t)t * xrow + k;
            const __m256 xv = n == 8 ? _mm256_loadu_ps(xt) : _mm256_maskload_ps(xt, m);
            for (int r = 0; r < nr; r++) acc[r][t][a] = _mm256_fmadd_ps(wv[r], xv, acc[r][t][a]);
        }
    }
    for (int r = 0; r < nr; r++)
        for (int t = 0; t < nt; t++)
            y[t * ldy + r] = hsum8(_mm256_add_ps(acc[r][t][0], acc[r][t][1]));
}

#define TILE(nr, nt)                                                                               \
    tile_f(type, y + t * ldy + r, ldy, (const uint8_t *)w + (size_t)r * w_row_bytes, w_row_bytes,  \
           (const float *)x + (size_t)t * xrow, xrow, K, nr, nt)

INLINE void matmul_f(pl_type type, PL_AVX2_MATMUL_ARGS)
{
    const size_t xrow = x_row_bytes / sizeof(float);
    if (T == 1) { /* decode streams one row at a time: interleaved rows measured slower */
        const int64_t t = 0;
        for (int64_t r = r0; r < r1; r++) TILE(1, 1);
        return;
    }
    int64_t r = r0;
    for (; r + 2 <= r1; r += 2) {
        int64_t t = 0;
        for (; t + 3 <= T; t += 3) TILE(2, 3);
        if (T - t == 2) TILE(2, 2);
        if (T - t == 1) TILE(2, 1);
    }
    if (r < r1) {
        int64_t t = 0;
        for (; t + 3 <= T; t += 3) TILE(1, 3);
        if (T - t == 2) TILE(1, 2);
        if (T - t == 1) TILE(1, 1);
    }
}

void matmul_f32_avx2(PL_AVX2_MATMUL_ARGS)
{
    matmul_f(PL_TYPE_F32, y, ldy, w, w_row_bytes, x, x_row_bytes, K, r0, r1, T);
}

void matmul_f16_avx2(PL_AVX2_MATMUL_ARGS)
{
    matmul_f(PL_TYPE_F16, y, ldy, w, w_row_bytes, x, x_row_bytes, K, r0, r1, T);
}

void matmul_bf16_avx2(PL_AVX2_MATMUL_ARGS)
{
    matmul_f(PL_TYPE_BF16, y, ldy, w, w_row_bytes, x, x_row_bytes, K, r0, r1, T);
}
