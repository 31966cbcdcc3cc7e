/* repack.c — the avx2 set's repacked layout for the 32-block types (Q4_0, Q4_1, Q5_0, Q5_1,
 * Q8_0), its prepared activations and its matmul: 8 rows interleaved, so that the 8 lanes of
 * a 256-bit vector are 8 rows of one block and a block's dot needs no horizontal sum. Not a
 * new format: every block's bytes are a permutation of ggml's.
 *
 * Weights, per group of 8 rows, per block b (past the last row, zero rows), a unit of 8 ggml
 * blocks' bytes; lane r is row r:
 *   d[8] f16, [m[8] f16 for Q4_1/Q5_1], [H[32] for Q5_0/Q5_1], quants
 *   Q4/Q5: 4 x 32 bytes; bytes 4r..4r+3 of vector k are row r's qs[4k..4k+3]: low nibbles
 *          elements 4k.. (chunk k), high nibbles elements 16 + 4k.. (chunk 4 + k).
 *   Q5: bit c of H[4r + e] is row r's fifth bit of element 4c + e (chunk c, c < 8).
 *   Q8_0: 16 x 16 bytes; bytes 2r, 2r + 1 of chunk c are row r's qs[2c], qs[2c + 1].
 * Prepared activations (x_prep, once per row per matmul call): per block the 32 quants (Q8_0:
 * widened to int16), then per block the offset correction (offset x the block's sum), the
 * block sum as a float (the min term) and the scale as a float.
 *
 * Integer dots, exact for every byte value (no maddubs saturation, no sign_epi8):
 * - Q4/Q5: maddubs(u, x), u <= 15 or 31 unsigned against int8 x broadcast 4 bytes at a time,
 *   a pair at most 2 * 15 * 128 = 3840 (Q4; 8 chunks summed in int16: 30720) or
 *   2 * 31 * 128 = 7936 (Q5; 4 chunks summed in int16: 31744, twice); madd by 1 into int32.
 *   The offset (8 or 16) comes back through the activation's block sum: isum = dot - corr.
 * - Q8_0: weights and activations widened to int16, madd (a pair at most 2^15) into int32.
 *
 * Bit-identical to matmul_q.c: the same exact integer block sums, the same float ops per
 * block, d = dw * dx and acc[b % 8] = fma(float(isum), d, acc[b % 8]) (then the min term
 * fma(float(xsum), mw * dx, acc) for Q4_1/Q5_1), and the same final tree
 * ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)) per row; here accumulator b % 8 of row r
 * is lane r of vector b % 8. matmul_q.c pads the last group with zero blocks, adding
 * fma(0, 0, acc): acc starts at +0 and never becomes -0 under round-to-nearest, so that add
 * leaves acc as it is and the missing blocks are simply skipped here. */
#include <immintrin.h>
#include <string.h>

#include "avx2.h"

#define G      8
#define INLINE static inline __attribute__((always_inline))

typedef struct layout {
    size_t block; /* ggml block bytes */
    size_t unit;  /* bytes of one block of 8 rows */
    size_t m_off; /* offset of m[8], or 0 */
    size_t h_off; /* offset of H[32], or 0 */
    size_t q_off; /* offset of the quants */
    size_t xq;    /* prepared quant bytes per activation block */
    int offset;   /* subtracted from unsigned quants: 8, 16, or 0 (with a min; Q8_0) */
} layout;

static layout layout_of(pl_type t)
{
    switch (t) {
    case PL_TYPE_Q4_0:
        return (layout){18, 144, 0, 0, 16, 32, 8};
    case PL_TYPE_Q4_1:
        return (layout){20, 160, 16, 0, 32, 32, 0};
    case PL_TYPE_Q5_0:
        return (layout){22, 176, 0, 16, 48, 32, 16};
    case PL_TYPE_Q5_1:
        return (layout){24, 192, 16, 32, 64, 32, 0};
    default: /* Q8_0 */
        return (layout){34, 272, 0, 0, 16, 64, 0};
    }
}

