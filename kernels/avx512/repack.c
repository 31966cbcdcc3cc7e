/* repack.c — the avx512 set's repacked layout for the 32-block types (Q4_0, Q4_1, Q5_0,
 * Q5_1, Q8_0) and its matmul: 8 rows interleaved so that a vector lane is a row.
 * Not a new format: every block's bytes are a permutation of ggml's (Q8_0 quants stored +128).
 *
 * Layout, per group of 8 rows, per block b (the same bytes as 8 ggml blocks):
 *   d[8] f16, [m[8] f16 for Q4_1/Q5_1], [hmask[8] u32 for Q5_0/Q5_1], quants
 *   Q4/Q5: 4 x 32 bytes; byte 4r + e of vector k is row r's qs[4k + e]: its low nibbles are
 *          elements 4k..4k+3 of the 8 rows, its high nibbles elements 16 + 4k...
 *   Q5: bit 4r + e of hmask[c] is the fifth bit of row r's element 4c + e (c < 8 chunks).
 *   Q8_0: 8 x 32 bytes; byte 4r + e of vector c is row r's qs[4c + e] + 128 (unsigned).
 * One vpdpbusd against 4 activation bytes broadcast then adds 4 products to each row's lane,
 * so a block's integer sum lands in its row's lane with no horizontal reduction.
 *
 * Bit-identical to matmul_q.c: the same exact integer block sums (offsets folded in through
 * the activation's block sum), the same float ops per block, d = dw * dx and
 * acc[b % 8] = fma(float(isum), d, acc[b % 8]) (then the min term for Q4_1/Q5_1), and the
 * same final tree ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)), lane by lane. */
#include <immintrin.h>
#include <string.h>

#include "avx512.h"

#define G      8
#define INLINE static inline __attribute__((always_inline))

typedef struct layout {
    size_t block; /* ggml block bytes */
    size_t group; /* bytes of one block of 8 rows (8 * block) */
    size_t m_off; /* offset of m[8], or 0 */
    size_t h_off; /* offset of hmask[8], or 0 */
    size_t q_off; /* offset of the quants */
    int offset;   /* subtracted from unsigned quants: 8, 16, 128 (Q8_0) or 0 (with a min) */
} layout;

static layout layout_of(pl_type t)
{
    switch (t) {
    case PL_TYPE_Q4_0:
        return (layout){18, 144, 0, 0, 16, 8};
    case PL_TYPE_Q4_1:
        return (layout){20, 160, 16, 0, 32, 0};
    case PL_TYPE_Q5_0:
        return (layout){22, 176, 0, 16, 48, 16};
    case PL_TYPE_Q5_1:
        return (layout){24, 192, 16, 32, 64, 0};
    default: /* Q8_0 */
        return (layout){34, 272, 0, 0, 16, 128};
    }
}

/* ---- pack ----------------------------------------------------------------------------- */

