/* matmul_f.c — avx512 matmul of F32, F16 and BF16 weights against f32 activations (FMA).
 * Not ref: the sum over k runs in 4 x 16 lanes, then a fixed tree.
 *
 * Order, the same for every (r, t): chunk c of 16 elements (the last one zero-padded by a
 * masked load) goes into accumulator c % 4 as one fma, c ascending; then (a0 + a1) + (a2 + a3),
 * and the 16 lanes are summed by halving (8 + 8, 4 + 4, 2 + 2, 1 + 1). F16 and BF16 widen
 * exactly. Decode runs a row's chunks in order (4 independent chains, one stream); a tile
 * of RB rows x TT tokens runs accumulator by accumulator (each weight vector widened once
 * for TT tokens, each activation vector loaded once for RB rows): which outputs are computed
 * together changes, the order inside one does not, so a token's row is the same bits at any T.
 * Bound: ref's gamma(K) (c = 1.01): every product is rounded at most once (fused with its
 * add) and no term passes through more than K - 1 additions with a nonzero operand. */
#include <immintrin.h>
#include <string.h>

#include "avx512.h"

#define RB     4 /* rows per register tile */
#define TT     6 /* tokens per register tile */
#define RBLOCK 64
#ifndef DR
#define DR 2
#endif /* rows whose weights stay in L2 while every token tile passes */
#define INLINE static inline __attribute__((always_inline))
#ifndef PREFETCH_BYTES
#define PREFETCH_BYTES 2048
#endif

INLINE float hsum16(__m512 v)
{
    __m256 a = _mm256_add_ps(_mm512_castps512_ps256(v),
                             _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    b = _mm_add_ps(b, _mm_movehl_ps(b, b));
    b = _mm_add_ss(b, _mm_movehdup_ps(b));
    return _mm_cvtss_f32(b);
}

/* 16 weights from element k, widened to f32; m masks the valid ones (rest 0). */
INLINE __m512 load_w(pl_type type, const void *w, int64_t k, __mmask16 m)
{
    switch (type) {
    case PL_TYPE_F16:
        return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const pl_f16 *)w + k));
    case PL_TYPE_BF16: {
        const __m256i h = _mm256_maskz_loadu_epi16(m, (const pl_bf16 *)w + k);
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
    default:
        return _mm512_maskz_loadu_ps(m, (const float *)w + k);
    }
}

/* acc[i][t] += w_i[k..k+16) * x_t[k..k+16) lane by lane (m: the valid elements). */
INLINE void tile_step(pl_type type, __m512 acc[RB][TT], const uint8_t *restrict w, size_t wrb,
                      const float *restrict x, size_t xrow, int64_t k, __mmask16 m, const int nr,
                      const int nt)
{
    __m512 xv[TT];
#pragma GCC unroll 8
    for (int t = 0; t < nt; t++) xv[t] = _mm512_maskz_loadu_ps(m, x + (size_t)t * xrow + k);
#pragma GCC unroll 8
    for (int i = 0; i < nr; i++) {
        const __m512 wv = load_w(type, w + (size_t)i * wrb, k, m);
#pragma GCC unroll 8
        for (int t = 0; t < nt; t++) acc[i][t] = _mm512_fmadd_ps(wv, xv[t], acc[i][t]);
    }
}

/* nr rows (wrb bytes apart) x nt tokens (xrow floats apart); constants at every call.
 * Accumulator by accumulator: pass a takes chunks a, a + 4, a + 8, ... in order, the
 * GEMV's accumulator a; a tile holds nr x nt accumulators instead of 4 x nr x nt. */