/* ---- pack ----------------------------------------------------------------------------- */

static const uint8_t *blk_qs(pl_type t, const uint8_t *b)
{
    switch (t) {
    case PL_TYPE_Q4_1:
        return b + 4;
    case PL_TYPE_Q5_0:
        return b + 6;
    case PL_TYPE_Q5_1:
        return b + 8;
    default: /* Q4_0, Q8_0 */
        return b + 2;
    }
}

static uint32_t blk_qh(pl_type t, const uint8_t *b)
{
    uint32_t h = 0;
    if (t == PL_TYPE_Q5_0) memcpy(&h, b + 2, 4);
    if (t == PL_TYPE_Q5_1) memcpy(&h, b + 4, 4);
    return h;
}

static void pack_32(pl_type t, uint8_t *restrict dst, const uint8_t *restrict src, size_t srb,
                    int64_t K, int64_t R)
{
    const layout L = layout_of(t);
    const int64_t nb = K / 32;
    static const uint8_t zero[34];
    for (int64_t g = 0; g < (R + G - 1) / G; g++)
        for (int64_t b = 0; b < nb; b++) {
            uint8_t *o = dst + ((size_t)g * (size_t)nb + (size_t)b) * L.unit;
            for (int r = 0; r < G; r++) {
                const int64_t row = g * G + r;
                const uint8_t *blk = row < R ? src + (size_t)row * srb + (size_t)b * L.block : zero;
                memcpy(o + 2 * r, blk, 2); /* d */
                if (L.m_off) memcpy(o + L.m_off + 2 * r, blk + 2, 2);
                const uint8_t *qs = blk_qs(t, blk);
                uint8_t *q = o + L.q_off;
                if (t == PL_TYPE_Q8_0) {
                    for (int c = 0; c < 16; c++) memcpy(q + 16 * c + 2 * r, qs + 2 * c, 2);
                    continue;
                }
                for (int k = 0; k < 4; k++) memcpy(q + 32 * k + 4 * r, qs + 4 * k, 4);
                if (L.h_off) {
                    const uint32_t qh = blk_qh(t, blk);
                    for (int e = 0; e < 4; e++) {
                        uint8_t h = 0;
                        for (int c = 0; c < 8; c++) h |= (uint8_t)((qh >> (4 * c + e) & 1u) << c);
                        o[L.h_off + 4 * r + e] = h;
                    }
                }
            }
        }
}

static size_t size_32(pl_type t, int64_t K, int64_t R)
{
    return (size_t)((R + G - 1) / G) * (size_t)(K / 32) * layout_of(t).unit;
}

/* ---- prepared activations --------------------------------------------------------------- */

/* A prepared row: nb x L.xq quant bytes, then per block int32 corr, float sx, float dx. */
typedef struct xrow {
    const uint8_t *q;
    const int32_t *corr;
    const float *sx, *dx;
} xrow;

static size_t xrow_bytes_(const layout *L, int64_t K)
{
    return (size_t)(K / 32) * (L->xq + 12);
}

static xrow xrow_at(const layout *L, const void *x, int64_t K)
{
    const size_t nb = (size_t)(K / 32);
    const uint8_t *b = x;
    return (xrow){b, (const int32_t *)(const void *)(b + L->xq * nb),
                  (const float *)(const void *)(b + (L->xq + 4) * nb),
                  (const float *)(const void *)(b + (L->xq + 8) * nb)};
}