/* The quants and fifth bits of one ggml block (offsets of the fields inside it). */
static const uint8_t *blk_qs(pl_type t, const uint8_t *b)
{
    switch (t) {
    case PL_TYPE_Q4_0:
        return b + 2;
    case PL_TYPE_Q4_1:
        return b + 4;
    case PL_TYPE_Q5_0:
        return b + 6;
    case PL_TYPE_Q5_1:
        return b + 8;
    default:
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

static uint32_t ld32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static void pack_32(pl_type t, uint8_t *restrict dst, const uint8_t *restrict src, size_t srb,
                    int64_t K, int64_t R)
{
    const layout L = layout_of(t);
    const int64_t nb = K / 32;
    static const uint8_t zero[34];
    for (int64_t g = 0; g < (R + G - 1) / G; g++) {
        const uint8_t *rows[G];
        for (int r = 0; r < G; r++)
            rows[r] = g * G + r < R ? src + (size_t)(g * G + r) * srb : NULL;
        for (int64_t b = 0; b < nb; b++) {
            uint8_t *o = dst + ((size_t)g * (size_t)nb + (size_t)b) * L.group;
            uint32_t *q = (uint32_t *)(void *)(o + L.q_off), h[8] = {0};
            for (int r = 0; r < G; r++) {
                const uint8_t *blk = rows[r] ? rows[r] + (size_t)b * L.block : zero;
                memcpy(o + 2 * r, blk, 2); /* d */
                if (L.m_off) memcpy(o + L.m_off + 2 * r, blk + 2, 2);
                const uint8_t *qs = blk_qs(t, blk);
                if (t == PL_TYPE_Q8_0) {
                    for (int c = 0; c < 8; c++) q[8 * c + r] = ld32(qs + 4 * c) ^ 0x80808080u;
                    continue;
                }
                for (int k = 0; k < 4; k++) q[8 * k + r] = ld32(qs + 4 * k);
                if (L.h_off) {
                    const uint32_t qh = blk_qh(t, blk);
                    for (int c = 0; c < 8; c++) h[c] |= (qh >> (4 * c) & 0xfu) << (4 * r);
                }
            }
            if (L.h_off) memcpy(o + L.h_off, h, sizeof h);
        }
    }
}

static size_t size_32(pl_type t, int64_t K, int64_t R)
{
    return (size_t)((R + G - 1) / G) * (size_t)(K / 32) * layout_of(t).group;
}

/* ---- matmul --------------------------------------------------------------------------- */

static inline uint16_t ld16(const void *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline __m256i bcast4(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm256_set1_epi32(v);
}

/* sum of the 32 int8 of an activation block */
static inline int32_t xsum32(const int8_t *q)
{
    const __m256i u =
        _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)q), _mm256_set1_epi8((char)0x80));
    const __m256i s = _mm256_sad_epu8(u, _mm256_setzero_si256());
    const __m128i a = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    return (int32_t)(_mm_cvtsi128_si64(a) + _mm_extract_epi64(a, 1)) - 32 * 128;
}

/* The 8 rows' integer sums of one block against one activation block. */
INLINE __m256i isum_block(pl_type t, const layout *L, const uint8_t *restrict o,
                          const int8_t *restrict xq)
{
    __m256i s = _mm256_setzero_si256();
    if (t == PL_TYPE_Q8_0) {
        for (int c = 0; c < 8; c++)
            s = _mm256_dpbusd_epi32(s, _mm256_loadu_si256((const __m256i *)(o + L->q_off + 32 * c)),
                                    bcast4(xq + 4 * c));
        return s;
    }
    const __m256i m4 = _mm256_set1_epi8(0x0f), b5 = _mm256_set1_epi8(0x10);
    for (int k = 0; k < 4; k++) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(o + L->q_off + 32 * k));
        __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        if (L->h_off) {
            uint32_t ml, mh;
            memcpy(&ml, o + L->h_off + 4 * k, 4);
            memcpy(&mh, o + L->h_off + 4 * (k + 4), 4);
            lo = _mm256_or_si256(lo, _mm256_maskz_mov_epi8((__mmask32)ml, b5));
            hi = _mm256_or_si256(hi, _mm256_maskz_mov_epi8((__mmask32)mh, b5));
        }
        s = _mm256_dpbusd_epi32(s, lo, bcast4(xq + 4 * k));
        s = _mm256_dpbusd_epi32(s, hi, bcast4(xq + 16 + 4 * k));
    }
    return s;
}

/* acc[i] += block b0 + i's term, i < n (n = 8 but in a row's last group). */
INLINE void blocks(pl_type t, const layout *L, __m256 acc[G], const uint8_t *restrict o,
                   const pl_block_q8_0 *restrict xb, const int n)
{
    for (int i = 0; i < n; i++) {
        const uint8_t *oi = o + (size_t)i * L->group;
        const int32_t sx = xsum32(xb[i].qs);
        __m256i is = isum_block(t, L, oi, xb[i].qs);
        if (L->offset) is = _mm256_sub_epi32(is, _mm256_set1_epi32(L->offset * sx));
        const __m256 dx = _mm256_set1_ps(_cvtsh_ss(ld16(&xb[i].d)));
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)oi));
        acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is), _mm256_mul_ps(dw, dx), acc[i]);
        if (L->m_off) {
            const __m256 mw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(oi + L->m_off)));
            acc[i] = _mm256_fmadd_ps(_mm256_set1_ps((float)sx), _mm256_mul_ps(mw, dx), acc[i]);
        }
    }
}