INLINE void tile_f(pl_type type, float *restrict y, int64_t ldy, const uint8_t *restrict w,
                   size_t wrb, const float *restrict x, size_t xrow, int64_t K, const int nr,
                   const int nt)
{
    const int64_t nfull = K / 16;
    __m512 part[4][RB][TT];
    for (int a = 0; a < 4; a++) {
        __m512 acc[RB][TT];
#pragma GCC unroll 8
        for (int i = 0; i < nr; i++)
#pragma GCC unroll 8
            for (int t = 0; t < nt; t++) acc[i][t] = _mm512_setzero_ps();
        for (int64_t c = a; c < nfull; c += 4)
            tile_step(type, acc, w, wrb, x, xrow, 16 * c, 0xffff, nr, nt);
        if (K > 16 * nfull && nfull % 4 == a) /* the masked last chunk */
            tile_step(type, acc, w, wrb, x, xrow, 16 * nfull,
                      (__mmask16)((1u << (K - 16 * nfull)) - 1), nr, nt);
#pragma GCC unroll 8
        for (int i = 0; i < nr; i++)
#pragma GCC unroll 8
            for (int t = 0; t < nt; t++) part[a][i][t] = acc[i][t];
    }
    for (int t = 0; t < nt; t++)
        for (int i = 0; i < nr; i++)
            y[t * ldy + i] = hsum16(_mm512_add_ps(_mm512_add_ps(part[0][i][t], part[1][i][t]),
                                                  _mm512_add_ps(part[2][i][t], part[3][i][t])));
}

/* One row against one token (decode): chunks in order into 4 accumulators, so the row
 * streams through memory once with 4 independent chains. */
INLINE float gemv_row(pl_type type, const void *restrict w, const float *restrict x, int64_t K)
{
    __m512 acc[4];
    for (int a = 0; a < 4; a++) acc[a] = _mm512_setzero_ps();
    const int64_t full = K / 64 * 64;
    const size_t eb = type == PL_TYPE_F32 ? 4 : 2;
    for (int64_t k = 0; k < full; k += 64) {
        /* Decode streams the rows from memory: ask for the lines PREFETCH_BYTES ahead (into the
         * next rows past the end: they are next), more misses in flight than the streamer keeps. */
        const char *ahead = (const char *)w + (size_t)k * eb + PREFETCH_BYTES;
        if (PREFETCH_BYTES > 0)
            for (size_t b = 0; b < 64 * eb; b += 64) _mm_prefetch(ahead + b, _MM_HINT_T0);
        for (int a = 0; a < 4; a++)
            acc[a] = _mm512_fmadd_ps(load_w(type, w, k + 16 * a, 0xffff),
                                     _mm512_loadu_ps(x + k + 16 * a), acc[a]);
    }
    /* the rest: up to 3 full chunks and a masked one, into accumulators 0, 1, 2, 3 */
    for (int a = 0; a < 4; a++) {
        const int64_t k = full + 16 * a;
        if (k >= K) break;
        const __mmask16 m = K - k >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (K - k)) - 1);
        acc[a] = _mm512_fmadd_ps(load_w(type, w, k, m), _mm512_maskz_loadu_ps(m, x + k), acc[a]);
    }
    return hsum16(_mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
}

/* rows [r, r + nr) x tokens [t, t + nt), nr <= RB, nt <= TT, as constant tile shapes */
INLINE void tile_any(pl_type type, float *restrict y, int64_t ldy, const uint8_t *restrict w,
                     size_t wrb, const float *restrict x, size_t xrow, int64_t K, int nr, int nt)
{
#define NT_CASES(R)                                                                                \
    switch (nt) {                                                                                  \
    case 1:                                                                                        \
        tile_f(type, y, ldy, w, wrb, x, xrow, K, R, 1);                                            \
        break;                                                                                     \
    case 2:                                                                                        \
        tile_f(type, y, ldy, w, wrb, x, xrow, K, R, 2);                                            \
        break;                                                                                     \
    case 3:                                                                                        \
        tile_f(type, y, ldy, w, wrb, x, xrow, K, R, 3);                                            \
        break;                                                                                     \
    case 4:                                                                                        \
        tile_f(type, y, ldy, w, wrb, x, xrow, K, R, 4);                                            \
        break;                                                                                     \
    case 5:                                                                                        \
        tile_f(type, y, ldy, w, wrb, x, xrow, K, R, 5);                                            \
        break;                                                                                     \
    default:                                                                                       \
        tile_f(type, y, ldy, w, wrb, x, xrow, K, R, TT);                                           \
        break;                                                                                     \
    }
    switch (nr) {
    case 1:
        NT_CASES(1);
        break;
    case 2:
        NT_CASES(2);
        break;
    case 3:
        NT_CASES(3);
        break;
    default:
        NT_CASES(RB);
        break;
    }
#undef NT_CASES
}