static inline uint16_t ld16(const void *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static void prep_32(pl_type t, void *restrict dst, const void *restrict src, int64_t K)
{
    const layout L = layout_of(t);
    const int64_t nb = K / 32;
    const pl_block_q8_0 *xb = src;
    uint8_t *q = dst;
    int32_t *corr = (int32_t *)(void *)(q + L.xq * (size_t)nb);
    float *sx = (float *)(void *)(q + (L.xq + 4) * (size_t)nb);
    float *dx = (float *)(void *)(q + (L.xq + 8) * (size_t)nb);
    for (int64_t b = 0; b < nb; b++) {
        int32_t s = 0;
        for (int i = 0; i < 32; i++) s += xb[b].qs[i];
        if (t == PL_TYPE_Q8_0) {
            int16_t w[32];
            for (int i = 0; i < 32; i++) w[i] = xb[b].qs[i];
            memcpy(q + 64 * b, w, sizeof w);
        } else {
            memcpy(q + 32 * b, xb[b].qs, 32);
        }
        corr[b] = L.offset * s;
        sx[b] = (float)s;
        dx[b] = _cvtsh_ss(ld16(&xb[b].d));
    }
}

/* ---- matmul --------------------------------------------------------------------------- */

INLINE __m256i bcast4(const void *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm256_set1_epi32(v);
}

INLINE __m256 f16x8(const uint8_t *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

/* Chunk c (< 8) of a Q4/Q5 unit's weights, unsigned, fifth bits merged. */
INLINE __m256i wchunk(const layout *L, const uint8_t *restrict o, int c)
{
    const __m256i v = _mm256_loadu_si256((const __m256i *)(o + L->q_off + 32 * (c % 4)));
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256i u = c < 4 ? _mm256_and_si256(v, m4) : _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
    if (L->h_off) {
        /* bit c of each H byte to bit 4; shifts within 16-bit units never carry a
         * neighbouring byte's bit into bit 4 (shift counts <= 4) */
        const __m256i h = _mm256_loadu_si256((const __m256i *)(o + L->h_off));
        const __m256i s = c <= 4 ? _mm256_slli_epi16(h, 4 - c) : _mm256_srli_epi16(h, c - 4);
        u = _mm256_or_si256(u, _mm256_and_si256(s, _mm256_set1_epi8(0x10)));
    }
    return u;
}

/* The block's integer dots for n tokens, is[k] (lane r: row r), corrections applied. */
INLINE void block_dots(pl_type t, const layout *L, const uint8_t *restrict o, const xrow *x,
                       int64_t b, const int n, __m256i *is)
{
    if (t == PL_TYPE_Q8_0) {
        for (int k = 0; k < n; k++) is[k] = _mm256_setzero_si256();
        for (int c = 0; c < 16; c++) {
            const __m256i w = _mm256_cvtepi8_epi16(
                _mm_loadu_si128((const __m128i *)(o + L->q_off + 16 * (size_t)c)));
            for (int k = 0; k < n; k++)
                is[k] = _mm256_add_epi32(
                    is[k], _mm256_madd_epi16(w, bcast4(x[k].q + 64 * b + 4 * (size_t)c)));
        }
        return;
    }
    const __m256i one = _mm256_set1_epi16(1);
    const int half = L->h_off ? 4 : 8; /* chunks summed in int16 */
    for (int k = 0; k < n; k++) is[k] = _mm256_setzero_si256();
    for (int c0 = 0; c0 < 8; c0 += half) {
        __m256i s[6];
        for (int k = 0; k < n; k++) s[k] = _mm256_setzero_si256();
        for (int c = c0; c < c0 + half; c++) {
            const __m256i w = wchunk(L, o, c);
            for (int k = 0; k < n; k++)
                s[k] = _mm256_add_epi16(
                    s[k], _mm256_maddubs_epi16(w, bcast4(x[k].q + 32 * b + 4 * (size_t)c)));
        }
        for (int k = 0; k < n; k++) is[k] = _mm256_add_epi32(is[k], _mm256_madd_epi16(s[k], one));
    }
    if (L->offset)
        for (int k = 0; k < n; k++)
            is[k] = _mm256_sub_epi32(is[k], _mm256_set1_epi32(x[k].corr[b]));
}

/* acc + block b's float terms for one token (matmul_q.c's ops, lane by lane). */
INLINE __m256 block_term(const layout *L, __m256i is, __m256 dw, __m256 mw, const xrow *x,
                         int64_t b, __m256 acc)
{
    const __m256 dx = _mm256_set1_ps(x->dx[b]);
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is), _mm256_mul_ps(dw, dx), acc);
    if (L->m_off) acc = _mm256_fmadd_ps(_mm256_set1_ps(x->sx[b]), _mm256_mul_ps(mw, dx), acc);
    return acc;
}