/* One token (decode): each weight feeds dpbusd straight from memory. */
INLINE void gemv_packed(pl_type t, PL_AVX512_MATMUL_ARGS)
{
    (void)w_row_bytes;
    const layout L = layout_of(t);
    const int64_t nb = K / 32;
    for (int64_t g = r0 / G; g * G < r1; g++) {
        const uint8_t *base = (const uint8_t *)w + (size_t)g * (size_t)nb * L.group;
        const int64_t lo = r0 > g * G ? r0 - g * G : 0, hi = r1 < (g + 1) * G ? r1 - g * G : G;
        for (int64_t tk = 0; tk < T; tk++) {
            const pl_block_q8_0 *xb =
                (const pl_block_q8_0 *)((const uint8_t *)x + (size_t)tk * x_row_bytes);
            __m256 acc[G];
            for (int i = 0; i < G; i++) acc[i] = _mm256_setzero_ps();
            int64_t b = 0;
            for (; b + G <= nb; b += G) {
                /* the hardware prefetcher alone leaves interleaved rows latency-bound */
                const uint8_t *next = base + (size_t)(b + 2 * G) * L.group;
                for (size_t c = 0; c < G * L.group; c += 64)
                    _mm_prefetch((const char *)next + c, _MM_HINT_T0);
                blocks(t, &L, acc, base + (size_t)b * L.group, xb + b, G);
            }
            switch (nb - b) {
#define TAIL(n)                                                                                    \
    case n:                                                                                        \
        blocks(t, &L, acc, base + (size_t)b * L.group, xb + b, n);                                 \
        break;
                TAIL(1)
                TAIL(2)
                TAIL(3)
                TAIL(4)
                TAIL(5)
                TAIL(6) TAIL(7)
#undef TAIL
                    default : break;
            }
            const __m256 v = _mm256_add_ps(
                _mm256_add_ps(_mm256_add_ps(acc[0], acc[4]), _mm256_add_ps(acc[2], acc[6])),
                _mm256_add_ps(_mm256_add_ps(acc[1], acc[5]), _mm256_add_ps(acc[3], acc[7])));
            float out[G];
            _mm256_storeu_ps(out, v);
            for (int64_t r = lo; r < hi; r++) y[tk * ldy + g * G + r] = out[r];
        }
    }
}

/* ---- GEMM: tiles of tokens ------------------------------------------------------------ */

/* What a block's float term needs from the activation side, computed once per token block
 * per call instead of once per row group: the offset correction (offset * block sum), the
 * block sum as a float (Q4_1/Q5_1's min term) and the scale as a float. */
typedef struct xinfo {
    int32_t *corr;
    float *sx, *dx;
} xinfo;

/* Tokens per register tile, and the stack budget of the per-call activation tables. */
#define NT     6
#define XBYTES (48 * 1024)

static void xinfo_fill(const layout *L, xinfo *xi, const uint8_t *x, size_t x_row_bytes, int64_t nb,
                       int64_t n)
{
    for (int64_t k = 0; k < n; k++) {
        const pl_block_q8_0 *xb = (const pl_block_q8_0 *)(x + (size_t)k * x_row_bytes);
        for (int64_t b = 0; b < nb; b++) {
            const int32_t s = xsum32(xb[b].qs);
            xi->corr[k * nb + b] = L->offset * s;
            xi->sx[k * nb + b] = (float)s;
            xi->dx[k * nb + b] = _cvtsh_ss(ld16(&xb[b].d));
        }
    }
}