INLINE void matmul_f(pl_type type, PL_AVX512_MATMUL_ARGS)
{
    const size_t xrow = x_row_bytes / sizeof(float);
    const uint8_t *wb = (const uint8_t *)w;
    if (T == 1) { /* decode: row after row, the weights stream once */
        for (int64_t r = r0; r < r1; r++) y[r] = gemv_row(type, wb + (size_t)r * w_row_bytes, x, K);
        return;
    }
    for (int64_t rb = r0; rb < r1; rb += RBLOCK) {
        const int64_t re = r1 - rb < RBLOCK ? r1 : rb + RBLOCK;
        for (int64_t t = 0; t < T; t += TT) {
            const int nt = T - t < TT ? (int)(T - t) : TT;
            const float *xt = (const float *)x + (size_t)t * xrow;
            for (int64_t r = rb; r < re; r += RB) {
                const int nr = re - r < RB ? (int)(re - r) : RB;
                tile_any(type, y + t * ldy + r, ldy, wb + (size_t)r * w_row_bytes, w_row_bytes, xt,
                         xrow, K, nr, nt);
            }
        }
    }
}

void matmul_f32_avx512(PL_AVX512_MATMUL_ARGS)
{
    matmul_f(PL_TYPE_F32, y, ldy, w, w_row_bytes, x, x_row_bytes, K, r0, r1, T);
}

void matmul_f16_avx512(PL_AVX512_MATMUL_ARGS)
{
    matmul_f(PL_TYPE_F16, y, ldy, w, w_row_bytes, x, x_row_bytes, K, r0, r1, T);
}

void matmul_bf16_avx512(PL_AVX512_MATMUL_ARGS)
{
    matmul_f(PL_TYPE_BF16, y, ldy, w, w_row_bytes, x, x_row_bytes, K, r0, r1, T);
}

/* ---- the float types' "repacked" layout: the same rows, copied -------------------------
 * Not interleaved: a float row already feeds 16 lanes per load. The copy exists for where it
 * lives: the engine's repack arena is 2 MiB-aligned and advised as huge pages, so decode
 * streams the weights with ~500 TLB misses instead of one per 4 KiB page of the mapping.
 * Rows are packed K * element bytes apart; the matmul is this file's, so bit-identical. */

static size_t elem_bytes(pl_type t)
{
    return t == PL_TYPE_F32 ? 4 : 2;
}

static void copy_rows(pl_type t, void *restrict dst, const void *restrict src, size_t srb,
                      int64_t K, int64_t R)
{
    const size_t rb = (size_t)K * elem_bytes(t);
    for (int64_t r = 0; r < R; r++)
        memcpy((uint8_t *)dst + (size_t)r * rb, (const uint8_t *)src + (size_t)r * srb, rb);
}

#define COPY_REPACK(tname, TYPE)                                                                   \
    static size_t size_##tname(int64_t K, int64_t R)                                               \
    {                                                                                              \
        return (size_t)K * (size_t)R * elem_bytes(TYPE);                                           \
    }                                                                                              \
    static void pack_##tname(void *restrict dst, const void *restrict src, size_t srb, int64_t K,  \
                             int64_t R)                                                            \
    {                                                                                              \
        copy_rows(TYPE, dst, src, srb, K, R);                                                      \
    }                                                                                              \
    static void packed_##tname(PL_AVX512_MATMUL_ARGS)                                              \
    {                                                                                              \
        (void)w_row_bytes;                                                                         \
        matmul_f(TYPE, y, ldy, w, (size_t)K *elem_bytes(TYPE), x, x_row_bytes, K, r0, r1, T);      \
    }                                                                                              \
    const pl_repack pl_repack_##tname##_avx512 = {size_##tname, pack_##tname, packed_##tname,      \
                                                  NULL, NULL};

COPY_REPACK(f32, PL_TYPE_F32)
COPY_REPACK(f16, PL_TYPE_F16)
COPY_REPACK(bf16, PL_TYPE_BF16)