/* The fixed tree per row from the 8 accumulators, rows [lo, hi) stored. */
INLINE void finish(const __m256 a[8], float *restrict y, int64_t lo, int64_t hi)
{
    const __m256 s =
        _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a[0], a[4]), _mm256_add_ps(a[2], a[6])),
                      _mm256_add_ps(_mm256_add_ps(a[1], a[5]), _mm256_add_ps(a[3], a[7])));
    if (lo == 0 && hi == G) {
        _mm256_storeu_ps(y, s);
        return;
    }
    float v[G];
    _mm256_storeu_ps(v, s);
    for (int64_t r = lo; r < hi; r++) y[r] = v[r];
}

INLINE __m256 unit_gemv(pl_type t, const layout *L, const uint8_t *restrict o, const xrow *x,
                        int64_t b, __m256 acc)
{
    /* the hardware prefetcher alone leaves interleaved rows latency-bound */
    for (size_t c = 0; c < L->unit; c += 64)
        _mm_prefetch((const char *)o + 8 * L->unit + c, _MM_HINT_T0);
    __m256i is;
    block_dots(t, L, o, x, b, 1, &is);
    const __m256 dw = f16x8(o), mw = L->m_off ? f16x8(o + L->m_off) : dw;
    return block_term(L, is, dw, mw, x, b, acc);
}

/* One token (decode): blocks in order, so the weights stream through memory once. */
INLINE void gemv(pl_type t, const layout *L, const uint8_t *restrict base, int64_t nb,
                 const xrow *x, float *restrict y, int64_t lo, int64_t hi)
{
    __m256 acc[8];
    for (int i = 0; i < 8; i++) acc[i] = _mm256_setzero_ps();
    int64_t b = 0;
    for (; b + 8 <= nb; b += 8)
        for (int i = 0; i < 8; i++)
            acc[i] = unit_gemv(t, L, base + (size_t)(b + i) * L->unit, x, b + i, acc[i]);
    for (int i = 0; b + i < nb; i++)
        acc[i] = unit_gemv(t, L, base + (size_t)(b + i) * L->unit, x, b + i, acc[i]);
    finish(acc, y, lo, hi);
}

/* Tokens per register tile. */
#define NT 6

/* A tile of n <= NT tokens x one group of 8 rows, accumulator by accumulator: pass j holds
 * accumulator j of each token and takes blocks j, j + 8, j + 16, ... in increasing order, so
 * each accumulator sees its blocks in the GEMV's order; each weight chunk is loaded and
 * expanded once for the n tokens. */
INLINE void tile(pl_type t, const layout *L, const uint8_t *restrict base, int64_t nb,
                 const xrow *x, const int n, float *restrict y, int64_t ldy, int64_t lo, int64_t hi)
{
    __m256 part[8][NT];
    for (int j = 0; j < 8; j++) {
        __m256 acc[NT];
        for (int k = 0; k < n; k++) acc[k] = _mm256_setzero_ps();
        for (int64_t b = j; b < nb; b += 8) {
            const uint8_t *o = base + (size_t)b * L->unit;
            __m256i is[NT];
            block_dots(t, L, o, x, b, n, is);
            const __m256 dw = f16x8(o), mw = L->m_off ? f16x8(o + L->m_off) : dw;
            for (int k = 0; k < n; k++) acc[k] = block_term(L, is[k], dw, mw, &x[k], b, acc[k]);
        }
        for (int k = 0; k < n; k++) part[j][k] = acc[k];
    }
    for (int k = 0; k < n; k++) {
        const __m256 a[8] = {part[0][k], part[1][k], part[2][k], part[3][k],
                             part[4][k], part[5][k], part[6][k], part[7][k]};
        finish(a, y + k * ldy, lo, hi);
    }
}