/* acc[k] += block o's term for the tile's n tokens (block index b in each token's row). */
INLINE void tile_block(pl_type t, const layout *L, const uint8_t *restrict o,
                       const pl_block_q8_0 *const *xb, const xinfo *xi, int64_t nb, int64_t b,
                       const int n, __m256 acc[NT])
{
    __m256i is[NT];
    for (int k = 0; k < n; k++) is[k] = _mm256_setzero_si256();
    if (t == PL_TYPE_Q8_0) {
        for (int c = 0; c < 8; c++) {
            const __m256i w = _mm256_loadu_si256((const __m256i *)(o + L->q_off + 32 * c));
            for (int k = 0; k < n; k++)
                is[k] = _mm256_dpbusd_epi32(is[k], w, bcast4(xb[k][b].qs + 4 * c));
        }
    } else {
        const __m256i m4 = _mm256_set1_epi8(0x0f), b5 = _mm256_set1_epi8(0x10);
        for (int c = 0; c < 4; c++) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)(o + L->q_off + 32 * c));
            __m256i lo = _mm256_and_si256(v, m4),
                    hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
            if (L->h_off) {
                uint32_t ml, mh;
                memcpy(&ml, o + L->h_off + 4 * c, 4);
                memcpy(&mh, o + L->h_off + 4 * (c + 4), 4);
                lo = _mm256_or_si256(lo, _mm256_maskz_mov_epi8((__mmask32)ml, b5));
                hi = _mm256_or_si256(hi, _mm256_maskz_mov_epi8((__mmask32)mh, b5));
            }
            for (int k = 0; k < n; k++) {
                is[k] = _mm256_dpbusd_epi32(is[k], lo, bcast4(xb[k][b].qs + 4 * c));
                is[k] = _mm256_dpbusd_epi32(is[k], hi, bcast4(xb[k][b].qs + 16 + 4 * c));
            }
        }
    }
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)o));
    const __m256 mw =
        L->m_off ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(o + L->m_off))) : dw;
    for (int k = 0; k < n; k++) {
        const int64_t i = k * nb + b;
        __m256i s = is[k];
        if (L->offset) s = _mm256_sub_epi32(s, _mm256_set1_epi32(xi->corr[i]));
        const __m256 dx = _mm256_set1_ps(xi->dx[i]);
        acc[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(dw, dx), acc[k]);
        if (L->m_off)
            acc[k] = _mm256_fmadd_ps(_mm256_set1_ps(xi->sx[i]), _mm256_mul_ps(mw, dx), acc[k]);
    }
}

/* The GEMM over a tile of n <= NT tokens for one group of 8 rows, accumulator by
 * accumulator. Per output element the order of the sum is the GEMV's: accumulator i takes
 * the terms of blocks i, i + 8, i + 16, ... in increasing order with the same float ops, then
 * the same tree. Here each accumulator is finished before the next starts (two at a time,
 * for independent chains), so a tile holds 2 x n accumulators instead of 8 x n and n can be
 * 6: each weight vector is loaded and expanded once for 6 tokens. A token's row is the same
 * bits at any T. */
INLINE void tile(pl_type t, const layout *L, const uint8_t *restrict base, int64_t nb,
                 const pl_block_q8_0 *const *xb, const xinfo *xi, const int n, float out[NT][G])
{
    __m256 part[G][NT];
    for (int i = 0; i < G; i += 2) {
        __m256 a0[NT], a1[NT];
        for (int k = 0; k < n; k++) a0[k] = a1[k] = _mm256_setzero_ps();
        for (int64_t b = i; b < nb; b += G) {
            tile_block(t, L, base + (size_t)b * L->group, xb, xi, nb, b, n, a0);
            if (b + 1 < nb)
                tile_block(t, L, base + (size_t)(b + 1) * L->group, xb, xi, nb, b + 1, n, a1);
        }
        for (int k = 0; k < n; k++) {
            part[i][k] = a0[k];
            part[i + 1][k] = a1[k];
        }
    }
    for (int k = 0; k < n; k++) {
        const __m256 v = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(part[0][k], part[4][k]),
                                                     _mm256_add_ps(part[2][k], part[6][k])),
                                       _mm256_add_ps(_mm256_add_ps(part[1][k], part[5][k]),
                                                     _mm256_add_ps(part[3][k], part[7][k])));
        _mm256_storeu_ps(out[k], v);
    }
}