/* Prepared activation bytes per token block: a block sweeps the thread's row groups once
 * (their weights from L2 or memory), its activations staying in L2. */
#define XBLOCK_BYTES (384 * 1024)

INLINE void matmul_packed(pl_type t, PL_AVX2_MATMUL_ARGS)
{
    (void)w_row_bytes;
    const layout L = layout_of(t);
    const int64_t nb = K / 32;
    int64_t TB = (int64_t)(XBLOCK_BYTES / x_row_bytes) / NT * NT;
    if (TB < NT) TB = NT;
    for (int64_t t0 = 0; t0 < T; t0 += TB) {
        const int64_t tn = T - t0 < TB ? T - t0 : TB;
        for (int64_t g = r0 / G; g * G < r1; g++) {
            const uint8_t *base = (const uint8_t *)w + (size_t)g * (size_t)nb * L.unit;
            const int64_t lo = r0 > g * G ? r0 - g * G : 0, hi = r1 < (g + 1) * G ? r1 - g * G : G;
            float *yg = y + t0 * ldy + g * G;
            for (int64_t k0 = 0; k0 < tn; k0 += NT) {
                const int n = tn - k0 < NT ? (int)(tn - k0) : NT;
                xrow xr[NT];
                for (int k = 0; k < n; k++)
                    xr[k] =
                        xrow_at(&L, (const uint8_t *)x + (size_t)(t0 + k0 + k) * x_row_bytes, K);
                float *yt = yg + k0 * ldy;
                switch (n) { /* constant tile sizes: the compiler unrolls the token loops */
                case 1:
                    gemv(t, &L, base, nb, xr, yt, lo, hi);
                    break;
                case 2:
                    tile(t, &L, base, nb, xr, 2, yt, ldy, lo, hi);
                    break;
                case 3:
                    tile(t, &L, base, nb, xr, 3, yt, ldy, lo, hi);
                    break;
                case 4:
                    tile(t, &L, base, nb, xr, 4, yt, ldy, lo, hi);
                    break;
                case 5:
                    tile(t, &L, base, nb, xr, 5, yt, ldy, lo, hi);
                    break;
                default:
                    tile(t, &L, base, nb, xr, NT, yt, ldy, lo, hi);
                    break;
                }
            }
        }
    }
}

#define REPACK(tname, TYPE)                                                                        \
    static size_t size_##tname(int64_t K, int64_t R)                                               \
    {                                                                                              \
        return size_32(TYPE, K, R);                                                                \
    }                                                                                              \
    static void pack_##tname(void *restrict dst, const void *restrict src, size_t srb, int64_t K,  \
                             int64_t R)                                                            \
    {                                                                                              \
        pack_32(TYPE, dst, src, srb, K, R);                                                        \
    }                                                                                              \
    static size_t xrow_##tname(int64_t K)                                                          \
    {                                                                                              \
        const layout L = layout_of(TYPE);                                                          \
        return xrow_bytes_(&L, K);                                                                 \
    }                                                                                              \
    static void prep_##tname(void *restrict dst, const void *restrict src, int64_t K)              \
    {                                                                                              \
        prep_32(TYPE, dst, src, K);                                                                \
    }                                                                                              \
    static void matmul_##tname(PL_AVX2_MATMUL_ARGS)                                                \
    {                                                                                              \
        matmul_packed(TYPE, y, ldy, w, w_row_bytes, x, x_row_bytes, K, r0, r1, T);                 \
    }                                                                                              \
    const pl_repack pl_repack_##tname##_avx2 = {size_##tname, pack_##tname, matmul_##tname,        \
                                                xrow_##tname, prep_##tname};

REPACK(q4_0, PL_TYPE_Q4_0)
REPACK(q4_1, PL_TYPE_Q4_1)
REPACK(q5_0, PL_TYPE_Q5_0)
REPACK(q5_1, PL_TYPE_Q5_1)
REPACK(q8_0, PL_TYPE_Q8_0)