INLINE void matmul_packed(pl_type t, PL_AVX512_MATMUL_ARGS)
{
    if (T == 1) {
        gemv_packed(t, y, ldy, w, w_row_bytes, x, x_row_bytes, K, r0, r1, T);
        return;
    }
    (void)w_row_bytes;
    const layout L = layout_of(t);
    const int64_t nb = K / 32;
    /* Token blocks of up to TB tokens whose activation tables fit the stack budget; each
     * block sweeps the thread's row groups once. */
    int64_t TB = XBYTES / (12 * nb);
    if (TB > NT) TB -= TB % NT;
    if (TB < 1) { /* a row too long for one token's tables: the GEMV, token by token */
        gemv_packed(t, y, ldy, w, w_row_bytes, x, x_row_bytes, K, r0, r1, T);
        return;
    }
    int32_t tab[XBYTES / 4];
    xinfo xi = {tab, (float *)(void *)(tab + TB * nb), (float *)(void *)(tab + 2 * TB * nb)};
    for (int64_t t0 = 0; t0 < T; t0 += TB) {
        const int64_t tn = T - t0 < TB ? T - t0 : TB;
        const uint8_t *xt = (const uint8_t *)x + (size_t)t0 * x_row_bytes;
        xinfo_fill(&L, &xi, xt, x_row_bytes, nb, tn);
        for (int64_t g = r0 / G; g * G < r1; g++) {
            const uint8_t *base = (const uint8_t *)w + (size_t)g * (size_t)nb * L.group;
            const int64_t lo = r0 > g * G ? r0 - g * G : 0, hi = r1 < (g + 1) * G ? r1 - g * G : G;
            for (int64_t k0 = 0; k0 < tn; k0 += NT) {
                const int n = tn - k0 < NT ? (int)(tn - k0) : NT;
                const pl_block_q8_0 *xb[NT];
                for (int k = 0; k < n; k++)
                    xb[k] = (const pl_block_q8_0 *)(xt + (size_t)(k0 + k) * x_row_bytes);
                const xinfo xk = {xi.corr + k0 * nb, xi.sx + k0 * nb, xi.dx + k0 * nb};
                float out[NT][G];
                switch (n) { /* constant tile sizes: the compiler unrolls the token loops */
#define TILE(c)                                                                                    \
    case c:                                                                                        \
        tile(t, &L, base, nb, xb, &xk, c, out);                                                    \
        break;
                    TILE(1)
                    TILE(2) TILE(3) TILE(4) TILE(5) default
                        : tile(t, &L, base, nb, xb, &xk, NT, out);
#undef TILE
                }
                for (int k = 0; k < n; k++)
                    for (int64_t r = lo; r < hi; r++)
                        y[(t0 + k0 + k) * ldy + g * G + r] = out[k][r];
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
    static void matmul_##tname(PL_AVX512_MATMUL_ARGS)                                              \
    {                                                                                              \
        matmul_packed(TYPE, y, ldy, w, w_row_bytes, x, x_row_bytes, K, r0, r1, T);                 \
    }                                                                                              \
    const pl_repack pl_repack_##tname##_avx512 = {size_##tname, pack_##tname, matmul_##tname};

REPACK(q4_0, PL_TYPE_Q4_0)
REPACK(q4_1, PL_TYPE_Q4_1)
REPACK(q5_0, PL_TYPE_Q5_0)
REPACK(q5_1, PL_TYPE_Q5_1)
REPACK(q8_0, PL_TYPE_Q8_0)
